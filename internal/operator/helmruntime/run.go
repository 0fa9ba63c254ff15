package helmruntime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/cachefilter"
	"github.com/acme/platform-operator/internal/operator/helmconfig"
	"github.com/acme/platform-operator/internal/operator/managersetup"
	"github.com/acme/platform-operator/internal/operator/postrender"
	"github.com/acme/platform-operator/internal/operator/readycontroller"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/releaseidentity"
	"github.com/acme/platform-operator/internal/operator/rollout"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// Run runs the operator until ctx is done: it loads the watches file named
// by opts and runs one manager with a Helm reconciler per entry. When the
// manager stops on its own (a lost leader lease, say) a new one is built
// and started (see managersetup.Supervise).
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	log := opts.logger()

	f, err := watchconfig.Load(opts.WatchesFile, watchconfig.OSEnv())
	if err != nil {
		return err
	}
	if len(f.Watches) == 0 {
		log.Info("Watches file has no entries; nothing will be reconciled", "watchesFile", opts.WatchesFile)
	}
	for _, msg := range f.Ignored {
		log.Info("Warning: watches file: "+msg, "watchesFile", opts.WatchesFile)
	}
	rt, err := newRuntime(opts, f.Watches, ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	rt.drifts = f.Drifts
	rt.images = f.Images
	rt.confinements = f.Confinements
	rt.remediation = f.Remediations
	rt.serviceAccounts = f.ServiceAccounts
	rt.postRenders = f.PostRenders
	rt.crdPolicies = f.CRDPolicies
	rt.versions = f.Versions
	rt.rollouts = f.Rollouts
	return managersetup.Supervise(ctx, cfg, rt.manager(cfg), log)
}

// runtimeState is the state of one operator process. Run builds it once; the
// managers the supervisor builds one after the other share it.
type runtimeState struct {
	opts    Options
	watches []watches.Watch
	// drifts are the drift policies of the watches, in their order.
	drifts []watchconfig.Drift
	// images are the image defaults of the watches, in their order.
	images [][]release.ImageDefault
	// confinements are the allowances of the watches, in their order.
	confinements []release.Confinement
	// remediation are the remediations of the watches, in their order.
	remediation []watchconfig.Remediation
	// serviceAccounts are the identities of the watches' releases, in
	// their order ("": the operator's own).
	serviceAccounts []string
	// postRenders are the post-render patches of the watches, in their
	// order (nil: none).
	postRenders []*postrender.Renderer
	// crdPolicies are the CRD policies of the watches, in their order.
	crdPolicies []watchconfig.CRDPolicy
	// versions are the chart versions the watches ship, and rollouts how
	// their releases move to a new default, in their order.
	versions []watchconfig.ChartVersions
	rollouts []rollout.Policy
	// managedIdentity is the ServiceAccount the runtime creates for the
	// releases of namespaced kinds that nothing else names one for
	// (Options.ReleaseIdentity); nil: the operator's own rights.
	managedIdentity *releaseidentity.Managed
	log             logr.Logger
	// activity outlives each manager, so that an action of a stopped
	// manager that still runs stays protected from unlocking.
	activity *actionpath.Activity
	// dryRuns counts the library's dry-run upgrades (actionpath/digest.go).
	dryRuns *prometheus.CounterVec
	// remediations counts remediations by kind and action (remediation.go).
	remediations *prometheus.CounterVec
	// rolloutMetrics are the gauges of the kinds' chart rollouts (rollout.go).
	rolloutMetrics rolloutMetrics
	// readyStates counts releases by readiness (readycontroller.States).
	readyStates *readycontroller.States
	// shardID is the shard of this process (shard.ID), recorded on every
	// revision it stores.
	shardID string
	// staleAfter and hookTimeout bound what the action path waits for
	// (actionpath/pending.go, helmconfig/interruptible.go).
	staleAfter  time.Duration
	hookTimeout time.Duration
}

// newRuntime builds the runtime's state and registers its metrics with reg.
func newRuntime(opts Options, ws []watches.Watch, reg prometheus.Registerer) (*runtimeState, error) {
	dryRuns := actionpath.NewDryRunCounter()
	if err := reg.Register(dryRuns); err != nil {
		// A second runtime in one process (tests) counts on the first's.
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
		dryRuns = already.ExistingCollector.(*prometheus.CounterVec)
	}
	remediations := readycontroller.NewRemediationMetric()
	if err := reg.Register(remediations); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
		remediations = already.ExistingCollector.(*prometheus.CounterVec)
	}
	states := readycontroller.NewStates()
	if err := reg.Register(states); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
		states = already.ExistingCollector.(*readycontroller.States)
	}
	rm := newRolloutMetrics()
	for _, g := range []**prometheus.GaugeVec{&rm.releases, &rm.wave, &rm.halted} {
		if err := reg.Register(*g); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return nil, fmt.Errorf("register metrics: %w", err)
			}
			*g = already.ExistingCollector.(*prometheus.GaugeVec)
		}
	}
	return &runtimeState{
		rolloutMetrics:  rm,
		managedIdentity: opts.ReleaseIdentity.Managed(),
		readyStates:     states,
		remediations:    remediations,
		opts:            opts,
		watches:         ws,
		log:             opts.logger(),
		activity:        actionpath.NewActivity(clock.RealClock{}),
		shardID:         managersetup.ShardID(opts.Shard()),
		dryRuns:         dryRuns,
		staleAfter:      actionpath.DefaultStalePendingTimeout,
		hookTimeout:     helmconfig.DefaultHookTimeout,
	}, nil
}

// manager returns the function that builds and sets up the run-th manager.
func (rt *runtimeState) manager(cfg *rest.Config) func(run int) (ctrl.Manager, error) {
	return func(run int) (ctrl.Manager, error) {
		statuses := cachefilter.NewStatuses()
		mo := ManagerOptions(rt.opts, rt.watches, statuses)
		if run > 0 { // the controllers of the stopped manager keep their names
			mo.Controller.SkipNameValidation = ptr.To(true)
		}
		mgr, err := managersetup.New(cfg, mo)
		if err != nil {
			return nil, err
		}
		if err := rt.setupManager(mgr, statuses); err != nil {
			return mgr, err
		}
		rt.log.Info("Manager set up",
			"watchesFile", rt.opts.WatchesFile,
			"watches", len(rt.watches),
			"watchNamespaces", describeNamespaces(rt.opts.WatchNamespaces),
			"releaseNamespace", rt.opts.ReleaseNamespace,
			"releaseServiceAccount", describeIdentity(rt.opts.ReleaseIdentity),
			"shardSelector", describeShard(rt.opts.Shard()),
			"leaderElect", rt.opts.LeaderElect,
			"leaderElectionID", mo.LeaderElectionID,
			"metricsBindAddress", rt.opts.MetricsBindAddress,
			"metricsSecure", rt.opts.MetricsSecure,
			"healthProbeBindAddress", rt.opts.HealthProbeBindAddress,
			"run", run,
		)
		return mgr, nil
	}
}

// setupManager registers one Helm reconciler per watches.yaml entry with
// mgr, and notes in the release activity when mgr becomes the leader. Each
// entry is resolved against the operator-wide defaults (see watchconfig.Resolve)
// and its scope is looked up through the manager's RESTMapper, so the CRD
// of every kind must already be installed.
func (rt *runtimeState) setupManager(mgr ctrl.Manager, statuses *cachefilter.Statuses) error {
	resolved, err := watchconfig.ResolveAll(rt.watches, rt.opts.WatchDefaults())
	if err != nil {
		return err
	}
	if err := watchconfig.SetImageDefaults(resolved, rt.images); err != nil {
		return err
	}
	watchconfig.SetConfinement(resolved, rt.confinements)
	watchconfig.SetRemediation(resolved, rt.remediation)
	watchconfig.SetServiceAccountNames(resolved, rt.serviceAccounts)
	watchconfig.SetPostRender(resolved, rt.postRenders)
	watchconfig.SetCRDPolicies(resolved, rt.crdPolicies)
	watchconfig.SetVersions(resolved, rt.versions, rt.rollouts)
	// A leader-election runnable: it starts when mgr leads.
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		rt.activity.Elected()
		<-ctx.Done()
		return nil
	}))
	if err != nil {
		return fmt.Errorf("register leader election observer: %w", err)
	}
	records, err := newRecordIndex(context.Background(), mgr)
	if err != nil {
		return err
	}
	for i, rw := range resolved {
		if i < len(rt.drifts) {
			rw.Drift = rt.drifts[i]
		}
		if err := rt.setupKind(mgr, rw, records, statuses); err != nil {
			return err
		}
	}
	return nil
}

// describeShard renders the shard selector for logs.
func describeShard(sel labels.Selector) string {
	if sel.Empty() {
		return "<all>"
	}
	return sel.String()
}

// describeNamespaces renders the watched namespaces for logs.
func describeNamespaces(namespaces []string) any {
	if len(namespaces) == 0 {
		return "all"
	}
	return namespaces
}

// describeIdentity says what the releases of namespaced kinds are applied
// as, for the log.
func describeIdentity(o releaseidentity.Options) string {
	if o.ServiceAccount == "" {
		return "<the operator's own rights>"
	}
	return o.ServiceAccount + " (bound to " + o.DeployerRole + ")"
}

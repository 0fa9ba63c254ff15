package helmruntime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// A Helm action first stores its new revision as pending-install,
// pending-upgrade or pending-rollback and marks it deployed or failed when
// it ends. A process killed in between (kill -9, OOM, node loss), or an
// action whose final write the API server did not take (an outage), leaves
// the revision pending for good, and Helm then refuses every later action on
// the release with "another operation (install/upgrade/rollback) is in
// progress". helm-operator-plugins does not recover from that; the runtime
// does, deliberately:
//
//   - Only the leader unlocks: the check runs inside the reconcile, and the
//     library's controllers run only on the elected leader.
//   - A pending revision is stale when no action of this process is running
//     on the release and one of these holds: it was started before this
//     process became the leader (whoever started it has lost the lease, so
//     it cannot finish it); it was started by an action of this process that
//     has returned (Helm could not record the outcome); or it is older than
//     the stale-pending timeout (a third party, say a person running helm,
//     that never finished).
//   - Unlocking marks the stale revision failed, as a person would with
//     `helm rollback` or Flux's helm-controller does: no objects are touched
//     and the values stored with the release (including generated ones) are
//     kept. The same reconcile then goes on as for any failed release: the
//     library upgrades it to the current spec, and if that upgrade fails it
//     rolls back to the last deployed revision.
//   - The unlock is reported as a Warning Event (reason
//     PendingReleaseUnlocked), a log line, and the Recovered condition of the
//     custom resource, whose message says which revision was left in which
//     state since when, and why it was judged stale.

const (
	// DefaultStalePendingTimeout is how old a pending revision that this
	// process knows nothing about must be before it is unlocked. It is
	// longer than DefaultHookTimeout, so that an action started by a
	// healthy third party has ended by then.
	DefaultStalePendingTimeout = 10 * time.Minute

	// ConditionRecovered is the condition type the runtime adds to a custom
	// resource whose release it unlocked. It stays as the record of the last
	// recovery; the library's conditions describe the release itself.
	ConditionRecovered = "Recovered"
	// ReasonPendingReleaseUnlocked is the reason of the Recovered condition
	// and of the Warning Event emitted when a stale pending release is
	// unlocked.
	ReasonPendingReleaseUnlocked = "PendingReleaseUnlocked"
)

// Why a pending revision was judged stale.
const (
	staleBeforeLeadership = "it was started before this process became the leader, so the process that started it no longer holds the leader lease"
	staleOwnActionEnded   = "the action of this process that started it has returned without recording its outcome"
	staleTimeout          = "it is older than the stale-pending timeout and no action of this process is running on it"
)

// releaseActivity tracks, per release ("namespace/name"), the Helm actions
// this process runs, and since when the process leads. It is shared by the
// reconcilers of every kind, since two kinds may store releases in the same
// namespace.
type releaseActivity struct {
	clock clock.PassiveClock

	mu          sync.Mutex
	leaderSince time.Time
	inFlight    map[string]int
	// finished holds the start and end of the last action of this process
	// that may have written a pending revision.
	finished map[string]actionSpan
}

type actionSpan struct{ start, end time.Time }

func newReleaseActivity(c clock.PassiveClock) *releaseActivity {
	return &releaseActivity{clock: c, inFlight: map[string]int{}, finished: map[string]actionSpan{}}
}

// elected records that this process became the leader now (again, after
// a lost lease: whatever was started before then and is not running here
// has no live author).
func (a *releaseActivity) elected() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.leaderSince = a.clock.Now()
}

// begin records the start of an action on key and returns the function
// that records its end.
func (a *releaseActivity) begin(key string) (end func()) {
	a.mu.Lock()
	a.inFlight[key]++
	start := a.clock.Now()
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.inFlight[key]--; a.inFlight[key] <= 0 {
			delete(a.inFlight, key)
		}
		a.finished[key] = actionSpan{start: start, end: a.clock.Now()}
	}
}

// staleness reports whether a pending revision of key stored at started is
// stale, and why (see the package comment above). A reconcile only runs on
// the leader, so the first call also marks the leadership start when the
// election callback has not run yet.
func (a *releaseActivity) staleness(key string, started time.Time, timeout time.Duration) (reason string, stale bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	if a.leaderSince.IsZero() {
		a.leaderSince = now
	}
	if a.inFlight[key] > 0 {
		return "", false
	}
	if started.Before(a.leaderSince) {
		return staleBeforeLeadership, true
	}
	if span, ok := a.finished[key]; ok && !started.Before(span.start) && !started.After(span.end) {
		return staleOwnActionEnded, true
	}
	if now.Sub(started) > timeout {
		return staleTimeout, true
	}
	return "", false
}

// pendingRecovery unlocks stale pending releases (see above). One value is
// shared by the reconcilers of all kinds.
type pendingRecovery struct {
	activity *releaseActivity
	client   client.Client
	timeout  time.Duration
	// hookTimeout bounds hook waits the library leaves unbounded.
	hookTimeout time.Duration
	log         logr.Logger
}

// processActivity is the release activity of this process, shared by
// every manager it runs one after the other (see runManagers), so that an
// action of a stopped manager that still runs stays protected.
var processActivity = newReleaseActivity(clock.RealClock{})

func newPendingRecovery(c client.Client, activity *releaseActivity, log logr.Logger) *pendingRecovery {
	return &pendingRecovery{
		activity:    activity,
		client:      c,
		timeout:     DefaultStalePendingTimeout,
		hookTimeout: DefaultHookTimeout,
		log:         log,
	}
}

// wrap returns acg with pending-release recovery, action tracking and
// interruptible waits. recorder is the event recorder of the kind's
// controller.
func (p *pendingRecovery) wrap(acg helmclient.ActionClientGetter, nsFor helmclient.ObjectToStringMapper, recorder record.EventRecorder, kind string) helmclient.ActionClientGetter {
	return &recoveringActionClientGetter{inner: acg, rec: p, nsFor: nsFor, recorder: recorder, log: p.log.WithValues("kind", kind)}
}

// recoveringActionClientGetter is the outermost action client getter of a
// kind: before the library looks at a release it unlocks it when it is
// stale, and the clients it returns record the actions they run and stop
// waiting when the reconcile's context ends (see interruptibleKubeClient).
type recoveringActionClientGetter struct {
	inner    helmclient.ActionClientGetter
	rec      *pendingRecovery
	nsFor    helmclient.ObjectToStringMapper
	recorder record.EventRecorder
	log      logr.Logger
}

var _ helmclient.ActionClientGetter = (*recoveringActionClientGetter)(nil)

// ActionClientFor returns the action client of obj, after unlocking its
// release if it is stuck in a pending state.
func (g *recoveringActionClientGetter) ActionClientFor(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
	ns, err := g.nsFor(obj)
	if err != nil {
		return nil, fmt.Errorf("map release namespace: %w", err)
	}
	ac, err := g.inner.ActionClientFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	if cfg := ac.Config(); cfg != nil {
		cfg.KubeClient = interruptible(ctx, cfg.KubeClient, g.rec.hookTimeout)
	}
	key := ns + "/" + obj.GetName()
	if err := g.unlockIfStale(ctx, ac, obj, key); err != nil {
		return nil, err
	}
	return &trackingActionClient{ActionInterface: ac, key: key, activity: g.rec.activity, obj: obj, recorder: g.recorder}, nil
}

// unlockIfStale marks the latest revision of obj's release failed when it
// is pending and stale, and reports it.
func (g *recoveringActionClientGetter) unlockIfStale(ctx context.Context, ac helmclient.ActionInterface, obj client.Object, key string) error {
	cfg := ac.Config()
	if cfg == nil || cfg.Releases == nil {
		return nil
	}
	name := obj.GetName()
	// Through the action client: the release client below it remembers
	// this read for the rest of the reconcile (see digestActionClient.Get).
	last, err := ac.Get(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read release %s: %w", key, err)
	}
	if last.Info == nil || !last.Info.Status.IsPending() {
		return nil
	}
	log := g.log.WithValues("release", key, "version", last.Version, "status", string(last.Info.Status))
	started := last.Info.LastDeployed.Time
	why, stale := g.rec.activity.staleness(key, started, g.rec.timeout)
	if !stale {
		log.Info("Release is pending and may still be in progress; not unlocking it yet",
			"since", started.UTC().Format(time.RFC3339), "staleAfter", g.rec.timeout.String())
		return nil
	}

	pendingStatus := last.Info.Status
	msg := fmt.Sprintf("revision %d of release %s was left %s since %s (%s ago): %s; marked it failed, so that the release is upgraded to the current spec (or rolled back to its last deployed revision if that upgrade fails)",
		last.Version, key, pendingStatus, started.UTC().Format(time.RFC3339),
		g.rec.activity.clock.Since(started).Round(time.Second), why)
	unlocked := *last
	info := *last.Info
	unlocked.Info = &info
	unlocked.SetStatus(release.StatusFailed, "Unlocked by the operator: "+msg)
	if err := cfg.Releases.Update(&unlocked); err != nil {
		return fmt.Errorf("unlock release %s left %s: %w", key, pendingStatus, err)
	}
	if f, ok := ac.(interface{ forget() }); ok {
		f.forget() // the remembered release is still the pending one
	}
	log.Info("Unlocked a stale pending release", "reason", why)
	g.recorder.Event(obj, corev1.EventTypeWarning, ReasonPendingReleaseUnlocked, "Unlocked: "+msg)
	if err := g.setRecoveredCondition(ctx, obj, msg); err != nil {
		// The Event and the release record tell the story already.
		log.Info("Could not set the Recovered condition", "error", err.Error())
	}
	return nil
}

// setRecoveredCondition sets the Recovered condition on obj with a status
// patch. obj is the library's copy of the custom resource; the patch
// refreshes it, so the library's own status update later keeps the
// condition and does not conflict.
func (g *recoveringActionClientGetter) setRecoveredCondition(ctx context.Context, obj client.Object, msg string) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected custom resource type %T", obj)
	}
	base := u.DeepCopy()
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	cond := map[string]interface{}{
		"type":               ConditionRecovered,
		"status":             string(metav1.ConditionTrue),
		"reason":             ReasonPendingReleaseUnlocked,
		"message":            msg,
		"lastTransitionTime": g.rec.activity.clock.Now().UTC().Format(time.RFC3339),
	}
	replaced := false
	for i, c := range conds {
		if m, ok := c.(map[string]interface{}); ok && m["type"] == ConditionRecovered {
			conds[i], replaced = cond, true
		}
	}
	if !replaced {
		conds = append(conds, cond)
	}
	if err := unstructured.SetNestedSlice(u.Object, conds, "status", "conditions"); err != nil {
		return err
	}
	return g.rec.client.Status().Patch(ctx, u, client.MergeFrom(base))
}

// trackingActionClient records the actions that may write a release
// revision, so that recovery never unlocks a release this process is
// working on. It also reports failed actions as Warning Events on the
// custom resource (the library only sets conditions; refusals of the
// ownership layer are reported by that layer), and says in the
// error of a failed upgrade that the library rolled the release back.
type trackingActionClient struct {
	helmclient.ActionInterface
	key      string
	activity *releaseActivity
	obj      client.Object
	recorder record.EventRecorder
}

// Reasons of the Warning Events of failed actions.
const (
	ReasonInstallFailed       = "InstallFailed"
	ReasonUpgradeFailed       = "UpgradeFailed"
	ReasonUpgradeDryRunFailed = "UpgradeDryRunFailed"
	ReasonUninstallFailed     = "UninstallFailed"
)

// Install installs the release, tracked.
func (c *trackingActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	end := c.activity.begin(c.key)
	rel, err := c.ActionInterface.Install(name, namespace, chrt, vals, opts...)
	end()
	if err != nil && !refusedByOwnership(err) {
		c.recorder.Eventf(c.obj, corev1.EventTypeWarning, ReasonInstallFailed, "Install of release %s failed (retried with backoff): %v", c.key, err)
	}
	return rel, err
}

// Upgrade upgrades the release, tracked unless it is a dry run.
func (c *trackingActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	dry, err := isDryRun(opts)
	if err != nil {
		return nil, err
	}
	if dry {
		rel, err := c.ActionInterface.Upgrade(name, namespace, chrt, vals, opts...)
		if err != nil && !refusedByOwnership(err) {
			c.recorder.Eventf(c.obj, corev1.EventTypeWarning, ReasonUpgradeDryRunFailed, "Rendering release %s for the current spec failed (retried with backoff): %v", c.key, err)
		}
		return rel, err
	}
	before := c.lastVersion(name)
	end := c.activity.begin(c.key)
	rel, err := c.ActionInterface.Upgrade(name, namespace, chrt, vals, opts...)
	end()
	if err != nil && !refusedByOwnership(err) {
		err = c.describeRollback(name, before, err)
		c.recorder.Eventf(c.obj, corev1.EventTypeWarning, ReasonUpgradeFailed, "Upgrade of release %s failed (retried with backoff): %v", c.key, err)
	}
	return rel, err
}

// describeRollback adds to the error of a failed upgrade that the library
// rolled the release back (it does so when Helm recorded the failed
// revision), and to which revision.
// before is the latest revision before the upgrade: a failed upgrade
// stores before+1, its rollback before+2.
func (c *trackingActionClient) describeRollback(name string, before int, err error) error {
	cfg := c.Config()
	if cfg == nil || cfg.Releases == nil {
		return err
	}
	last, lerr := cfg.Releases.Last(name)
	if lerr != nil || last.Info == nil || last.Version < before+2 ||
		last.Info.Status != release.StatusDeployed || !strings.HasPrefix(last.Info.Description, "Rollback to ") {
		return err
	}
	return fmt.Errorf("%w; rolled back to the last deployed revision (%s, now revision %d), which keeps serving", err, last.Info.Description, last.Version)
}

// lastVersion returns the latest stored revision of name, 0 when unknown.
func (c *trackingActionClient) lastVersion(name string) int {
	cfg := c.Config()
	if cfg == nil || cfg.Releases == nil {
		return 0
	}
	last, err := cfg.Releases.Last(name)
	if err != nil {
		return 0
	}
	return last.Version
}

// Uninstall uninstalls the release, tracked.
func (c *trackingActionClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	end := c.activity.begin(c.key)
	resp, err := c.ActionInterface.Uninstall(name, opts...)
	end()
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		c.recorder.Eventf(c.obj, corev1.EventTypeWarning, ReasonUninstallFailed, "Uninstall of release %s failed (retried with backoff): %v", c.key, err)
	}
	return resp, err
}

// recoveries holds the pendingRecovery of each manager, shared by the
// reconcilers of all its kinds.
var recoveries sync.Map // ctrl.Manager -> *pendingRecovery

// withPendingRecovery returns acg, the action client getter of kind, with
// stale pending releases unlocked, actions tracked and waits interruptible
// (see pendingRecovery). The manager's first call creates the shared
// recovery state and registers the runnable that notes when the manager
// becomes the leader.
func withPendingRecovery(mgr ctrl.Manager, acg helmclient.ActionClientGetter, nsFor helmclient.ObjectToStringMapper, kind string, log logr.Logger) (helmclient.ActionClientGetter, error) {
	fresh := newPendingRecovery(mgr.GetClient(), processActivity, log.WithName("pending-recovery"))
	v, loaded := recoveries.LoadOrStore(mgr, fresh)
	p := v.(*pendingRecovery)
	if !loaded {
		// Runnables that do not opt out run only on the elected leader.
		err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			p.activity.elected()
			<-ctx.Done()
			return nil
		}))
		if err != nil {
			return nil, fmt.Errorf("register leader election observer: %w", err)
		}
	}
	// The library names its controller, and its event recorder, this way.
	recorder := mgr.GetEventRecorderFor(fmt.Sprintf("%s-controller", strings.ToLower(kind)))
	return p.wrap(acg, nsFor, recorder, kind), nil
}

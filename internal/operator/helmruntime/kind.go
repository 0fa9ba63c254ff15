package helmruntime

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/operator-framework/helm-operator-plugins/pkg/annotation"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/cachefilter"
	"github.com/acme/platform-operator/internal/operator/helmconfig"
	"github.com/acme/platform-operator/internal/operator/readycontroller"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/rollout"
	"github.com/acme/platform-operator/internal/operator/valuesschema"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// kindRuntime is one watches.yaml entry on one manager: the reconciler of
// one kind and the controllers beside it.
type kindRuntime struct {
	rt            *runtimeState
	watch         watchconfig.ResolvedWatch
	clusterScoped bool
	// nsFor picks the namespace of a resource's Helm release.
	nsFor helmclient.ObjectToStringMapper
	// recorder records Events as the library's controller does.
	recorder record.EventRecorder
	log      logr.Logger
	// ready judges the releases and writes Ready (package readycontroller).
	ready *readycontroller.Tracker
	// remediate wakes the kind's reconciler for a rollback the readiness
	// controller decided, or for the chart's tests (remediation.go).
	remediate chan event.GenericEvent
	// testResults carries the outcomes of chart tests from the action
	// path to the readiness controller.
	testResults *actionpath.TestResults
	// gate says which releases the kind's rollout lets move to the default
	// chart version; rolloutWake wakes the reconciler for those it admits
	// (rollout.go).
	gate        *rollout.Gate
	rolloutWake chan event.GenericEvent
	// statuses holds the whole statuses of the resources the cache holds
	// (cachedresource.go).
	statuses *cachefilter.Statuses
}

// wakeReconciler asks the kind's reconciler to reconcile key.
func (k *kindRuntime) wakeReconciler(key types.NamespacedName) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.watch.GVK)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	select {
	case k.remediate <- event.GenericEvent{Object: u}:
	default: // full: the readiness controller asks again at its next judgement
	}
}

// remediationWatch makes the reconciler reconcile what wakeReconciler
// and the rollout controller send.
func (k *kindRuntime) remediationWatch(c reconciler.ControllerSetup) error {
	if err := c.Watch(source.Channel(k.remediate, &handler.EnqueueRequestForObject{})); err != nil {
		return err
	}
	return c.Watch(source.Channel(k.rolloutWake, &handler.EnqueueRequestForObject{}))
}

// setupKind builds the reconciler of one resolved watch and adds it to
// mgr; its release storage reads the records records names by name.
func (rt *runtimeState) setupKind(mgr ctrl.Manager, rw watchconfig.ResolvedWatch, records *recordIndex, statuses *cachefilter.Statuses) error {
	clusterScoped, err := watchconfig.IsClusterScoped(mgr.GetRESTMapper(), rw.GVK)
	if err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	// The library names its controller, and its event recorder, this way.
	controllerName := fmt.Sprintf("%s-controller", strings.ToLower(rw.GVK.Kind))
	k := &kindRuntime{
		rt:            rt,
		watch:         rw,
		clusterScoped: clusterScoped,
		nsFor:         watchconfig.ReleaseNamespaceMapper(clusterScoped, rt.opts.ReleaseNamespace),
		recorder:      mgr.GetEventRecorderFor(controllerName),
		log:           rt.log.WithValues("kind", rw.GVK.Kind),
		remediate:     make(chan event.GenericEvent, 1024),
		testResults:   actionpath.NewTestResults(),
		gate:          &rollout.Gate{},
		rolloutWake:   make(chan event.GenericEvent, 1024),
		statuses:      statuses,
	}
	k.ready = readycontroller.New(readycontroller.Config{
		GVK: rw.GVK, ClusterScoped: clusterScoped, Concurrency: rw.MaxConcurrentReconciles,
		ReleaseNamespace: k.nsFor, Activity: rt.activity, Writer: k.shardClient(mgr),
		Recorder: k.recorder, Log: k.log,
		Remediation: rw.Remediation, Remediations: rt.remediations,
		WakeReconciler: k.wakeReconciler, TestResults: k.testResults,
	}, mgr)
	k.testResults.OnResult = k.ready.JudgeAgain
	if err := k.ready.Setup(mgr); err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	rt.readyStates.Track(rw.GVK.Kind, k.ready)
	caps := helmconfig.NewCapabilities(helmconfig.CapabilitiesMaxAge)
	// The upgrades' writes of the kind's objects, which its watches do not
	// reconcile again for (package cachefilter).
	updates := &helmconfig.Updates{}
	identity := releaseIdentity{namespaces: mgr.GetClient(), kindDefault: rw.ServiceAccountName, writer: mgr.GetClient()}
	if !clusterScoped {
		identity.managed = rt.managedIdentity
	}
	base, err := helmconfig.NewActionClientGetter(helmconfig.Config{
		REST: mgr.GetConfig(), Mapper: mgr.GetRESTMapper(), ReleaseNamespace: k.nsFor,
		Capabilities: caps, HookTimeout: rt.hookTimeout, Updates: updates,
		Records:           records,
		OwnRecords:        records.ownRecords(),
		ServiceAccountFor: identity.serviceAccountFor,
		NamespaceDeleting: identity.namespaceDeleting,
		Cached:            k.fromCache(mgr.GetCache()),
	})
	if err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	acg := actionpath.New(base, actionpath.Kind{
		Kind:             rw.GVK.Kind,
		Log:              k.log,
		Recorder:         k.recorder,
		Status:           newNotingWrites(mgr.GetClient(), k.statuses, rw.GVK),
		APIReader:        mgr.GetAPIReader(),
		ReleaseNamespace: k.nsFor,
		Activity:         rt.activity,
		Charts:           &release.ChartDigests{},
		DryRuns:          rt.dryRuns,
		Capabilities:     caps,
		ShardID:          rt.shardID,
		StaleAfter:       rt.staleAfter,
		Drift:            rw.Drift,
		Confinement:      rw.Confinement,
		PostRender:       rw.PostRender,
		Remediation:      rw.Remediation,
		TestResults:      k.testResults,
		CRDs:             rw.CRDs,
		Versions:         &actionpath.ChartVersions{Versions: rw.Versions, Gate: k.gate},
		Schemas:          valuesschema.New(0, k.log),
	})
	opts, err := k.reconcilerOptions(mgr, acg)
	if err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	r, err := reconciler.New(opts...)
	if err != nil {
		return fmt.Errorf("create reconciler for %s: %w", rw.GVK, err)
	}
	// The library's own watch of the kind skips updates that ask for no
	// work (package cachefilter).
	if err := r.SetupWithManager(cachefilter.WithPrimaryEventFilter(mgr, rw.GVK, updates)); err != nil {
		return fmt.Errorf("set up reconciler for %s: %w", rw.GVK, err)
	}
	if err := k.setupRollout(mgr); err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	if err := forgetDeleted(context.Background(), mgr.GetCache(), statuses, rw.GVK); err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	k.logConfigured()
	return nil
}

// libraryRecorder is the event recorder of the library's reconciler: the
// kind's, masking override values when the options ask so.
func (k *kindRuntime) libraryRecorder() record.EventRecorder {
	if k.rt.opts.SuppressOverrideValues {
		return maskedOverrides{k.recorder}
	}
	return k.recorder
}

// reconcilerOptions maps the resolved watch onto the library's reconciler
// options, with the runtime's additions:
//   - jittered per-resource resyncs (resync.go);
//   - a resource refused for another's release retries when that release
//     goes (refusals.go);
//   - the reconciler's client reads only the shard's resources
//     (shardfilter.go), from the cache with their whole status
//     (cachedresource.go), and its status writes carry Ready, the refusal
//     reasons of the ownership layer and no Secret value
//     (statusclient.go); adding the library's finalizer drops
//     operator-sdk's (sdkcompat.go);
//   - a spec's values are computed as the admission check computes them:
//     values the chart declares as generated are generated once and then
//     kept for the life of the release, image blocks a spec leaves unset
//     run the operator's default images (values.go);
//   - a change of a Secret or ConfigMap a resource's valuesFrom names
//     reconciles the resource (valuesfrom.go);
//   - kept objects (helm.sh/resource-policy: keep) are watched, so that
//     their drift is repaired at once (keepwatch.go);
//   - every status write says which generation it describes and carries
//     Ready, which a readiness controller keeps current (package readycontroller);
//   - PauseAnnotation pauses a resource, but not its deletion (pause.go);
//     the library's install, upgrade and uninstall annotations set the
//     options of those actions.
func (k *kindRuntime) reconcilerOptions(mgr ctrl.Manager, acg helmclient.ActionClientGetter) ([]reconciler.Option, error) {
	rw := k.watch
	opts := []reconciler.Option{
		reconciler.WithGroupVersionKind(rw.GVK),
		reconciler.WithChart(*rw.Chart),
		reconciler.WithOverrideValues(rw.OverrideValues),
		reconciler.WithSelector(rw.Selector),
		// The option says "skip", the watches field says "watch".
		reconciler.SkipDependentWatches(!rw.WatchDependentResources),
		reconciler.WithReconcilePeriod(rw.ReconcilePeriod),
		reconciler.WithMaxConcurrentReconciles(rw.MaxConcurrentReconciles),
		reconciler.WithMaxReleaseHistory(rw.MaxReleaseHistory),
		reconciler.WithActionClientGetter(acg),
		reconciler.WithPauseReconcileHandler(pauseHandler()),
		// helm.sdk.operatorframework.io/{install,upgrade,uninstall}-description,
		// -disable-hooks and upgrade-force, as operator-sdk's Helm operator.
		reconciler.WithInstallAnnotations(annotation.DefaultInstallAnnotations...),
		reconciler.WithUpgradeAnnotations(annotation.DefaultUpgradeAnnotations...),
		reconciler.WithUninstallAnnotations(annotation.DefaultUninstallAnnotations...),
		// The reconciler adds the kind and the object's key to every line.
		reconciler.WithLog(k.rt.log.WithName("reconciler")),
		reconciler.WithEventRecorder(k.libraryRecorder()),
	}
	resync, err := resyncOptions(mgr.GetCache(), rw, k.recorder)
	if err != nil {
		return nil, err
	}
	opts = append(opts, resync...)
	opts = append(opts,
		reconciler.WithControllerSetupFunc(releaseDeletionWatch(mgr.GetCache(), rw.GVK, k.clusterScoped, k.rt.opts.ReleaseNamespace)),
		reconciler.WithClient(withStatusEdits(takingOverFinalizers{k.libraryClient(mgr)}, k.ready.StampStatus, refusalReasons, redactSecrets)),
		reconciler.WithPostHook(k.ready),
		reconciler.WithControllerSetupFunc(k.remediationWatch),
	)
	vals, err := rw.Values()
	if err != nil {
		return nil, err
	}
	// The post hook records the translation's Events once a release keeps
	// its values.
	translator := newValuesTranslator(vals, k.nsFor, mgr.GetClient(), mgr.GetAPIReader(), k.recorder, k.log.WithName("values"))
	opts = append(opts, reconciler.WithValueTranslator(translator), reconciler.WithPostHook(translator))
	// A resource of a namespaced kind may take values from Secrets and
	// ConfigMaps of its namespace (valuesfrom.go).
	if !k.clusterScoped {
		watch, err := k.valuesFromWatch(mgr)
		if err != nil {
			return nil, err
		}
		opts = append(opts, watch)
	}
	if rw.WatchDependentResources {
		w := newKeptObjectWatcher(mgr.GetCache(), rw.GVK.GroupKind())
		opts = append(opts, reconciler.WithControllerSetupFunc(w.setController), reconciler.WithPostHook(w))
	}
	return opts, nil
}

// shardClient is the manager's client, reading the custom resources of
// this process's shard only (shardfilter.go) and noting its writes of them
// (cachedresource.go).
func (k *kindRuntime) shardClient(mgr ctrl.Manager) client.Client {
	gr := schema.GroupResource{Group: k.watch.GVK.Group, Resource: k.watch.GVK.Kind}
	if m, err := mgr.GetRESTMapper().RESTMapping(k.watch.GVK.GroupKind(), k.watch.GVK.Version); err == nil {
		gr = m.Resource.GroupResource()
	}
	return newNotingWrites(newShardFilter(mgr.GetClient(), k.rt.opts.Shard(), gr), k.statuses, k.watch.GVK)
}

// libraryClient is the client the library reads its resources with: the
// shard's, answered from the cache with their whole status
// (cachedresource.go).
func (k *kindRuntime) libraryClient(mgr ctrl.Manager) client.Client {
	return newCachedResource(k.shardClient(mgr), mgr.GetCache(), k.statuses, k.watch.GVK)
}

// logConfigured logs the resolved configuration of the kind.
func (k *kindRuntime) logConfigured() {
	rw := k.watch
	kv := []any{
		"group", rw.GVK.Group, "version", rw.GVK.Version, "kind", rw.GVK.Kind,
		"chart", rw.ChartPath,
		"clusterScoped", k.clusterScoped,
		"watchDependentResources", rw.WatchDependentResources,
		"reconcilePeriod", rw.ReconcilePeriod.String(),
		"maxConcurrentReconciles", rw.MaxConcurrentReconciles,
		"maxReleaseHistory", rw.MaxReleaseHistory,
		"overrideValues", len(rw.OverrideValues),
		"imageDefaults", describeImageDefaults(rw.ImageDefaults),
		"driftMode", string(rw.Drift.Mode), "driftIgnoreRules", len(rw.Drift.Ignore),
		"selector", describeSelector(rw.Selector),
		"crds", string(rw.CRDs),
		"postRender", rw.PostRender != nil,
		"chartVersion", rw.Versions.Default,
		"chartVersions", rw.Versions.Shipped(),
		"rollout", describeSteps(rw.Rollout.Steps()),
	}
	if k.clusterScoped {
		kv = append(kv, "releaseNamespace", k.rt.opts.ReleaseNamespace)
	}
	k.rt.log.Info("Configured watch", kv...)
}

// describeSelector renders a label selector for logs.
func describeSelector(sel metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		return "<invalid>"
	}
	if s.Empty() {
		return "<all>"
	}
	return s.String()
}

// fromCache returns the cache's copy of the object of gvk named
// namespace/name (nil when it holds none), and whether the cache watches
// objects of gvk: those the kind's readiness controller has made it watch
// (helmconfig.Config.Cached).
func (k *kindRuntime) fromCache(c client.Reader) func(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool) {
	return func(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool) {
		if !k.ready.Watches(gvk) {
			return nil, false
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		switch err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); {
		case err == nil:
			return u, true
		case apierrors.IsNotFound(err):
			return nil, true
		default: // not known: as if the kind were not watched
			return nil, false
		}
	}
}

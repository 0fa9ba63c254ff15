package helmruntime

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// logger returns the configured logger, or controller-runtime's global one.
func (o *Options) logger() logr.Logger {
	if o.Log.GetSink() != nil {
		return o.Log
	}
	return ctrl.Log.WithName("helmruntime")
}

// SetupReconcilers registers one Helm reconciler per watches.yaml entry with
// mgr. Each entry is resolved against the operator-wide defaults in opts (see
// ResolveWatch) and its scope is looked up through the manager's RESTMapper,
// so the CRD of every kind must already be installed. It returns the
// resolved watches in the order of ws.
func SetupReconcilers(mgr ctrl.Manager, ws []watches.Watch, opts Options) ([]ResolvedWatch, error) {
	log := opts.logger()
	resolved, err := ResolveWatches(ws, opts.WatchDefaults())
	if err != nil {
		return nil, err
	}
	for _, rw := range resolved {
		if err := setupReconciler(mgr, rw, opts.ReleaseNamespace, log); err != nil {
			return nil, err
		}
	}
	return resolved, nil
}

// setupReconciler builds the reconciler of one resolved watch and adds it to mgr.
func setupReconciler(mgr ctrl.Manager, rw ResolvedWatch, releaseNamespace string, log logr.Logger) error {
	clusterScoped, err := IsClusterScoped(mgr.GetRESTMapper(), rw.GVK)
	if err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	nsFor := ReleaseNamespaceMapper(clusterScoped, releaseNamespace)
	acg, err := newActionClientGetter(mgr.GetConfig(), mgr.GetRESTMapper(), nsFor)
	if err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	// Unchanged releases skip the dry-run upgrade (see digest.go).
	acg = withReleaseDigests(acg, rw.GVK.Kind, log.WithName("release-digest").WithValues("kind", rw.GVK.Kind))
	// A release has one owner: another resource's release, or one installed
	// by hand, is never touched (see releaseowner.go).
	refused := newRefusals()
	acg = withReleaseOwnership(acg, nsFor, refused, mgr.GetAPIReader(),
		mgr.GetEventRecorderFor(fmt.Sprintf("%s-controller", strings.ToLower(rw.GVK.Kind))),
		log.WithName("release-owner").WithValues("kind", rw.GVK.Kind))
	// Stale pending releases are unlocked; waits end on shutdown (see pending.go).
	if acg, err = withPendingRecovery(mgr, acg, nsFor, rw.GVK.Kind, log); err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}

	opts := reconcilerOptions(rw, acg, log)
	resync, err := resyncOptions(mgr.GetCache(), rw) // jittered, see resync.go
	if err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	opts = append(opts, resync...)
	// A resource refused for another's release retries when that release goes.
	opts = append(opts, reconciler.WithControllerSetupFunc(releaseDeletionWatch(mgr.GetCache(), rw.GVK, clusterScoped, releaseNamespace)))
	extra, err := safetyOptions(mgr, rw, acg, nsFor, refused, log)
	if err != nil {
		return fmt.Errorf("set up %s: %w", rw.GVK, err)
	}
	r, err := reconciler.New(append(opts, extra...)...)
	if err != nil {
		return fmt.Errorf("create reconciler for %s: %w", rw.GVK, err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up reconciler for %s: %w", rw.GVK, err)
	}

	kv := []any{
		"group", rw.GVK.Group, "version", rw.GVK.Version, "kind", rw.GVK.Kind,
		"chart", rw.ChartPath,
		"clusterScoped", clusterScoped,
		"watchDependentResources", rw.WatchDependentResources,
		"reconcilePeriod", rw.ReconcilePeriod.String(),
		"maxConcurrentReconciles", rw.MaxConcurrentReconciles,
		"maxReleaseHistory", rw.MaxReleaseHistory,
		"overrideValues", len(rw.OverrideValues),
		"selector", describeSelector(rw.Selector),
	}
	if clusterScoped {
		kv = append(kv, "releaseNamespace", releaseNamespace)
	}
	log.Info("Configured watch", kv...)
	return nil
}

// reconcilerOptions maps a resolved watch onto the library's reconciler options.
func reconcilerOptions(rw ResolvedWatch, acg helmclient.ActionClientGetter, log logr.Logger) []reconciler.Option {
	return []reconciler.Option{
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
		// The reconciler adds the kind and the object's key to every line.
		reconciler.WithLog(log.WithName("reconciler")),
	}
}

// safetyOptions are the reconciler options that keep chart secrets safe:
//   - the reconciler's client redacts Secret values from the release
//     manifest it writes into the custom resource's status (see
//     NewRedactingClient), and gives the conditions that report a refusal
//     of the ownership layer that refusal's reason (see refusals);
//   - values the chart declares as generated (GeneratedValuesAnnotation) are
//     generated once and then kept for the life of the release;
//   - kept objects (helm.sh/resource-policy: keep) are watched by owner
//     annotation, so that their drift is repaired at once (see
//     keptObjectWatcher).
func safetyOptions(mgr ctrl.Manager, rw ResolvedWatch, acg helmclient.ActionClientGetter, nsFor helmclient.ObjectToStringMapper, refused *refusals, log logr.Logger) ([]reconciler.Option, error) {
	opts := []reconciler.Option{reconciler.WithClient(withRefusalReasons(NewRedactingClient(mgr.GetClient()), refused))}

	// The library names its controller, and its event recorder, this way.
	controllerName := fmt.Sprintf("%s-controller", strings.ToLower(rw.GVK.Kind))
	translator, err := newGeneratedValuesTranslator(rw.Chart, acg, nsFor, mgr.GetClient(),
		mgr.GetEventRecorderFor(controllerName), log.WithName("generated-values").WithValues("kind", rw.GVK.Kind))
	if err != nil {
		return nil, err
	}
	if translator != nil {
		opts = append(opts, reconciler.WithValueTranslator(translator))
	}

	if rw.WatchDependentResources {
		w := newKeptObjectWatcher(mgr.GetCache(), rw.GVK.GroupKind())
		opts = append(opts, reconciler.WithControllerSetupFunc(w.setController), reconciler.WithPostHook(w))
	}
	return opts, nil
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

package cronscaler

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/internal/operator/managersetup"
	"github.com/acme/platform-operator/internal/operator/releaseidentity"
)

// A burst of fires is over when no reconcile has been in flight for
// burstQuiet; burstMaxDelay bounds how long a status write waits for that
// (see burstWriter).
const (
	burstQuiet    = time.Second
	burstMaxDelay = 10 * time.Second
)

// targetIndex is the field index of CronScalers by the object they scale,
// and hpaTargetIndex that of HorizontalPodAutoscalers by the object they
// scale, both as "<group>/<Kind>/<name>" (group empty for the core group).
const (
	targetIndex    = "spec.scaleTargetRef"
	hpaTargetIndex = "spec.scaleTargetRef"
)

// watchedKinds are the kinds of targets the controller watches, metadata
// only (the count is read through /scale): a count changed by hand is put
// back at once, and a target that appears is scaled at once. Other kinds
// are looked at again periodically while missing.
var watchedKinds = []struct {
	obj         client.Object
	group, kind string
}{
	{&appsv1.Deployment{}, "apps", "Deployment"},
	{&appsv1.StatefulSet{}, "apps", "StatefulSet"},
	{&appsv1.ReplicaSet{}, "apps", "ReplicaSet"},
}

// watchedKind tells whether targets of a kind are watched.
func watchedKind(gk schema.GroupKind) bool {
	for _, w := range watchedKinds {
		if w.group == gk.Group && w.kind == gk.Kind {
			return true
		}
	}
	return false
}

// Options are the settings of the CronScaler controller.
type Options struct {
	// MaxConcurrentReconciles is how many CronScalers are reconciled in
	// parallel; many CronScalers firing in the same minute need several.
	MaxConcurrentReconciles int
	// ClockOffset shifts the controller's clock. A testing aid only: it lets
	// end-to-end tests reach a schedule's fire time without waiting for it.
	// Zero in production.
	ClockOffset time.Duration
	// Shard selects the CronScalers this process owns (--shard-selector,
	// set by main); nil owns all of them. All are cached, so that which
	// CronScaler owns a target is judged alike in every shard.
	Shard labels.Selector
	// Writers hands out the client that scales a target, as its
	// namespace's release identity (set by main); nil scales with the
	// manager's client.
	Writers *releaseidentity.Writers
}

// DefaultOptions returns the options used when no flag is given.
func DefaultOptions() Options {
	return Options{MaxConcurrentReconciles: 8}
}

// BindFlags registers the controller's flags; call it on DefaultOptions.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxConcurrentReconciles, "cronscaler-max-concurrent-reconciles", o.MaxConcurrentReconciles,
		"CronScalers reconciled in parallel (many firing in the same minute need several).")
	fs.DurationVar(&o.ClockOffset, "cronscaler-clock-offset", o.ClockOffset,
		"TESTING AID, never set in production: shifts the CronScaler controller's clock by this duration.")
	_ = fs.MarkHidden("cronscaler-clock-offset")
}

// SetupWithManager registers the CronScaler controller: the indexes of
// CronScalers and HPAs by target, and watches on CronScalers (each also
// wakes the others of its target, which may own it now), HPAs (which may
// own a target's count) and the workload kinds CronScalers usually target.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	var clk clock.PassiveClock = clock.RealClock{}
	if o.ClockOffset != 0 {
		clk = offsetClock{offset: o.ClockOffset}
	}
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorderFor("cronscaler-controller"),
		Clock:     clk,
		Shard:     o.Shard,
		Writers:   o.Writers,
	}
	if err := IndexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if o.MaxConcurrentReconciles < 1 {
		o.MaxConcurrentReconciles = 1
	}
	r.burst = newBurstWriter(r.commit, o.MaxConcurrentReconciles, burstQuiet, burstMaxDelay, mgr.GetLogger().WithName("cronscaler-status"))
	if err := mgr.Add(r.burst); err != nil {
		return fmt.Errorf("adding the CronScaler status writer: %w", err)
	}
	changed := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("cronscaler").
		For(&autoscalingv1alpha1.CronScaler{}, builder.WithPredicates(predicate.Or[client.Object](specOrDeletion, managersetup.ShardMoved(o.Shard)))).
		Watches(&autoscalingv1alpha1.CronScaler{}, r.enqueueRivals(), builder.WithPredicates(specOrDeletion)).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, r.enqueueScalersOfHPA(), changed)
	for _, w := range watchedKinds {
		b = b.WatchesMetadata(w.obj, r.enqueueScalersOf(w.group, w.kind), changed)
	}
	return b.WithOptions(controller.Options{
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		// Failures (missing target, API errors) retry from 1 s up to 5 min,
		// never in a hot loop.
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute),
	}).
		Complete(r)
}

// specOrDeletion passes CronScaler events that need a reconcile: creation,
// spec changes (generation), and the start of deletion. Status and
// annotation writes, mostly the controller's own, are skipped.
var specOrDeletion = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() ||
			(e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil)
	},
}

// IndexFields registers the field indexes the controller looks rivals and
// HPAs up in.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &autoscalingv1alpha1.CronScaler{}, targetIndex, indexTarget); err != nil {
		return fmt.Errorf("indexing CronScalers by target: %w", err)
	}
	if err := indexer.IndexField(ctx, &autoscalingv2.HorizontalPodAutoscaler{}, hpaTargetIndex, indexHPATarget); err != nil {
		return fmt.Errorf("indexing HorizontalPodAutoscalers by target: %w", err)
	}
	return nil
}

// targetKey is the index value for a target.
func targetKey(group, kind, name string) string {
	return group + "/" + kind + "/" + name
}

// indexTarget indexes a CronScaler by its scaleTargetRef.
func indexTarget(o client.Object) []string {
	cs, ok := o.(*autoscalingv1alpha1.CronScaler)
	if !ok {
		return nil
	}
	ref := cs.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	return []string{targetKey(gv.Group, ref.Kind, ref.Name)}
}

// indexHPATarget indexes an HPA by its scaleTargetRef.
func indexHPATarget(o client.Object) []string {
	hpa, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	return []string{targetKey(gv.Group, ref.Kind, ref.Name)}
}

// enqueueScalersOf maps an object of one kind to the CronScalers in its
// namespace that target it.
func (r *Reconciler) enqueueScalersOf(group, kind string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.scalersOf(ctx, o.GetNamespace(), targetKey(group, kind, o.GetName()), "")
	})
}

// enqueueScalersOfHPA maps an HPA to the CronScalers that target it and to
// those that target what it scales (which it owns the count of).
func (r *Reconciler) enqueueScalersOfHPA() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs := r.scalersOf(ctx, o.GetNamespace(), targetKey("autoscaling", "HorizontalPodAutoscaler", o.GetName()), "")
		for _, key := range indexHPATarget(o) {
			reqs = append(reqs, r.scalersOf(ctx, o.GetNamespace(), key, "")...)
		}
		return reqs
	})
}

// enqueueRivals maps a CronScaler to the other CronScalers of its target:
// when it is created, deleted or retargeted, which of them owns the target
// may change. (An update's old and new objects are both mapped.)
func (r *Reconciler) enqueueRivals() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var reqs []reconcile.Request
		for _, key := range indexTarget(o) {
			reqs = append(reqs, r.scalersOf(ctx, o.GetNamespace(), key, o.GetName())...)
		}
		return reqs
	})
}

// scalersOf lists the CronScalers of a namespace whose target has the index
// key, except the one named except.
func (r *Reconciler) scalersOf(ctx context.Context, namespace, key, except string) []reconcile.Request {
	var list autoscalingv1alpha1.CronScalerList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{targetIndex: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the CronScalers of a target", "namespace", namespace, "target", key)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, cs := range list.Items {
		if cs.Name != except {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cs)})
		}
	}
	return reqs
}

// offsetClock is the real clock shifted by a fixed offset (testing aid, see
// Options.ClockOffset).
type offsetClock struct{ offset time.Duration }

func (c offsetClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

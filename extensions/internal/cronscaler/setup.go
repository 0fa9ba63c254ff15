package cronscaler

import (
	"context"
	"fmt"
	"github.com/spf13/pflag"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
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
)

// A burst of fires is over when no reconcile has been in flight for
// burstQuiet; burstMaxDelay bounds how long a status write waits for that
// (see burstWriter).
const (
	burstQuiet    = time.Second
	burstMaxDelay = 10 * time.Second
)

// targetIndex is the field index of CronScalers by the object they scale,
// as "<group>/<Kind>/<name>" (group empty for the core group).
const targetIndex = "spec.scaleTargetRef"

// Options are the settings of the CronScaler controller.
type Options struct {
	// MaxConcurrentReconciles is how many CronScalers are reconciled in
	// parallel; many CronScalers firing in the same minute need several.
	MaxConcurrentReconciles int
	// ClockOffset shifts the controller's clock. A testing aid only: it lets
	// end-to-end tests reach a schedule's fire time without waiting for it.
	// Zero in production.
	ClockOffset time.Duration
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

// SetupWithManager registers the CronScaler controller: the index of
// CronScalers by target, and watches on CronScalers and on the workload
// kinds they usually target, so that a count changed by hand is put back at
// once.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	var clk clock.PassiveClock = clock.RealClock{}
	if o.ClockOffset != 0 {
		clk = offsetClock{offset: o.ClockOffset}
	}
	r := &Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorderFor("cronscaler-controller"),
		Clock:    clk,
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &autoscalingv1alpha1.CronScaler{}, targetIndex, indexTarget); err != nil {
		return fmt.Errorf("indexing CronScalers by target: %w", err)
	}
	if o.MaxConcurrentReconciles < 1 {
		o.MaxConcurrentReconciles = 1
	}
	r.burst = newBurstWriter(r.writeStatus, o.MaxConcurrentReconciles, burstQuiet, burstMaxDelay, mgr.GetLogger().WithName("cronscaler-status"))
	if err := mgr.Add(r.burst); err != nil {
		return fmt.Errorf("adding the CronScaler status writer: %w", err)
	}
	changed := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		Named("cronscaler").
		For(&autoscalingv1alpha1.CronScaler{}, builder.WithPredicates(specOrDeletion)).
		Watches(&appsv1.Deployment{}, r.enqueueScalersOf("apps", "Deployment"), changed).
		Watches(&appsv1.StatefulSet{}, r.enqueueScalersOf("apps", "StatefulSet"), changed).
		Watches(&appsv1.ReplicaSet{}, r.enqueueScalersOf("apps", "ReplicaSet"), changed).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, r.enqueueScalersOf("autoscaling", "HorizontalPodAutoscaler"), changed).
		WithOptions(controller.Options{
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

// enqueueScalersOf maps an object of one kind to the CronScalers in its
// namespace that target it.
func (r *Reconciler) enqueueScalersOf(group, kind string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list autoscalingv1alpha1.CronScalerList
		if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()),
			client.MatchingFields{targetIndex: targetKey(group, kind, o.GetName())}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the CronScalers of a target", "kind", kind, "name", o.GetName())
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, cs := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cs)})
		}
		return reqs
	})
}

// offsetClock is the real clock shifted by a fixed offset (testing aid, see
// Options.ClockOffset).
type offsetClock struct{ offset time.Duration }

func (c offsetClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

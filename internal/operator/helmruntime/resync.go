package helmruntime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// ResyncJitter is the spread of periodic resyncs: each custom resource is
// resynced after the reconcile period times a random factor in
// [1-ResyncJitter, 1+ResyncJitter), drawn anew every time.
const ResyncJitter = 0.2

// The library requeues every reconciled resource after exactly the
// reconcile period. Resources created together (or listed together when
// the operator starts) are then resynced together, period after period: a
// burst of reconciles that competes with real work. The runtime therefore
// turns the library's period off and enqueues each resource on a timer of
// its own, with jitter (jitteredResync). The resync is a safety net only:
// spec edits and drift of rendered objects trigger reconciles through
// watches at once.

// ReconcilePeriodAnnotation sets the resync period of one resource (a Go
// duration: 30s, 5m, 1h), in place of its watch's reconcilePeriod, as in
// operator-sdk's Helm operator; "0s" turns its resync off. A value that is
// not a duration is reported in a Warning Event (InvalidAnnotation) and
// the watch's period applies.
const ReconcilePeriodAnnotation = "helm.sdk.operatorframework.io/reconcile-period"

// resyncOptions replaces the library's fixed requeue with jittered
// per-resource resyncs, of the watch's reconcile period or of a
// resource's ReconcilePeriodAnnotation.
func resyncOptions(c cache.Cache, rw watchconfig.ResolvedWatch, recorder record.EventRecorder) ([]reconciler.Option, error) {
	opts := []reconciler.Option{reconciler.WithReconcilePeriod(0)}
	var preds []predicate.Predicate
	if sel, err := metav1.LabelSelectorAsSelector(&rw.Selector); err != nil {
		return nil, fmt.Errorf("selector of %s: %w", rw.GVK, err)
	} else if !sel.Empty() {
		p, err := predicate.LabelSelectorPredicate(rw.Selector)
		if err != nil {
			return nil, fmt.Errorf("selector of %s: %w", rw.GVK, err)
		}
		preds = append(preds, p)
	}
	r := newJitteredResync(max(rw.ReconcilePeriod, 0), ResyncJitter, clock.RealClock{}, rand.Float64)
	r.invalid = func(obj client.Object, value string) {
		recorder.Eventf(obj, corev1.EventTypeWarning, "InvalidAnnotation",
			"%s %q is not a duration (such as 30s, 5m or 1h); the resync period of the kind applies (%s)",
			ReconcilePeriodAnnotation, value, describePeriod(rw.ReconcilePeriod))
	}
	setup := func(ctrl reconciler.ControllerSetup) error {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(rw.GVK)
		return ctrl.Watch(source.Kind[client.Object](c, obj, r, preds...))
	}
	return append(opts, reconciler.WithControllerSetupFunc(setup)), nil
}

// describePeriod says a watch's reconcile period in an Event.
func describePeriod(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return d.String()
}

// jitteredResync is an event handler on the custom resources of one
// controller: it keeps one timer per resource, which enqueues the
// resource and rearms itself with a new jittered delay, and drops the
// timer when the resource is deleted.
type jitteredResync struct {
	// period is the resync period of a resource without
	// ReconcilePeriodAnnotation; 0: none.
	period time.Duration
	jitter float64
	clock  clock.WithDelayedExecution
	// random returns a number in [0, 1).
	random func() float64
	// invalid, when set, reports a ReconcilePeriodAnnotation that is not
	// a duration, once per value.
	invalid func(obj client.Object, value string)

	mu      sync.Mutex
	timers  map[types.NamespacedName]resyncTimer
	gen     uint64
	stopped bool
}

// resyncTimer is the timer of one resource, for its period; gen tells a
// timer from the one that replaced it.
type resyncTimer struct {
	clock.Timer
	gen    uint64
	period time.Duration
}

var _ interface {
	Create(context.Context, event.TypedCreateEvent[client.Object], workqueue.TypedRateLimitingInterface[reconcile.Request])
} = (*jitteredResync)(nil)

func newJitteredResync(period time.Duration, jitter float64, c clock.WithDelayedExecution, random func() float64) *jitteredResync {
	return &jitteredResync{period: period, jitter: jitter, clock: c, random: random, timers: map[types.NamespacedName]resyncTimer{}}
}

// delay returns the next jittered delay of period.
func (r *jitteredResync) delay(period time.Duration) time.Duration {
	f := 1 - r.jitter + 2*r.jitter*r.random()
	return time.Duration(float64(period) * f)
}

// periodOf returns the resync period of obj: its ReconcilePeriodAnnotation,
// else the default. An annotation that is not a duration is reported
// when it differs from old's (old nil: a resource seen for the first
// time), and the default applies.
func (r *jitteredResync) periodOf(old, obj client.Object) time.Duration {
	v, ok := obj.GetAnnotations()[ReconcilePeriodAnnotation]
	if !ok {
		return r.period
	}
	d, err := time.ParseDuration(v)
	if err == nil && d >= 0 {
		return d
	}
	if r.invalid != nil && (old == nil || old.GetAnnotations()[ReconcilePeriodAnnotation] != v) {
		r.invalid(obj, v)
	}
	return r.period
}

// Create arms the timer of a resource the cache has seen for the first time
// (including every resource listed when the operator starts).
func (r *jitteredResync) Create(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	r.arm(types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}, r.periodOf(nil, e.Object), q)
}

// Update rearms the timer of a resource whose period changed; the
// library's own watch reconciles updates.
func (r *jitteredResync) Update(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	key := types.NamespacedName{Namespace: e.ObjectNew.GetNamespace(), Name: e.ObjectNew.GetName()}
	period := r.periodOf(e.ObjectOld, e.ObjectNew)
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.timers[key]
	if r.stopped || (ok && t.period == period) || (!ok && period <= 0) {
		return
	}
	if ok {
		t.Stop()
		delete(r.timers, key)
	}
	if period > 0 {
		r.schedule(key, period, q)
	}
}

// Delete drops the timer of a deleted resource.
func (r *jitteredResync) Delete(_ context.Context, e event.TypedDeleteEvent[client.Object], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	key := types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.timers[key]; ok {
		t.Stop()
		delete(r.timers, key)
	}
}

// Generic changes nothing.
func (r *jitteredResync) Generic(context.Context, event.TypedGenericEvent[client.Object], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

// arm starts the timer of key for period unless it runs already; a period
// of 0 starts none.
func (r *jitteredResync) arm(key types.NamespacedName, period time.Duration, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || period <= 0 {
		return
	}
	if _, ok := r.timers[key]; ok {
		return
	}
	r.schedule(key, period, q)
}

// schedule sets a timer for key; r.mu is held.
func (r *jitteredResync) schedule(key types.NamespacedName, period time.Duration, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	r.gen++
	gen := r.gen
	// The callback must not block the clock (a fake clock runs it while
	// holding its own lock), so the work happens in a goroutine.
	t := r.clock.AfterFunc(r.delay(period), func() { go r.fire(key, q, gen) })
	r.timers[key] = resyncTimer{Timer: t, gen: gen, period: period}
}

// fire enqueues key and rearms its timer, unless the timer was replaced,
// the resource deleted or the controller stopped in the meantime.
func (r *jitteredResync) fire(key types.NamespacedName, q workqueue.TypedRateLimitingInterface[reconcile.Request], gen uint64) {
	if q.ShuttingDown() { // the controller stopped
		r.stop()
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.timers[key]
	if r.stopped || !ok || t.gen != gen {
		return
	}
	// Rearm before enqueueing: whoever sees the request may count on the
	// next timer being set already (the tests step a fake clock then).
	r.schedule(key, t.period, q)
	q.Add(reconcile.Request{NamespacedName: key})
}

// stop stops every timer; it runs when a timer fires after the controller
// stopped (the event handlers get no context that lives as long as the
// controller).
func (r *jitteredResync) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	for key, t := range r.timers {
		t.Stop()
		delete(r.timers, key)
	}
}

// scheduled reports how many resources have a timer (for tests).
func (r *jitteredResync) scheduled() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.timers)
}

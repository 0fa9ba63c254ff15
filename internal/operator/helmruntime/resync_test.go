package helmruntime

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestJitteredResyncDelay(t *testing.T) {
	cases := []struct {
		name   string
		random float64
		want   time.Duration
	}{
		{name: "lowest draw: period minus 20%", random: 0, want: 48 * time.Minute},
		{name: "middle draw: the period", random: 0.5, want: time.Hour},
		{name: "highest draw: just under period plus 20%", random: 0.999, want: time.Duration(float64(time.Hour) * (0.8 + 0.4*0.999))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newJitteredResync(time.Hour, ResyncJitter, clocktesting.NewFakeClock(time.Now()), func() float64 { return tc.random })
			NewWithT(t).Expect(r.delay(r.period)).To(Equal(tc.want))
		})
	}
}

func TestJitteredResync(t *testing.T) {
	g := NewWithT(t)
	clk := clocktesting.NewFakeClock(time.Now())
	draws := []float64{0, 1 - 1e-9} // a: 48 min; b: just under 72 min; then 60 min each
	r := newJitteredResync(time.Hour, ResyncJitter, clk, func() float64 {
		if len(draws) == 0 {
			return 0.5
		}
		d := draws[0]
		draws = draws[1:]
		return d
	})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	obj := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace("ns")
		u.SetName(name)
		return u
	}
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	// drain returns the requests queued so far.
	drain := func() []reconcile.Request {
		var out []reconcile.Request
		for q.Len() > 0 {
			item, _ := q.Get()
			out = append(out, item)
			q.Done(item)
			q.Forget(item)
		}
		return out
	}
	// expectQueued waits for the timers' goroutines to queue exactly want.
	expectQueued := func(want ...reconcile.Request) {
		t.Helper()
		var got []reconcile.Request
		g.Eventually(func() []reconcile.Request {
			got = append(got, drain()...)
			return got
		}).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(ConsistOf(want))
		g.Consistently(drain).WithTimeout(100 * time.Millisecond).Should(BeEmpty())
	}

	t.Log("every resource seen by the cache gets one timer; a second create event adds none")
	r.Create(t.Context(), event.TypedCreateEvent[client.Object]{Object: obj("a")}, q)
	r.Create(t.Context(), event.TypedCreateEvent[client.Object]{Object: obj("b")}, q)
	r.Create(t.Context(), event.TypedCreateEvent[client.Object]{Object: obj("a")}, q)
	g.Expect(r.scheduled()).To(Equal(2))
	g.Expect(drain()).To(BeEmpty())

	t.Log("each resource is resynced at its own jittered time")
	clk.Step(48 * time.Minute)
	expectQueued(req("a"))
	clk.Step(24 * time.Minute)
	expectQueued(req("b"))

	t.Log("and again one period later: the timers rearm themselves")
	clk.Step(36 * time.Minute) // a: 48+60 = 108 min
	expectQueued(req("a"))

	t.Log("a deleted resource is no longer resynced")
	r.Delete(t.Context(), event.TypedDeleteEvent[client.Object]{Object: obj("b")}, q)
	g.Expect(r.scheduled()).To(Equal(1))
	clk.Step(2 * time.Hour)
	expectQueued(req("a"))

	t.Log("once the controller stopped (its queue shut down), the next timer stops them all")
	r.Create(t.Context(), event.TypedCreateEvent[client.Object]{Object: obj("c")}, q)
	g.Expect(r.scheduled()).To(Equal(2))
	q.ShutDown()
	clk.Step(2 * time.Hour)
	g.Eventually(r.scheduled).WithTimeout(5 * time.Second).Should(BeZero())
	r.Create(t.Context(), event.TypedCreateEvent[client.Object]{Object: obj("d")}, q)
	g.Expect(r.scheduled()).To(BeZero())
}

func TestJitteredResyncAnnotation(t *testing.T) {
	g := NewWithT(t)
	clk := clocktesting.NewFakeClock(time.Now())
	// No period for the kind; each draw is the middle: the period itself.
	r := newJitteredResync(0, ResyncJitter, clk, func() float64 { return 0.5 })
	var invalid []string
	r.invalid = func(obj client.Object, value string) { invalid = append(invalid, obj.GetName()+"="+value) }
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	obj := func(name, period string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace("ns")
		u.SetName(name)
		if period != "" {
			u.SetAnnotations(map[string]string{ReconcilePeriodAnnotation: period})
		}
		return u
	}
	queued := func(want ...string) {
		t.Helper()
		var got []string
		g.Eventually(func() []string {
			for q.Len() > 0 {
				item, _ := q.Get()
				got = append(got, item.Name)
				q.Done(item)
				q.Forget(item)
			}
			return got
		}).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(ConsistOf(want))
	}

	t.Log("without a period for the kind, only annotated resources are resynced")
	r.Create(t.Context(), event.TypedCreateEvent[client.Object]{Object: obj("plain", "")}, q)
	r.Create(t.Context(), event.TypedCreateEvent[client.Object]{Object: obj("fast", "1m")}, q)
	r.Create(t.Context(), event.TypedCreateEvent[client.Object]{Object: obj("bad", "soon")}, q)
	g.Expect(r.scheduled()).To(Equal(1))
	g.Expect(invalid).To(Equal([]string{"bad=soon"}))
	clk.Step(time.Minute)
	queued("fast")

	t.Log("an edit of the annotation rearms the timer with the new period")
	r.Update(t.Context(), event.TypedUpdateEvent[client.Object]{ObjectOld: obj("fast", "1m"), ObjectNew: obj("fast", "10m")}, q)
	r.Update(t.Context(), event.TypedUpdateEvent[client.Object]{ObjectOld: obj("plain", ""), ObjectNew: obj("plain", "5m")}, q)
	clk.Step(5 * time.Minute)
	queued("plain")
	clk.Step(5 * time.Minute)
	queued("plain", "fast")

	t.Log("0s stops the resync; an invalid value is reported once, when it changes")
	r.Update(t.Context(), event.TypedUpdateEvent[client.Object]{ObjectOld: obj("fast", "10m"), ObjectNew: obj("fast", "0s")}, q)
	r.Update(t.Context(), event.TypedUpdateEvent[client.Object]{ObjectOld: obj("bad", "soon"), ObjectNew: obj("bad", "soon")}, q)
	r.Update(t.Context(), event.TypedUpdateEvent[client.Object]{ObjectOld: obj("bad", "soon"), ObjectNew: obj("bad", "-1m")}, q)
	g.Expect(invalid).To(Equal([]string{"bad=soon", "bad=-1m"}))
	g.Expect(r.scheduled()).To(Equal(1))
}

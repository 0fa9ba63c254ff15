package cronscaler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/internal/operator/managersetup"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// counterValue reads a Prometheus counter.
func counterValue(c prometheus.Counter) float64 {
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func namespace(g Gomega, c client.Client, name string) {
	g.ExpectWithOffset(1, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			},
		},
	}
}

// deploymentScaler is a CronScaler named like the Deployment it scales.
func deploymentScaler(ns, name string, jobs ...autoscalingv1alpha1.ScheduleJob) *autoscalingv1alpha1.CronScaler {
	return &autoscalingv1alpha1.CronScaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv1alpha1.CronScalerSpec{
			ScaleTargetRef: autoscalingv1alpha1.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Jobs:           jobs,
		},
	}
}

// drainEvents returns the events recorded so far as "Type Reason Message".
func drainEvents(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestReconcileFollowsTheSchedule walks a fake clock through a week of the
// issue's business-hours rhythm (in Berlin, with Christmas excluded) and
// reconciles at each step against the real API server: the Deployment's
// count, the requeue delay (exactly until the next fire), status, Events,
// metrics, drift, catch-up over several missed fires, and restoreOnDelete.
func TestReconcileFollowsTheSchedule(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "follows"
	namespace(g, c, ns)
	dep := deployment(ns, "web", 2)
	g.Expect(c.Create(ctx, dep)).To(Succeed())
	cs := deploymentScaler(ns, "web",
		autoscalingv1alpha1.ScheduleJob{Name: "workday-up", Schedule: "0 8 * * 1-5", Replicas: 5},
		autoscalingv1alpha1.ScheduleJob{Name: "night-down", Schedule: "0 20 * * *", Replicas: 1},
	)
	cs.Spec.TimeZone = "Europe/Berlin"
	cs.Spec.ExcludeDates = []string{"2026-12-25"}
	cs.Spec.RestoreOnDelete = true
	g.Expect(c.Create(ctx, cs)).To(Succeed())

	clock := clocktesting.NewFakePassiveClock(at("2026-11-23T07:00:00+01:00"))
	rec := record.NewFakeRecorder(100)
	counting := &scaleCallCounter{Client: c}
	r := &Reconciler{Client: counting, Recorder: rec, Clock: clock}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cs)}
	driftBefore := counterValue(scalesTotal.WithLabelValues("success", triggerDrift))

	steps := []struct {
		name   string
		now    string // fake clock
		before func(g Gomega)
		// Expected afterwards.
		replicas int32
		active   string
		next     string // the requeue is exactly until this fire
		event    string // substring of the one Event expected, "" for none
		// The target's /scale requests: a fire where the target has the
		// count the CronScaler left is one JSON patch that tests it.
		scaleCalls []string
	}{
		{
			// Monday 07:00: last night's job is active; the Deployment goes
			// from 2 to 1 (2 is recorded as the original count).
			name: "create", now: "2026-11-23T07:00:00+01:00",
			replicas: 1, active: "night-down", next: "2026-11-23T08:00:00+01:00",
			event:      "Normal Scaled Scaled Deployment/web from 2 to 1 replicas: job night-down fired at 2026-11-22T19:00:00Z",
			scaleCalls: []string{"get", "patch merge"},
		},
		{
			// Woken for the 08:00 fire.
			name: "fire", now: "2026-11-23T08:00:00.005+01:00",
			replicas: 5, active: "workday-up", next: "2026-11-23T20:00:00+01:00",
			event:      "Normal Scaled Scaled Deployment/web from 1 to 5 replicas: job workday-up",
			scaleCalls: []string{"patch json"},
		},
		{
			// Someone scales by hand: the count is put back.
			name: "drift", now: "2026-11-23T09:00:00+01:00",
			before: func(g Gomega) {
				d := &appsv1.Deployment{}
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(dep), d)).To(Succeed())
				d.Spec.Replicas = ptr.To[int32](9)
				g.Expect(c.Update(ctx, d)).To(Succeed())
			},
			replicas: 5, active: "workday-up", next: "2026-11-23T20:00:00+01:00",
			event:      "Normal DriftCorrected Scaled Deployment/web from 9 to 5 replicas: the count was changed outside the CronScaler",
			scaleCalls: []string{"get", "patch merge"},
		},
		{
			// Nothing to do between fires: no Event.
			name: "idle", now: "2026-11-23T12:00:00+01:00",
			replicas: 5, active: "workday-up", next: "2026-11-23T20:00:00+01:00",
			scaleCalls: []string{"get"},
		},
		{
			// The sidecar was down from Monday noon to Wednesday 21:30: the
			// most recent missed job (Wednesday 20:00) applies at once.
			name: "catch-up", now: "2026-11-25T21:30:00+01:00",
			replicas: 1, active: "night-down", next: "2026-11-26T08:00:00+01:00",
			event:      "from 5 to 1 replicas: job night-down fired at 2026-11-25T19:00:00Z",
			scaleCalls: []string{"patch json"},
		},
		{
			// Christmas Eve (Thursday) morning. The count was changed while
			// the sidecar was not watching: the tested patch is refused, and
			// the count is read and written.
			name: "christmas eve", now: "2026-12-24T08:00:00+01:00",
			before: func(g Gomega) {
				d := &appsv1.Deployment{}
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(dep), d)).To(Succeed())
				d.Spec.Replicas = ptr.To[int32](3)
				g.Expect(c.Update(ctx, d)).To(Succeed())
			},
			replicas: 5, active: "workday-up", next: "2026-12-24T20:00:00+01:00",
			event:      "from 3 to 5",
			scaleCalls: []string{"patch json", "get", "patch merge"},
		},
		{
			// Christmas Day is excluded: neither job fires; the next fire is
			// on the 26th at 20:00.
			name: "excluded date", now: "2026-12-25T10:00:00+01:00",
			replicas: 1, active: "night-down", next: "2026-12-26T20:00:00+01:00",
			event:      "from 5 to 1",
			scaleCalls: []string{"patch json"},
		},
	}
	for _, s := range steps {
		clock.SetTime(at(s.now))
		if s.before != nil {
			s.before(g)
		}
		counting.calls = nil
		res, err := r.Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred(), s.name)
		g.Expect(counting.calls).To(Equal(s.scaleCalls), s.name)
		g.Expect(res.RequeueAfter).To(Equal(at(s.next).Sub(clock.Now())+5*time.Millisecond), s.name)

		d := &appsv1.Deployment{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(dep), d)).To(Succeed())
		g.Expect(*d.Spec.Replicas).To(Equal(s.replicas), s.name)

		got := &autoscalingv1alpha1.CronScaler{}
		g.Expect(c.Get(ctx, req.NamespacedName, got)).To(Succeed())
		g.Expect(got.Status.ActiveJob).To(Equal(s.active), s.name)
		g.Expect(*got.Status.DesiredReplicas).To(Equal(s.replicas), s.name)
		g.Expect(got.Status.NextScheduleTime.Time).To(BeTemporally("==", at(s.next)), s.name)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation), s.name)
		ready := meta.FindStatusCondition(got.Status.Conditions, ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), s.name)
		g.Expect(ready.Reason).To(Equal(ReasonScaled), s.name)
		g.Expect(got.Annotations).To(HaveKeyWithValue(autoscalingv1alpha1.OriginalReplicasAnnotation, "2"), s.name)
		g.Expect(got.Finalizers).To(ContainElement(autoscalingv1alpha1.RestoreFinalizer), s.name)

		events := drainEvents(rec)
		if s.event == "" {
			g.Expect(events).To(BeEmpty(), s.name)
		} else {
			g.Expect(events).To(ConsistOf(ContainSubstring(s.event)), s.name)
		}
	}
	g.Expect(counterValue(scalesTotal.WithLabelValues("success", triggerDrift))).To(Equal(driftBefore + 1))

	t.Log("delete: the original count (2) comes back and the finalizer goes")
	g.Expect(c.Delete(ctx, cs)).To(Succeed())
	_, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	d := &appsv1.Deployment{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(dep), d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(apierrors.IsNotFound(c.Get(ctx, req.NamespacedName, &autoscalingv1alpha1.CronScaler{}))).To(BeTrue())
	g.Expect(drainEvents(rec)).To(ConsistOf(ContainSubstring("Normal Restored Restored Deployment/web to its original 2 replicas")))
}

// scaleCallCounter records the /scale requests made through it, as "get",
// "patch json" or "patch merge".
type scaleCallCounter struct {
	client.Client
	calls []string
}

func (c *scaleCallCounter) SubResource(name string) client.SubResourceClient {
	if name != "scale" {
		return c.Client.SubResource(name)
	}
	return scaleCalls{SubResourceClient: c.Client.SubResource(name), counter: c}
}

type scaleCalls struct {
	client.SubResourceClient
	counter *scaleCallCounter
}

func (s scaleCalls) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	s.counter.calls = append(s.counter.calls, "get")
	return s.SubResourceClient.Get(ctx, obj, sub, opts...)
}

func (s scaleCalls) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	kind := map[types.PatchType]string{types.JSONPatchType: "json", types.MergePatchType: "merge"}[patch.Type()]
	s.counter.calls = append(s.counter.calls, "patch "+kind)
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

// TestReconcileHPA sets an HPA's minReplicas, raising maxReplicas when
// needed, and restores both on delete.
// apiHPA is an HPA "api" in ns scaling the Deployment "api" between 1 and
// 3 replicas.
func apiHPA(ns string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 3,
		},
	}
}

func TestReconcileHPA(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "hpa"
	namespace(g, c, ns)
	hpa := apiHPA(ns)
	g.Expect(c.Create(ctx, hpa)).To(Succeed())
	cs := &autoscalingv1alpha1.CronScaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: autoscalingv1alpha1.CronScalerSpec{
			ScaleTargetRef: autoscalingv1alpha1.ScaleTargetRef{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler", Name: "api"},
			Jobs: []autoscalingv1alpha1.ScheduleJob{
				{Name: "low", Schedule: "0 0 * * *", Replicas: 2},
				{Name: "high", Schedule: "0 12 * * *", Replicas: 6},
			},
			RestoreOnDelete: true,
		},
	}
	g.Expect(c.Create(ctx, cs)).To(Succeed())
	clock := clocktesting.NewFakePassiveClock(at("2026-11-23T06:00:00Z"))
	r := &Reconciler{Client: c, Recorder: record.NewFakeRecorder(100), Clock: clock}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cs)}
	bounds := func() [2]int32 {
		h := &autoscalingv2.HorizontalPodAutoscaler{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(hpa), h)).To(Succeed())
		return [2]int32{*h.Spec.MinReplicas, h.Spec.MaxReplicas}
	}

	// 06:00: the low job; minReplicas 2 fits under maxReplicas 3.
	_, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bounds()).To(Equal([2]int32{2, 3}))
	// 12:00: the high job; maxReplicas is raised to 6 with it.
	clock.SetTime(at("2026-11-23T12:00:00Z"))
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bounds()).To(Equal([2]int32{6, 6}))
	got := &autoscalingv1alpha1.CronScaler{}
	g.Expect(c.Get(ctx, req.NamespacedName, got)).To(Succeed())
	g.Expect(got.Annotations).To(Equal(map[string]string{
		autoscalingv1alpha1.OriginalReplicasAnnotation:    "1",
		autoscalingv1alpha1.OriginalMaxReplicasAnnotation: "3",
	}))

	// Delete: both bounds come back.
	g.Expect(c.Delete(ctx, cs)).To(Succeed())
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bounds()).To(Equal([2]int32{1, 3}))
}

// TestReconcileReportsProblems: a spec only code can reject is a terminal
// error with Ready=False; a target that is not scalable is retried (an
// error for the rate limiter) with Ready=False; a missing target is no
// error (the watch on its kind brings the CronScaler back when it appears),
// only Ready=False. All raise a Warning Event.
func TestReconcileReportsProblems(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "problems"
	namespace(g, c, ns)
	cases := []struct {
		name     string
		zone     string
		schedule string
		terminal bool   // reconcile.TerminalError: no retry until the spec changes
		held     bool   // no error at all: nothing to retry
		reason   string // of Ready=False and the Warning
		message  string
	}{
		// 5 fields that pass the schema's pattern but not the parser.
		{"bad-cron", "UTC", "0 25 * * *", true, false, ReasonInvalidSpec, `job "a": schedule "0 25 * * *": end of range (25) above maximum (23)`},
		// An IANA-shaped name that is no zone.
		{"bad-zone", "Europe/Atlantis", "@daily", true, false, ReasonInvalidSpec, `timeZone "Europe/Atlantis" is not a known IANA time zone`},
		// The Deployment does not exist (yet): the watch on Deployments
		// wakes the CronScaler when it appears.
		{"no-target", "UTC", "@daily", false, true, ReasonTargetNotFound, "Deployment no-target not found in namespace problems"},
		// A ConfigMap exists but has no /scale (as an admin sees it).
		{"not-scalable", "UTC", "@daily", false, false, ReasonTargetNotScalable, "ConfigMap cm has no /scale subresource"},
		// A kind the API server does not serve.
		{"unknown-kind", "UTC", "@daily", false, false, ReasonTargetNotScalable, "the API server has no kind Widget in example.com/v1"},
	}
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}})).To(Succeed())
	targets := map[string]autoscalingv1alpha1.ScaleTargetRef{
		"not-scalable": {APIVersion: "v1", Kind: "ConfigMap", Name: "cm"},
		"unknown-kind": {APIVersion: "example.com/v1", Kind: "Widget", Name: "w"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cs := &autoscalingv1alpha1.CronScaler{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name},
				Spec: autoscalingv1alpha1.CronScalerSpec{
					// One target each: CronScalers of one target elect an owner.
					ScaleTargetRef: autoscalingv1alpha1.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: tc.name},
					TimeZone:       tc.zone,
					Jobs:           []autoscalingv1alpha1.ScheduleJob{{Name: "a", Schedule: tc.schedule, Replicas: 1}},
				},
			}
			if ref, ok := targets[tc.name]; ok {
				cs.Spec.ScaleTargetRef = ref
			}
			g.Expect(c.Create(ctx, cs)).To(Succeed())
			rec := record.NewFakeRecorder(10)
			r := &Reconciler{Client: c, Recorder: rec, Clock: clocktesting.NewFakePassiveClock(at("2026-11-23T06:00:00Z"))}
			res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cs)})
			if tc.held {
				g.Expect(err).NotTo(HaveOccurred())
				// Only until the daily fire, which looks again anyway.
				g.Expect(res.RequeueAfter).To(BeNumerically(">", 17*time.Hour))
			} else {
				g.Expect(err).To(MatchError(ContainSubstring(tc.message)))
				g.Expect(res.RequeueAfter).To(BeZero())
				g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(Equal(tc.terminal))
			}
			got := &autoscalingv1alpha1.CronScaler{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cs), got)).To(Succeed())
			ready := meta.FindStatusCondition(got.Status.Conditions, ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(tc.reason))
			g.Expect(ready.Message).To(ContainSubstring(tc.message))
			g.Expect(ready.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(drainEvents(rec)).To(ConsistOf(HavePrefix("Warning " + tc.reason + " ")))
		})
	}
}

func TestIndexTarget(t *testing.T) {
	cases := []struct {
		name string
		ref  autoscalingv1alpha1.ScaleTargetRef
		want []string
	}{
		// Group from apiVersion, then kind and name.
		{"deployment", autoscalingv1alpha1.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, []string{"apps/Deployment/web"}},
		// The core group is empty.
		{"core", autoscalingv1alpha1.ScaleTargetRef{APIVersion: "v1", Kind: "ReplicationController", Name: "rc"}, []string{"/ReplicationController/rc"}},
		// The version does not matter: v1 and v2 HPAs are the same object.
		{"hpa", autoscalingv1alpha1.ScaleTargetRef{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler", Name: "h"}, []string{"autoscaling/HorizontalPodAutoscaler/h"}},
		// An unparsable apiVersion indexes nothing.
		{"bad apiVersion", autoscalingv1alpha1.ScaleTargetRef{APIVersion: "a/b/c", Kind: "X", Name: "x"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cs := &autoscalingv1alpha1.CronScaler{Spec: autoscalingv1alpha1.CronScalerSpec{ScaleTargetRef: tc.ref}}
			g.Expect(indexTarget(cs)).To(Equal(tc.want))
		})
	}
}

// TestReconcileDefersStatusDuringBurst: a fire scales the target at once but
// its status and Event wait until no reconcile has been in flight for the
// quiet period; a second reconcile meanwhile starts from the deferred
// status and neither scales again nor duplicates the Event.
func TestReconcileDefersStatusDuringBurst(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "burst"
	namespace(g, c, ns)
	dep := deployment(ns, "web", 1)
	g.Expect(c.Create(ctx, dep)).To(Succeed())
	cs := deploymentScaler(ns, "web",
		autoscalingv1alpha1.ScheduleJob{Name: "night", Schedule: "0 20 * * *", Replicas: 1},
		autoscalingv1alpha1.ScheduleJob{Name: "day", Schedule: "0 8 * * *", Replicas: 4},
	)
	g.Expect(c.Create(ctx, cs)).To(Succeed())

	clock := clocktesting.NewFakePassiveClock(at("2026-11-23T07:00:00Z"))
	rec := record.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Recorder: rec, Clock: clock}
	r.burst = newBurstWriter(r.commit, 2, 100*time.Millisecond, time.Hour, logr.Discard())
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { _ = r.burst.Start(runCtx); close(stopped) }()
	defer func() { stop(); <-stopped }()
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cs)}
	stored := func() *autoscalingv1alpha1.CronScaler {
		got := &autoscalingv1alpha1.CronScaler{}
		g.Expect(c.Get(ctx, req.NamespacedName, got)).To(Succeed())
		return got
	}
	replicas := func() int32 {
		d := &appsv1.Deployment{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(dep), d)).To(Succeed())
		return *d.Spec.Replicas
	}

	t.Log("alone: the status is written a quiet period after the reconcile")
	_, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string { return stored().Status.ActiveJob }).WithTimeout(5 * time.Second).Should(Equal("night"))

	t.Log("the day job fires while another reconcile is in flight")
	r.burst.begin()
	clock.SetTime(at("2026-11-23T08:00:00.005Z"))
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replicas()).To(Equal(int32(4)), "the target is scaled at once")
	g.Expect(stored().Status.ActiveJob).To(Equal("night"), "the status waits")
	g.Expect(drainEvents(rec)).To(BeEmpty(), "the Event waits with it")

	t.Log("reconciled again during the burst: nothing new happens")
	clock.SetTime(at("2026-11-23T08:00:01Z"))
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replicas()).To(Equal(int32(4)))
	g.Expect(stored().Status.ActiveJob).To(Equal("night"))

	t.Log("the burst ends: the status and the one Event go out")
	r.burst.end()
	g.Eventually(func() string { return stored().Status.ActiveJob }).WithTimeout(5 * time.Second).Should(Equal("day"))
	got := stored()
	g.Expect(got.Status.AppliedScheduleTime.Time).To(BeTemporally("==", at("2026-11-23T08:00:00Z")))
	g.Expect(*got.Status.DesiredReplicas).To(Equal(int32(4)))
	g.Eventually(func() []string { return drainEvents(rec) }).WithTimeout(5 * time.Second).Should(
		ConsistOf(ContainSubstring("Normal Scaled Scaled Deployment/web from 1 to 4 replicas: job day fired at 2026-11-23T08:00:00Z")))
	g.Consistently(func() []string { return drainEvents(rec) }).WithTimeout(300 * time.Millisecond).Should(BeEmpty())
}

// TestSleepFrom: the requeue a reconcile computed at its start is shortened
// by the time the reconcile took, so the wake-up is at the fire time
// however slow the API server was.
func TestSleepFrom(t *testing.T) {
	start := at("2026-11-23T07:59:00Z")
	for _, tc := range []struct {
		name string
		// took is how long the reconcile ran after computing the requeue.
		took time.Duration
		// sleep is the requeue computed at the start; want is what is returned.
		sleep, want time.Duration
	}{
		{name: "instant reconcile", took: 0, sleep: time.Minute, want: time.Minute},
		{name: "slow API server", took: 800 * time.Millisecond, sleep: time.Minute, want: time.Minute - 800*time.Millisecond},
		{name: "the fire passed during the reconcile", took: 2 * time.Minute, sleep: time.Minute, want: time.Millisecond},
		{name: "no requeue stays none", took: time.Second, sleep: 0, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := clocktesting.NewFakePassiveClock(start)
			r := &Reconciler{Clock: clock}
			clock.SetTime(start.Add(tc.took))
			g.Expect(r.sleepFrom(reconcile.Result{RequeueAfter: tc.sleep}, start).RequeueAfter).To(Equal(tc.want))
		})
	}
}

// staleClient serves one CronScaler from a snapshot, like an informer cache
// that has not yet seen the latest writes.
type staleClient struct {
	client.Client
	stale *autoscalingv1alpha1.CronScaler
}

func (c staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if cs, ok := obj.(*autoscalingv1alpha1.CronScaler); ok && key == client.ObjectKeyFromObject(c.stale) {
		c.stale.DeepCopyInto(cs)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestReconcileFromStaleCacheKeepsTheOriginal: a reconcile that reads the
// CronScaler from a cache behind the previous reconcile (which recorded
// the original count and scaled the target) must not record the count the
// controller itself set as the original. Its write is refused and retried
// quietly; the recorded original stays.
func TestReconcileFromStaleCacheKeepsTheOriginal(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "stale"
	namespace(g, c, ns)
	g.Expect(c.Create(ctx, deployment(ns, "web", 2))).To(Succeed())
	cs := deploymentScaler(ns, "web", autoscalingv1alpha1.ScheduleJob{Name: "always", Schedule: "* * * * *", Replicas: 4})
	g.Expect(c.Create(ctx, cs)).To(Succeed())
	snapshot := cs.DeepCopy()
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cs)}
	clock := clocktesting.NewFakePassiveClock(at("2026-11-23T08:00:30Z"))
	rec := record.NewFakeRecorder(100)

	fresh := &Reconciler{Client: c, Recorder: rec, Clock: clock}
	_, err := fresh.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	dep := &appsv1.Deployment{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep)).To(Succeed())
	g.Expect(*dep.Spec.Replicas).To(Equal(int32(4)))
	drainEvents(rec)

	stale := &Reconciler{Client: staleClient{Client: c, stale: snapshot}, Recorder: rec, Clock: clock}
	_, err = stale.Reconcile(ctx, req)
	g.Expect(err).To(MatchError(errStaleCronScaler))
	got := &autoscalingv1alpha1.CronScaler{}
	g.Expect(c.Get(ctx, req.NamespacedName, got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(autoscalingv1alpha1.OriginalReplicasAnnotation, "2"))
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, ConditionReady).Reason).To(Equal(ReasonScaled), "not reported as a target failure")
	g.Expect(drainEvents(rec)).To(BeEmpty(), "no Warning for a stale read")
}

// TestReconcileLeavesOtherShards: a CronScaler another shard owns is not
// touched (no finalizer, no status, no scaling); once its label moves into
// this shard, it is reconciled like any other.
func TestReconcileLeavesOtherShards(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "shards"
	namespace(g, c, ns)
	hpa := apiHPA(ns)
	g.Expect(c.Create(ctx, hpa)).To(Succeed())
	cs := &autoscalingv1alpha1.CronScaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api", Labels: map[string]string{managersetup.ShardLabel: "a"}},
		Spec: autoscalingv1alpha1.CronScalerSpec{
			ScaleTargetRef: autoscalingv1alpha1.ScaleTargetRef{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler", Name: "api"},
			Jobs:           []autoscalingv1alpha1.ScheduleJob{{Name: "low", Schedule: "0 0 * * *", Replicas: 2}},
		},
	}
	g.Expect(c.Create(ctx, cs)).To(Succeed())
	sel, err := managersetup.ParseShard(managersetup.ShardLabel + "=b")
	g.Expect(err).NotTo(HaveOccurred())
	r := &Reconciler{Client: c, Recorder: record.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(at("2026-11-23T06:00:00Z")), Shard: sel}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cs)}

	res, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(reconcile.Result{}), "another shard's CronScaler must not be requeued here")
	got := &autoscalingv1alpha1.CronScaler{}
	g.Expect(c.Get(ctx, req.NamespacedName, got)).To(Succeed())
	g.Expect(got.Finalizers).To(BeEmpty())
	g.Expect(got.Status.Conditions).To(BeEmpty())
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(hpa), h)).To(Succeed())
	g.Expect(*h.Spec.MinReplicas).To(Equal(int32(1)))

	got.Labels[managersetup.ShardLabel] = "b"
	g.Expect(c.Update(ctx, got)).To(Succeed())
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(hpa), h)).To(Succeed())
	g.Expect(*h.Spec.MinReplicas).To(Equal(int32(2)))
	g.Expect(c.Get(ctx, req.NamespacedName, got)).To(Succeed())
	g.Expect(got.Status.Conditions).NotTo(BeEmpty())
}

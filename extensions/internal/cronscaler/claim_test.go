package cronscaler

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
)

func TestElectOwner(t *testing.T) {
	t0 := metav1.NewTime(at("2026-11-23T08:00:00Z"))
	t1 := metav1.NewTime(at("2026-11-23T08:00:01Z"))
	scaler := func(name string, created metav1.Time) autoscalingv1alpha1.CronScaler {
		return autoscalingv1alpha1.CronScaler{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}}
	}
	cases := []struct {
		name string
		self autoscalingv1alpha1.CronScaler
		// rivals as the cache lists them (self included or not).
		rivals []autoscalingv1alpha1.CronScaler
		want   string
	}{
		{name: "alone, not in the cache yet", self: scaler("b", t1), want: "b"},
		{name: "alone, in the cache", self: scaler("b", t1), rivals: []autoscalingv1alpha1.CronScaler{scaler("b", t1)}, want: "b"},
		// The oldest wins whatever the names.
		{name: "older rival", self: scaler("a", t1), rivals: []autoscalingv1alpha1.CronScaler{scaler("a", t1), scaler("z", t0)}, want: "z"},
		{name: "self is older", self: scaler("z", t0), rivals: []autoscalingv1alpha1.CronScaler{scaler("a", t1), scaler("z", t0)}, want: "z"},
		// Created in the same second: the smaller name wins, on both sides.
		{name: "tie, self loses", self: scaler("b", t0), rivals: []autoscalingv1alpha1.CronScaler{scaler("a", t0)}, want: "a"},
		{name: "tie, self wins", self: scaler("a", t0), rivals: []autoscalingv1alpha1.CronScaler{scaler("b", t0)}, want: "a"},
		// Three: the oldest of the rivals, ties among them by name.
		{name: "three", self: scaler("c", t1), rivals: []autoscalingv1alpha1.CronScaler{scaler("y", t0), scaler("x", t0), scaler("c", t1)}, want: "x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(electOwner(&tc.self, tc.rivals)).To(Equal(tc.want))
		})
	}
}

// release is a release manifest as the Helm runtime stores it in
// status.deployedRelease.manifest: "# Source:" comments, documents without
// a namespace.
const release = `---
# Source: nginx/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports: [{port: 80}]
---
# Source: nginx/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  template: {}
---
# Source: nginx/templates/hpa.yaml
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
spec:
  minReplicas: 2
  maxReplicas: 4
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
  namespace: other
spec:
  replicas: 1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: free
spec:
  template: {}
`

func TestManifestSetsField(t *testing.T) {
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	hpa := schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}
	cases := []struct {
		name      string
		manifest  string
		gk        schema.GroupKind
		namespace string // of the target
		target    string
		want      bool
	}{
		// The chart sets spec.replicas of the Deployment.
		{name: "sets replicas", manifest: release, gk: deployment, namespace: "shop", target: "web", want: true},
		// The chart renders the Deployment without spec.replicas
		// (externalReplicaControl).
		{name: "leaves replicas out", manifest: release, gk: deployment, namespace: "shop", target: "free", want: false},
		// Not rendered by this release at all.
		{name: "not in the release", manifest: release, gk: deployment, namespace: "shop", target: "other", want: false},
		// Same name, other kind: the Service named web is no Deployment.
		{name: "kind must match", manifest: release, gk: schema.GroupKind{Kind: "Service"}, namespace: "shop", target: "web", want: false},
		// A document with an explicit namespace matches only there.
		{name: "other namespace", manifest: release, gk: deployment, namespace: "shop", target: "worker", want: false},
		{name: "its namespace", manifest: release, gk: deployment, namespace: "other", target: "worker", want: true},
		// An HPA's count is minReplicas.
		{name: "hpa minReplicas", manifest: release, gk: hpa, namespace: "shop", target: "api", want: true},
		// An empty release (status written before any render).
		{name: "empty manifest", manifest: "", gk: deployment, namespace: "shop", target: "web", want: false},
		// replicas: null is not set.
		{name: "null replicas", manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: null}\n", gk: deployment, namespace: "shop", target: "web", want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := manifestSetsField(tc.manifest, tc.gk, tc.namespace, tc.target, countField(tc.gk))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
	t.Run("not YAML", func(t *testing.T) {
		_, err := manifestSetsField("kind: [", deployment, "shop", "web", countField(deployment))
		NewWithT(t).Expect(err).To(HaveOccurred())
	})
}

// TestHelmReleaseOwnersFollowWatches: the kinds whose custom resources are
// checked for a release manifest are the kinds of watches.yaml.
func TestHelmReleaseOwnersFollowWatches(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "watches.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var watches []struct{ Group, Kind string }
	g.Expect(yaml.Unmarshal(data, &watches)).To(Succeed())
	want := map[schema.GroupKind]bool{}
	for _, w := range watches {
		want[schema.GroupKind{Group: w.Group, Kind: w.Kind}] = true
	}
	g.Expect(helmReleaseOwners).To(Equal(want))
}

func TestIndexHPATarget(t *testing.T) {
	g := NewWithT(t)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
	}}
	// The same key as a CronScaler of that Deployment.
	g.Expect(indexHPATarget(hpa)).To(Equal([]string{"apps/Deployment/web"}))
	hpa.Spec.ScaleTargetRef.APIVersion = "a/b/c"
	g.Expect(indexHPATarget(hpa)).To(BeNil())
}

// startController runs the CronScaler controller, as the sidecar sets it
// up, in a manager of its own that sees one namespace, until the test ends.
// Its clock is the real one: tests use jobs that fire every minute, so
// that one job is always active.
func startController(t *testing.T, ns string) {
	t.Helper()
	mgr, err := ctrl.NewManager(suite.cfg, ctrl.Options{
		Scheme:                 suite.scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetupWithManager(mgr, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// everyMinute is a CronScaler of a Deployment with one job that fires
// every minute, so it is always active.
func everyMinute(ns, name, target string, replicas int32) *autoscalingv1alpha1.CronScaler {
	cs := deploymentScaler(ns, name, autoscalingv1alpha1.ScheduleJob{Name: "always", Schedule: "* * * * *", Replicas: replicas})
	cs.Spec.ScaleTargetRef.Name = target
	return cs
}

// observer reads what the tests look at, straight from the API server.
type observer struct {
	g   Gomega
	c   client.Client
	ctx context.Context
	ns  string
}

func (o observer) ready(name string) metav1.Condition {
	cs := &autoscalingv1alpha1.CronScaler{}
	o.g.Expect(o.c.Get(o.ctx, client.ObjectKey{Namespace: o.ns, Name: name}, cs)).To(Succeed())
	if c := meta.FindStatusCondition(cs.Status.Conditions, ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func (o observer) reason(name string) func() string {
	return func() string { return o.ready(name).Reason }
}

func (o observer) deployment(name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	o.g.Expect(o.c.Get(o.ctx, client.ObjectKey{Namespace: o.ns, Name: name}, d)).To(Succeed())
	return d
}

func (o observer) replicas(name string) func() int32 {
	return func() int32 { return *o.deployment(name).Spec.Replicas }
}

// generation and count of a Deployment, to check nobody writes to it.
func (o observer) written(name string) func() [2]int64 {
	return func() [2]int64 {
		d := o.deployment(name)
		return [2]int64{d.Generation, int64(*d.Spec.Replicas)}
	}
}

// events lists the Events on an object as "Type Reason Message".
func (o observer) events(kind, name string) func() []string {
	return func() []string {
		var list corev1.EventList
		o.g.Expect(o.c.List(o.ctx, &list, client.InNamespace(o.ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
				out = append(out, strings.Join([]string{e.Type, e.Reason, e.Message}, " "))
			}
		}
		return out
	}
}

// TestTwoCronScalersOneTarget: the fight (generation 1 → 2159 in
// 15 s). The younger CronScaler says who owns the Deployment and leaves it
// alone; when the owner goes, it takes over without being touched.
func TestTwoCronScalersOneTarget(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "rivals"
	namespace(g, c, ns)
	startController(t, ns)
	o := observer{g: g, c: c, ctx: ctx, ns: ns}
	g.Expect(c.Create(ctx, deployment(ns, "web", 1))).To(Succeed())

	g.Expect(c.Create(ctx, everyMinute(ns, "a", "web", 3))).To(Succeed())
	g.Eventually(o.replicas("web")).WithTimeout(10 * time.Second).Should(Equal(int32(3)))
	g.Expect(c.Create(ctx, everyMinute(ns, "b", "web", 5))).To(Succeed())

	g.Eventually(o.reason("b")).WithTimeout(10 * time.Second).Should(Equal(ReasonAmbiguousTarget))
	ready := o.ready("b")
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Message).To(Equal("Deployment web is already scaled by CronScaler rivals/a (the oldest CronScaler for it); this one does not touch it"))
	g.Eventually(o.events("CronScaler", "b")).WithTimeout(10 * time.Second).Should(ContainElement(
		"Warning AmbiguousTarget " + ready.Message))

	t.Log("nobody writes to the Deployment any more")
	settled := o.written("web")()
	g.Consistently(o.written("web")).WithTimeout(4 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(settled))
	g.Expect(o.reason("a")()).To(Equal(ReasonScaled))
	b := &autoscalingv1alpha1.CronScaler{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, b)).To(Succeed())
	g.Expect(b.Annotations).NotTo(HaveKey(autoscalingv1alpha1.OriginalReplicasAnnotation), "the loser never read the target")

	t.Log("the owner is deleted: the other one takes over")
	g.Expect(c.Delete(ctx, &autoscalingv1alpha1.CronScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}})).To(Succeed())
	g.Eventually(o.replicas("web")).WithTimeout(10 * time.Second).Should(Equal(int32(5)))
	g.Eventually(o.reason("b")).WithTimeout(10 * time.Second).Should(Equal(ReasonScaled))
}

// TestCronScalerLeavesHPATargetAlone: a Deployment an HPA scales is not
// the CronScaler's to write; it says to target the HPA, and scales once
// the HPA is gone.
func TestCronScalerLeavesHPATargetAlone(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "hpa-owned"
	namespace(g, c, ns)
	startController(t, ns)
	o := observer{g: g, c: c, ctx: ctx, ns: ns}
	g.Expect(c.Create(ctx, deployment(ns, "api", 2))).To(Succeed())
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-cpu"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 4,
		},
	}
	g.Expect(c.Create(ctx, hpa)).To(Succeed())
	before := o.written("api")()
	g.Expect(c.Create(ctx, everyMinute(ns, "api", "api", 5))).To(Succeed())

	g.Eventually(o.reason("api")).WithTimeout(10 * time.Second).Should(Equal(ReasonTargetManagedByHPA))
	ready := o.ready("api")
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Message).To(And(
		ContainSubstring("HorizontalPodAutoscaler hpa-owned/api-cpu"),
		ContainSubstring("kind: HorizontalPodAutoscaler, name: api-cpu"),
		ContainSubstring("minReplicas")))
	g.Eventually(o.events("CronScaler", "api")).WithTimeout(10 * time.Second).Should(ContainElement(HavePrefix("Warning TargetManagedByHPA ")))
	g.Consistently(o.written("api")).WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(before))

	t.Log("the HPA is deleted: the CronScaler owns the count now")
	g.Expect(c.Delete(ctx, hpa)).To(Succeed())
	g.Eventually(o.replicas("api")).WithTimeout(10 * time.Second).Should(Equal(int32(5)))
	g.Eventually(o.reason("api")).WithTimeout(10 * time.Second).Should(Equal(ReasonScaled))
}

// TestCronScalerLeavesChartCountAlone: a Deployment whose Helm release (an
// Nginx, as the Helm runtime leaves it: controller ownerReference, release
// manifest in its status) sets spec.replicas. The CronScaler reports it on
// itself and on the Nginx and writes nothing, neither to the Deployment
// nor to the Nginx; once the release's manifest leaves the count out, it
// scales.
func TestCronScalerLeavesChartCountAlone(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "chart"
	namespace(g, c, ns)
	startController(t, ns)
	o := observer{g: g, c: c, ctx: ctx, ns: ns}

	nginx := &unstructured.Unstructured{}
	nginx.SetAPIVersion("web.acme.com/v1alpha1")
	nginx.SetKind("Nginx")
	nginx.SetNamespace(ns)
	nginx.SetName("web")
	g.Expect(unstructured.SetNestedField(nginx.Object, int64(2), "spec", "replicaCount")).To(Succeed())
	g.Expect(c.Create(ctx, nginx)).To(Succeed())
	setManifest := func(manifest string) {
		g.Expect(unstructured.SetNestedField(nginx.Object, map[string]any{"name": "web", "manifest": manifest}, "status", "deployedRelease")).To(Succeed())
		g.Expect(c.Status().Update(ctx, nginx)).To(Succeed())
	}
	setManifest(release)

	dep := deployment(ns, "web", 2)
	dep.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "web.acme.com/v1alpha1", Kind: "Nginx", Name: "web", UID: nginx.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	g.Expect(c.Create(ctx, dep)).To(Succeed())
	before := o.written("web")()
	g.Expect(c.Create(ctx, everyMinute(ns, "web", "web", 5))).To(Succeed())

	g.Eventually(o.reason("web")).WithTimeout(10 * time.Second).Should(Equal(ReasonReplicasSetByChart))
	ready := o.ready("web")
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Message).To(And(
		ContainSubstring("Deployment web belongs to Nginx chart/web, whose chart sets its spec.replicas"),
		ContainSubstring("Set externalReplicaControl: true on Nginx web")))
	g.Eventually(o.events("CronScaler", "web")).WithTimeout(10 * time.Second).Should(ContainElement(HavePrefix("Warning ReplicasSetByChart ")))
	g.Eventually(o.events("Nginx", "web")).WithTimeout(10 * time.Second).Should(ConsistOf(
		"Warning ReplicasSetByChart CronScaler chart/web cannot scale Deployment web: this Nginx's chart sets its spec.replicas. " +
			"Set externalReplicaControl: true (or what the chart offers) to leave the count to the CronScaler"))
	nginxVersion := func() string {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(nginx.GroupVersionKind())
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(nginx), u)).To(Succeed())
		return u.GetResourceVersion()
	}
	g.Expect(nginxVersion()).To(Equal(nginx.GetResourceVersion()), "the Nginx is not written")
	g.Consistently(o.written("web")).WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(before))
	g.Expect(o.events("Nginx", "web")()).To(HaveLen(1), "one Event while the state lasts")

	t.Log("the release now leaves the count out: the periodic look scales")
	setManifest(strings.Replace(release, "  replicas: 2\n", "", 1))
	g.Eventually(o.replicas("web")).WithTimeout(recheckChart + 15*time.Second).Should(Equal(int32(5)))
	g.Eventually(o.reason("web")).WithTimeout(10 * time.Second).Should(Equal(ReasonScaled))
}

// TestCronScalerWaitsForItsTarget: a missing target is a condition and a
// Warning, not an error retried with backoff; the Deployment's creation
// alone (the watch) brings the CronScaler back.
func TestCronScalerWaitsForItsTarget(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "late"
	namespace(g, c, ns)
	startController(t, ns)
	o := observer{g: g, c: c, ctx: ctx, ns: ns}
	g.Expect(c.Create(ctx, everyMinute(ns, "web", "web", 4))).To(Succeed())

	g.Eventually(o.reason("web")).WithTimeout(10 * time.Second).Should(Equal(ReasonTargetNotFound))
	g.Expect(o.ready("web").Message).To(Equal("Deployment web not found in namespace late; it is scaled once it exists"))
	g.Eventually(o.events("CronScaler", "web")).WithTimeout(10 * time.Second).Should(ConsistOf(
		"Warning TargetNotFound Deployment web not found in namespace late; it is scaled once it exists"))

	g.Expect(c.Create(ctx, deployment(ns, "web", 1))).To(Succeed())
	g.Eventually(o.replicas("web")).WithTimeout(10 * time.Second).Should(Equal(int32(4)))
	g.Eventually(o.reason("web")).WithTimeout(10 * time.Second).Should(Equal(ReasonScaled))
}

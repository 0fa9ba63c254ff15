package helmruntime

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/readiness"
	"github.com/acme/platform-operator/internal/operator/readycontroller"
)

// The test API server runs no controller manager: nothing turns a
// Deployment into Pods or reports its status. These tests write the
// Deployment's status themselves, as the deployment controller would, and
// watch Ready follow it.

// expectReady waits until cr's Ready condition has status and reason, and
// returns the resource as read then.
func expectReady(t *testing.T, cr *unstructured.Unstructured, status, reason string) *unstructured.Unstructured {
	t.Helper()
	var cur *unstructured.Unstructured
	NewWithT(t).Eventually(func(g Gomega) {
		var err error
		cur, err = getCR(t.Context(), suite.k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		c := conditionOf(cur, readycontroller.ConditionReady)
		g.Expect(c).NotTo(BeNil(), "status: %v", cur.Object["status"])
		g.Expect([]any{c["status"], c["reason"]}).To(Equal([]any{status, reason}), "Ready: %v", c)
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	return cur
}

// setDeploymentStatus reports available of the Deployment's replicas as
// available, for its current generation.
func setDeploymentStatus(t *testing.T, ns, name string, available int32) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(suite.k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		want := ptr.Deref(dep.Spec.Replicas, 1)
		cond := corev1.ConditionFalse
		if available >= want {
			cond = corev1.ConditionTrue
		}
		dep.Status = appsv1.DeploymentStatus{
			ObservedGeneration: dep.Generation,
			Replicas:           want, UpdatedReplicas: want, ReadyReplicas: available, AvailableReplicas: available,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: cond, Reason: "Test"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
		g.Expect(suite.k8s.Status().Update(t.Context(), dep)).To(Succeed())
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
}

// expectGenerationsStamped checks that status.observedGeneration and the
// observedGeneration of every condition are cr's generation.
func expectGenerationsStamped(g Gomega, cr *unstructured.Unstructured) {
	gen := cr.GetGeneration()
	og, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
	g.Expect(og).To(Equal(gen), "status.observedGeneration")
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	g.Expect(conds).NotTo(BeEmpty())
	for _, c := range conds {
		m := c.(map[string]any)
		g.Expect(m["observedGeneration"]).To(BeEquivalentTo(gen), "condition %v", m["type"])
	}
}

// eventReasons lists the reasons of the Events recorded on cr.
func eventReasons(ctx context.Context, cr *unstructured.Unstructured) []string {
	var list corev1.EventList
	_ = suite.k8s.List(ctx, &list, client.InNamespace(cr.GetNamespace()))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID == cr.GetUID() {
			out = append(out, e.Reason)
		}
	}
	return out
}

// TestReadyFollowsTheDeployment: Ready is False while the Deployment is not
// available and True once it is, within the watch's latency; it goes back
// to False when it stops being available, after a spec edit until the new
// generation is rolled out, and when the Deployment is deleted. Every
// condition carries the generation it describes; transitions are Events.
func TestReadyFollowsTheDeployment(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	cr := helmtest.CR("Widget", ns, "shop", map[string]any{"replicas": 2}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	cur := expectReady(t, cr, "False", readiness.ReasonProgressing)
	expectGenerationsStamped(g, cur)

	start := time.Now()
	setDeploymentStatus(t, ns, "shop", 2)
	cur = expectReady(t, cr, "True", readiness.ReasonReady)
	t.Logf("Ready=True %s after the Deployment reported available", time.Since(start).Round(time.Millisecond))
	expectGenerationsStamped(g, cur)

	start = time.Now()
	setDeploymentStatus(t, ns, "shop", 0)
	cur = expectReady(t, cr, "False", readiness.ReasonProgressing)
	t.Logf("Ready=False %s after the Deployment lost its available replicas", time.Since(start).Round(time.Millisecond))
	g.Expect(conditionOf(cur, readycontroller.ConditionReady)["message"]).To(ContainSubstring("Deployment shop: "))
	g.Eventually(func() []string { return eventReasons(ctx, cr) }).WithTimeout(eventually).WithPolling(poll).
		Should(ContainElements(readycontroller.ReasonBecameReady, readycontroller.ReasonNotReady))

	// A spec edit: right after the upgrade the new generation is not
	// rolled out, so Ready is False for generation 2, never True for it
	// before the Deployment reports the new generation.
	setDeploymentStatus(t, ns, "shop", 2)
	expectReady(t, cr, "True", readiness.ReasonReady)
	cur, err := getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cur.Object, int64(3), "spec", "replicas")).To(Succeed())
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cur.GetGeneration()).To(BeEquivalentTo(2))
		c := conditionOf(cur, readycontroller.ConditionReady)
		g.Expect(c["observedGeneration"]).To(BeEquivalentTo(2))
		g.Expect(c["status"]).To(Equal("False"), "Ready for generation 2 before its rollout")
		expectGenerationsStamped(g, cur)
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	setDeploymentStatus(t, ns, "shop", 3)
	cur = expectReady(t, cr, "True", readiness.ReasonReady)
	g.Expect(conditionOf(cur, readycontroller.ConditionReady)["observedGeneration"]).To(BeEquivalentTo(2))

	// A deleted Deployment: the release is not ready until the recreated
	// one is available again.
	waitSettled(t, k8s, cr)
	g.Expect(k8s.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})).To(Succeed())
	expectReady(t, cr, "False", readiness.ReasonProgressing)
	setDeploymentStatus(t, ns, "shop", 3)
	expectReady(t, cr, "True", readiness.ReasonReady)
}

// TestReadyOfAFailedRelease: an install the API server refuses leaves the
// release failed, and Ready says so with the failure's message.
func TestReadyOfAFailedRelease(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	ns := newTestNamespace(t, k8s)
	cr := helmtest.CR("Widget", ns, "broken", map[string]any{"replicas": -1}, nil)
	NewWithT(t).Expect(k8s.Create(t.Context(), cr)).To(Succeed())
	cur := expectReady(t, cr, "False", readiness.ReasonReleaseFailed)
	NewWithT(t).Expect(conditionOf(cur, readycontroller.ConditionReady)["message"]).To(ContainSubstring("replicas"))
}

// TestReadyOfAClusterScopedKind: a tenant's release (a Namespace and a
// ConfigMap in it) is ready once the namespace is Active.
func TestReadyOfAClusterScopedKind(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	name := "ready-" + rand.String(5)
	cr := helmtest.CR("Tenant", "", name, map[string]any{"namespace": "tenant-" + name}, nil)
	NewWithT(t).Expect(k8s.Create(t.Context(), cr)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cr) })
	cur := expectReady(t, cr, "True", readiness.ReasonReady)
	NewWithT(t).Expect(conditionOf(cur, readycontroller.ConditionReady)["message"]).To(Equal("all 2 objects of the release are ready"))
}

// createPod creates a Pod of the release's Deployment (the test API server
// has no controllers that would) with the given status.
func createPod(t *testing.T, ns, release, name string, claim string, status corev1.PodStatus) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app.kubernetes.io/instance": release}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
	}
	if claim != "" {
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}}}
	}
	g := NewWithT(t)
	g.Expect(suite.k8s.Create(t.Context(), pod)).To(Succeed())
	setPodStatus(t, pod, status)
}

func setPodStatus(t *testing.T, pod *corev1.Pod, status corev1.PodStatus) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur := &corev1.Pod{}
		g.Expect(suite.k8s.Get(t.Context(), client.ObjectKeyFromObject(pod), cur)).To(Succeed())
		cur.Status = status
		g.Expect(suite.k8s.Status().Update(t.Context(), cur)).To(Succeed())
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
}

// expectReadyMessage waits until cr's Ready message matches m.
func expectReadyMessage(t *testing.T, cr *unstructured.Unstructured, m types.GomegaMatcher) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur, err := getCR(t.Context(), suite.k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		c := conditionOf(cur, readycontroller.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c["message"]).To(m)
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
}

// TestReadyFollowsWaitingPodsByWatch: while a release's Deployment waits
// for its Pods, Ready names why each Pod is not ready (not scheduled, an
// image that cannot be pulled, a claim that is not bound) and follows
// every change of the Pods and claims, which the runtime watches: it
// reads them from its cache and sends no request for them.
func TestReadyFollowsWaitingPodsByWatch(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)
	from := suite.requests.count(ns)

	cr := helmtest.CR("Widget", ns, "waits", map[string]any{"replicas": 1}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	setDeploymentStatus(t, ns, "waits", 0)

	unscheduled := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 Insufficient cpu.",
	}}}
	createPod(t, ns, "waits", "waits-1", "", unscheduled)
	expectReadyMessage(t, cr, ContainSubstring("Pod waits-1: not scheduled: 0/3 nodes are available: 3 Insufficient cpu."))

	// The Pod is scheduled and its image cannot be pulled: nothing of the
	// release changes, only the Pod.
	pulling := corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", Image: "example.com/app:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}},
	}}}
	setPodStatus(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "waits-1"}}, pulling)
	expectReadyMessage(t, cr, ContainSubstring("Pod waits-1: ImagePullBackOff (example.com/app:1)"))

	// A second Pod that mounts a claim which is not bound; then the claim
	// is bound.
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	g.Expect(k8s.Create(ctx, claim)).To(Succeed())
	claim.Status.Phase = corev1.ClaimPending
	g.Expect(k8s.Status().Update(ctx, claim)).To(Succeed())
	createPod(t, ns, "waits", "waits-2", "data", corev1.PodStatus{Phase: corev1.PodPending})
	expectReadyMessage(t, cr, ContainSubstring("PersistentVolumeClaim data: Pending"))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
	claim.Status.Phase = corev1.ClaimBound
	g.Expect(k8s.Status().Update(ctx, claim)).To(Succeed())
	expectReadyMessage(t, cr, And(ContainSubstring("Pod waits-1: ImagePullBackOff"), Not(ContainSubstring("PersistentVolumeClaim"))))

	// The Deployment becomes available: Ready, and its Pods no longer
	// wake the release.
	setDeploymentStatus(t, ns, "waits", 1)
	expectReady(t, cr, "True", readiness.ReasonReady)

	for _, r := range suite.requests.since(ns, from) {
		g.Expect(r).NotTo(BeElementOf("list pods", "get pods", "list persistentvolumeclaims", "get persistentvolumeclaims"),
			"the Pods of a waiting release are read from the cache; requests:\n%s", itemise(suite.requests.since(ns, from)))
	}
}

package helmruntime

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/readiness"
	"github.com/acme/platform-operator/internal/operator/readycontroller"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// revisions lists the stored revisions of release name in ns, oldest first.
func revisions(t *testing.T, ns, name string) []int {
	t.Helper()
	secrets, err := releaseSecrets(t.Context(), suite.k8s, ns, name)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var out []int
	for _, s := range secrets {
		v, _ := strconv.Atoi(s.Labels["version"])
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

// deploymentReplicas is the replicas the release's Deployment asks for.
func deploymentReplicas(t *testing.T, ns, name string) int32 {
	t.Helper()
	dep := &appsv1.Deployment{}
	NewWithT(t).Expect(suite.k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
	return *dep.Spec.Replicas
}

// editSpec sets spec.replicas of cr and annotations on it.
func editCR(t *testing.T, cr *unstructured.Unstructured, replicas int64, annotations map[string]string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur, err := getCR(t.Context(), suite.k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		if replicas > 0 {
			g.Expect(unstructured.SetNestedField(cur.Object, replicas, "spec", "replicas")).To(Succeed())
		}
		a := cur.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		for k, v := range annotations {
			a[k] = v
		}
		cur.SetAnnotations(a)
		g.Expect(suite.k8s.Update(t.Context(), cur)).To(Succeed())
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
}

// TestRemediationRollsBackAnUpgrade: an upgrade whose Deployment never
// becomes available is rolled back to the Ready revision before it once
// its deadline passes; Ready returns to True, Stalled, the Event and the
// history say what happened, exactly one rollback revision is stored and
// the spec is not tried again, until the retry annotation asks. A new
// spec clears Stalled.
func TestRemediationRollsBackAnUpgrade(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	cr := helmtest.CR("Widget", ns, "shop", map[string]any{"replicas": int64(2)}, nil)
	cr.SetAnnotations(map[string]string{watchconfig.ReadyTimeoutAnnotation: "10s"})
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	setDeploymentStatus(t, ns, "shop", 2)
	expectReady(t, cr, "True", readiness.ReasonReady)

	// The edit: revision 2, whose third replica never becomes available.
	editCR(t, cr, 3, nil)
	g.Eventually(func() []int { return revisions(t, ns, "shop") }).WithTimeout(eventually).WithPolling(poll).Should(Equal([]int{1, 2}))
	edited := time.Now()
	g.Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, dep)).To(Succeed())
		g.Expect(*dep.Spec.Replicas).To(BeEquivalentTo(3))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	setDeploymentStatus(t, ns, "shop", 2)

	// The deadline passes: revision 3 restores revision 1.
	g.Eventually(func() []int { return revisions(t, ns, "shop") }).WithTimeout(eventually + 10*time.Second).WithPolling(poll).Should(Equal([]int{1, 2, 3}))
	t.Logf("rolled back %s after the edit (deadline 10s)", time.Since(edited).Round(100*time.Millisecond))
	g.Eventually(func() int32 { return deploymentReplicas(t, ns, "shop") }).WithTimeout(eventually).WithPolling(poll).Should(BeEquivalentTo(2))
	setDeploymentStatus(t, ns, "shop", 2)
	cur := expectReady(t, cr, "True", readiness.ReasonReady)

	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		stalled := conditionOf(cur, readycontroller.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil(), "status: %v", cur.Object["status"])
		g.Expect(stalled["status"]).To(Equal("True"))
		g.Expect(stalled["reason"]).To(Equal(readycontroller.ReasonRolledBack))
		g.Expect(stalled["message"]).To(And(ContainSubstring("revision 2 did not become Ready within 10s"), ContainSubstring("rolled back to revision 1"), ContainSubstring(watchconfig.RetryAnnotation)))
		rec, ok := actionpath.ReadRemediation(cur)
		g.Expect(ok).To(BeTrue())
		g.Expect(rec).To(gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{"Revision": Equal(2), "Action": Equal("rollback"), "To": Equal(1), "RolledBackAs": Equal(3), "Generation": BeEquivalentTo(2)}))
		history := readycontroller.ReadHistory(nestedStatus(cur))
		g.Expect(history).To(HaveLen(3))
		g.Expect([]int{history[0].Revision, history[1].Revision, history[2].Revision}).To(Equal([]int{3, 2, 1}))
		g.Expect([]bool{history[0].Ready, history[1].Ready, history[2].Ready}).To(Equal([]bool{true, false, true}))
		g.Expect(history[0].Remediation).To(Equal("rollback to revision 1"))
		g.Expect(history[1].Remediation).To(Equal("not Ready in time; rolled back to revision 1"))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	g.Expect(eventReasons(ctx, cur)).To(ContainElement(readycontroller.ReasonRolledBack))

	// No loop: the held spec is not upgraded again.
	g.Consistently(func() []int { return revisions(t, ns, "shop") }).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal([]int{1, 2, 3}))
	g.Expect(deploymentReplicas(t, ns, "shop")).To(BeEquivalentTo(2))

	// A person asks for another try: the spec is applied again.
	editCR(t, cr, 0, map[string]string{watchconfig.RetryAnnotation: "1"})
	g.Eventually(func() []int { return revisions(t, ns, "shop") }).WithTimeout(eventually).WithPolling(poll).Should(Equal([]int{1, 2, 3, 4}))
	g.Eventually(func() int32 { return deploymentReplicas(t, ns, "shop") }).WithTimeout(eventually).WithPolling(poll).Should(BeEquivalentTo(3))
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conditionOf(cur, readycontroller.ConditionStalled)).To(BeNil(), "Stalled once the retry applies the spec")
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())

	// It works this time.
	setDeploymentStatus(t, ns, "shop", 3)
	cur = expectReady(t, cr, "True", readiness.ReasonReady)
	history := readycontroller.ReadHistory(nestedStatus(cur))
	g.Expect(history[0].Revision).To(Equal(4))
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(readycontroller.ReadHistory(nestedStatus(cur))[0].Ready).To(BeTrue())
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
}

// TestRemediationLeavesAFirstInstall: an install that never becomes Ready
// is not rolled back (there is nothing to go back to): Stalled says so,
// and nothing more is stored.
func TestRemediationLeavesAFirstInstall(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ns := newTestNamespace(t, k8s)
	cr := helmtest.CR("Widget", ns, "new", map[string]any{"replicas": int64(1)}, nil)
	cr.SetAnnotations(map[string]string{watchconfig.ReadyTimeoutAnnotation: "10s"})
	g.Expect(k8s.Create(t.Context(), cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	g.Eventually(func(g Gomega) {
		cur, err := getCR(t.Context(), k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		stalled := conditionOf(cur, readycontroller.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled["reason"]).To(Equal(readycontroller.ReasonNotRemediated))
		g.Expect(stalled["message"]).To(ContainSubstring("a first install is left as it is"))
	}).WithTimeout(eventually + 10*time.Second).WithPolling(poll).Should(Succeed())
	g.Consistently(func() []int { return revisions(t, ns, "new") }).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal([]int{1}))

	// Once it becomes Ready, Stalled goes.
	setDeploymentStatus(t, ns, "new", 1)
	expectReady(t, cr, "True", readiness.ReasonReady)
	g.Eventually(func(g Gomega) {
		cur, err := getCR(context.Background(), k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conditionOf(cur, readycontroller.ConditionStalled)).To(BeNil())
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
}

// TestRemediationRetries: with one retry, a spec rolled back is upgraded
// to once more when the rollback is Ready, rolled back again, and only
// then held back and Stalled.
func TestRemediationRetries(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	cr := helmtest.CR("Widget", ns, "retried", map[string]any{"replicas": int64(1)}, nil)
	cr.SetAnnotations(map[string]string{watchconfig.ReadyTimeoutAnnotation: "10s", watchconfig.RetriesAnnotation: "1"})
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	setDeploymentStatus(t, ns, "retried", 1)
	expectReady(t, cr, "True", readiness.ReasonReady)

	editCR(t, cr, 2, nil)
	g.Eventually(func() []int { return revisions(t, ns, "retried") }).WithTimeout(eventually + 10*time.Second).WithPolling(poll).Should(Equal([]int{1, 2, 3}))
	cur, err := getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conditionOf(cur, readycontroller.ConditionStalled)).To(BeNil(), "not stalled while a retry is left")

	// The rollback becomes Ready: the spec is tried again.
	g.Eventually(func() int32 { return deploymentReplicas(t, ns, "retried") }).WithTimeout(eventually).WithPolling(poll).Should(BeEquivalentTo(1))
	setDeploymentStatus(t, ns, "retried", 1)
	g.Eventually(func() []int { return revisions(t, ns, "retried") }).WithTimeout(eventually).WithPolling(poll).Should(Equal([]int{1, 2, 3, 4}))
	g.Eventually(func() int32 { return deploymentReplicas(t, ns, "retried") }).WithTimeout(eventually).WithPolling(poll).Should(BeEquivalentTo(2))

	// It fails again: rolled back, held back, Stalled.
	g.Eventually(func() []int { return revisions(t, ns, "retried") }).WithTimeout(eventually + 10*time.Second).WithPolling(poll).Should(Equal([]int{1, 2, 3, 4, 5}))
	g.Eventually(func() int32 { return deploymentReplicas(t, ns, "retried") }).WithTimeout(eventually).WithPolling(poll).Should(BeEquivalentTo(1))
	setDeploymentStatus(t, ns, "retried", 1)
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		stalled := conditionOf(cur, readycontroller.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled["reason"]).To(Equal(readycontroller.ReasonRolledBack))
		g.Expect(stalled["message"]).To(ContainSubstring("rolled back 2 times"))
		rec, _ := actionpath.ReadRemediation(cur)
		g.Expect([]int{rec.Revision, rec.To, rec.Attempt, rec.RetriesLeft}).To(Equal([]int{4, 3, 2, 0}))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	g.Consistently(func() []int { return revisions(t, ns, "retried") }).WithTimeout(12 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal([]int{1, 2, 3, 4, 5}))
}

// completeTestPod waits for the test Pod of release name and sets its
// phase, as the kubelet would when its container exits.
func completeTestPod(t *testing.T, ns, name string, phase corev1.PodPhase) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		pod := &corev1.Pod{}
		g.Expect(suite.k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name + "-test"}, pod)).To(Succeed())
		pod.Status.Phase = phase
		g.Expect(suite.k8s.Status().Update(t.Context(), pod)).To(Succeed())
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
}

// TestChartTestsGateAndRollBack: with the test annotation, a release whose
// objects are ready is Ready only once its chart's test passed; an upgrade
// whose test fails is rolled back at once, without waiting for its
// deadline, and the test Pods are deleted.
func TestChartTestsGateAndRollBack(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	cr := helmtest.CR("Widget", ns, "tested", map[string]any{"replicas": int64(1), "test": true}, nil)
	cr.SetAnnotations(map[string]string{watchconfig.ReadyTimeoutAnnotation: "10m", watchconfig.TestAnnotation: "true"})
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	setDeploymentStatus(t, ns, "tested", 1)
	expectReady(t, cr, "False", actionpath.ReasonTesting)
	completeTestPod(t, ns, "tested", corev1.PodSucceeded)
	cur := expectReady(t, cr, "True", readiness.ReasonReady)
	g.Expect(readycontroller.ReadHistory(nestedStatus(cur))[0].Test).To(Equal("passed"))
	g.Eventually(func() []string { return eventReasons(ctx, cr) }).WithTimeout(eventually).WithPolling(poll).Should(ContainElement(actionpath.ReasonTestPassed))
	g.Eventually(func() bool {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tested-test"}, &corev1.Pod{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(eventually).WithPolling(poll).Should(BeTrue(), "the test Pod is deleted")

	// An upgrade whose test fails: rolled back long before its deadline.
	editCR(t, cr, 2, nil)
	g.Eventually(func() []int { return revisions(t, ns, "tested") }).WithTimeout(eventually).WithPolling(poll).Should(Equal([]int{1, 2}))
	g.Eventually(func() int32 { return deploymentReplicas(t, ns, "tested") }).WithTimeout(eventually).WithPolling(poll).Should(BeEquivalentTo(2))
	setDeploymentStatus(t, ns, "tested", 2)
	completeTestPod(t, ns, "tested", corev1.PodFailed)
	g.Eventually(func() []int { return revisions(t, ns, "tested") }).WithTimeout(eventually).WithPolling(poll).Should(Equal([]int{1, 2, 3}))
	g.Eventually(func() int32 { return deploymentReplicas(t, ns, "tested") }).WithTimeout(eventually).WithPolling(poll).Should(BeEquivalentTo(1))
	setDeploymentStatus(t, ns, "tested", 1)
	cur = expectReady(t, cr, "True", readiness.ReasonReady)
	stalled := conditionOf(cur, readycontroller.ConditionStalled)
	g.Expect(stalled).NotTo(BeNil())
	g.Expect(stalled["reason"]).To(Equal(readycontroller.ReasonRolledBack))
	g.Expect(stalled["message"]).To(ContainSubstring("revision 2 failed its tests (test tested-test of revision 2 failed"))
	history := readycontroller.ReadHistory(nestedStatus(cur))
	g.Expect(history[1].Test).To(Equal("failed"))
	g.Expect(eventReasons(ctx, cr)).To(ContainElement(actionpath.ReasonTestFailed))
}

// TestRemediationUninstallsAFirstInstall: with remediation-install:
// uninstall, a first install that never becomes Ready is uninstalled at
// its deadline and not installed again, until the retry annotation asks.
func TestRemediationUninstallsAFirstInstall(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)
	cr := helmtest.CR("Widget", ns, "dropped", map[string]any{"replicas": int64(1)}, nil)
	cr.SetAnnotations(map[string]string{watchconfig.ReadyTimeoutAnnotation: "10s", watchconfig.InstallRemediationAnnotation: "uninstall"})
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)

	g.Eventually(func() []int { return revisions(t, ns, "dropped") }).WithTimeout(eventually + 10*time.Second).WithPolling(poll).Should(BeEmpty())
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		stalled := conditionOf(cur, readycontroller.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled["reason"]).To(Equal(readycontroller.ReasonUninstalled))
		failed := conditionOf(cur, "ReleaseFailed")
		g.Expect(failed["status"]).To(Equal("True"))
		g.Expect(failed["reason"]).To(Equal(readycontroller.ReasonUninstalled))
		g.Expect(failed["message"]).To(ContainSubstring("not installed again until it changes"))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	g.Expect(eventReasons(ctx, cr)).To(ContainElement(readycontroller.ReasonUninstalled))
	g.Consistently(func() []int { return revisions(t, ns, "dropped") }).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(BeEmpty())

	// Asked again: installed anew, and Ready this time.
	editCR(t, cr, 0, map[string]string{watchconfig.RetryAnnotation: "1"})
	g.Eventually(func() []int { return revisions(t, ns, "dropped") }).WithTimeout(eventually).WithPolling(poll).Should(Equal([]int{1}))
	setDeploymentStatus(t, ns, "dropped", 1)
	cur := expectReady(t, cr, "True", readiness.ReasonReady)
	g.Expect(conditionOf(cur, readycontroller.ConditionStalled)).To(BeNil())
	g.Consistently(func() []int { return revisions(t, ns, "dropped") }).WithTimeout(12 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal([]int{1}))
}

// nestedStatus returns u's status, or nil.
func nestedStatus(u *unstructured.Unstructured) map[string]any {
	st, _ := u.Object["status"].(map[string]any)
	return st
}

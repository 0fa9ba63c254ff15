package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// readyObservedGeneration returns the observedGeneration of the CR's Ready
// condition, or -1.
func readyObservedGeneration(u *unstructured.Unstructured) int64 {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			if g, ok, _ := unstructured.NestedInt64(m, "observedGeneration"); ok {
				return g
			}
		}
	}
	return -1
}

// rolledOut reports whether dep has rolled out its current generation:
// the controller has seen exactly that generation (not merely one at
// least as new), and every replica is updated and available.
func rolledOut(dep *appsv1.Deployment) bool {
	return dep.Status.ObservedGeneration == dep.Generation && testkit.DeploymentAvailable(dep)
}

// TestReadyWithKubectlWait is what a script or a CI job does: `kubectl
// wait --for=condition=Ready` after an apply and right after a spec edit.
// Each wait returns only once the generation it waits for is rolled out;
// a deleted Deployment makes Ready False, then True again.
func TestReadyWithKubectlWait(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-ready", "ready-nginx" // the chart names its objects after a release whose name contains "nginx"
	env.CreateNamespace(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: name}

	applyCR(g, testkit.NginxGVK, ns, name, `replicaCount: 2`)
	start := time.Now()
	out, err := env.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx/"+name, "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("kubectl wait --for=condition=Ready returned %s after the apply", time.Since(start).Round(time.Millisecond))
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
	g.Expect(rolledOut(dep)).To(BeTrue(), "Ready before the Deployment rolled out: %+v", dep.Status)
	cr, err := env.Get(ctx, testkit.NginxGVK, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readyObservedGeneration(cr)).To(Equal(cr.GetGeneration()))

	out, err = env.Kubectl("get", "nginx", name, "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.Fields(strings.SplitN(out, "\n", 2)[0])).To(ContainElement("READY"), out)

	t.Log("edit the spec, then wait at once: the wait is for generation 2")
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"replicaCount":4}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	start = time.Now()
	out, err = env.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx/"+name, "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("kubectl wait returned %s after the spec edit", time.Since(start).Round(time.Millisecond))
	cr, err = env.Get(ctx, testkit.NginxGVK, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cr.GetGeneration()).To(BeEquivalentTo(2))
	g.Expect(readyObservedGeneration(cr)).To(BeEquivalentTo(2))
	g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
	g.Expect(*dep.Spec.Replicas).To(Equal(int32(4)))
	g.Expect(rolledOut(dep)).To(BeTrue(), "Ready before the new generation rolled out: %+v", dep.Status)

	t.Log("delete the Deployment: Ready goes False, then True once the recreated one is available")
	g.Expect(env.Client.Delete(ctx, dep)).To(Succeed())
	deleted := time.Now()
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("False"))
		g.Expect(reason).To(Equal("Progressing"))
		g.Expect(msg).To(ContainSubstring("Deployment " + name))
	}).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	t.Logf("Ready=False %s after the Deployment was deleted", time.Since(deleted).Round(time.Millisecond))
	out, err = env.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx/"+name, "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("Ready=True again %s after the deletion", time.Since(deleted).Round(time.Millisecond))
	g.Eventually(func() ([]string, error) { return env.EventReasons(ctx, ns, name) }).
		WithTimeout(10*time.Second).Should(ContainElements("Ready", "NotReady"), "a Normal Ready and a Warning NotReady Event")
	warnings, count, err := env.WarningEvents(ctx, ns, name, "NotReady")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(count).To(BeNumerically("==", 1), fmt.Sprintf("one NotReady event (for the deletion; a spec edit is no warning), no storm: %v", warnings))
}

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// TestBrokenUpgradeRollsBack: an Nginx edited to a spec whose new Pods can
// never be scheduled is rolled back to its Ready revision on its own once
// the deadline (set short here) passes. Ready returns to True, Stalled,
// the Event and status.history say what happened, exactly one rollback
// revision is stored, and the same spec is not tried again over the next
// minute.
//
// It does not run beside the parallel group: its 15 s deadlines judge
// how soon the controller manager reports a Deployment, which beside the
// rollout of 200 releases can take longer (the rollback itself was then
// judged not Ready in time).
func TestBrokenUpgradeRollsBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-remediation", "fix-nginx"
	env.CreateNamespace(t, ns)

	applyCR(g, testkit.NginxGVK, ns, name, `replicaCount: 1`)
	out, err := env.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx/"+name, "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	// The short deadline is set once the first revision is Ready: on a
	// busy cluster (this test runs beside others) its Pod may take longer.
	out, err = env.Kubectl("annotate", "-n", ns, "nginx/"+name, "platform.acme.com/ready-timeout=15s")
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("edit the spec to Pods no node can take")
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"nodeSelector":{"platform.acme.com/no-such-node":"true"}}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	edited := time.Now()
	g.Eventually(func() ([]string, error) { return env.ReleaseRevisions(ctx, ns, name) }).
		WithTimeout(30 * time.Second).Should(HaveLen(2))
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
		g.Expect([]string{status, reason}).To(Equal([]string{"False", "Progressing"}))
		g.Expect(msg).To(ContainSubstring("not scheduled"))
	}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "Ready names why the new Pod does not start")
	t.Logf("Ready named the unschedulable Pod %s after the edit", time.Since(edited).Round(100*time.Millisecond))

	g.Eventually(func() ([]string, error) { return env.ReleaseRevisions(ctx, ns, name) }).
		WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(HaveLen(3))
	t.Logf("rolled back %s after the edit (deadline 15s)", time.Since(edited).Round(100*time.Millisecond))
	desc, err := env.ReleaseDescription(ctx, ns, name, 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(desc).To(Equal("Rollback to 1"))

	g.Eventually(func(g Gomega) {
		status, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("True"), msg)
		dep := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.NodeSelector).To(BeEmpty(), "the Ready revision's Pods")
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("Ready again %s after the edit", time.Since(edited).Round(100*time.Millisecond))

	cr, err := env.Get(ctx, testkit.NginxGVK, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	status, reason, msg := testkit.Condition(cr, "Stalled")
	g.Expect([]string{status, reason}).To(Equal([]string{"True", "RolledBack"}))
	g.Expect(msg).To(And(ContainSubstring("revision 2 did not become Ready within 15s"), ContainSubstring("rolled back to revision 1")))
	history, _, _ := unstructured.NestedSlice(cr.Object, "status", "history")
	g.Expect(history).To(HaveLen(3))
	var summary []string
	for _, h := range history {
		m := h.(map[string]any)
		summary = append(summary, strings.TrimSpace(strings.Join([]string{toString(m["revision"]), toString(m["ready"]), toString(m["remediation"])}, " ")))
	}
	g.Expect(summary).To(Equal([]string{
		"3 true rollback to revision 1",
		"2 false not Ready in time; rolled back to revision 1",
		"1 true",
	}))
	g.Eventually(func() ([]string, error) { return env.EventReasons(ctx, ns, name) }).
		WithTimeout(10 * time.Second).Should(ContainElement("RolledBack"))
	out, err = env.Kubectl("get", "nginx", name, "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.Fields(strings.SplitN(out, "\n", 2)[0])).To(ContainElement("REMEDIATED"), out)

	t.Log("the spec is held back: no upgrade, no second rollback, over a minute")
	g.Consistently(func() ([]string, error) { return env.ReleaseRevisions(ctx, ns, name) }).
		WithTimeout(time.Minute).WithPolling(time.Second).Should(HaveLen(3))
	_, count, err := env.WarningEvents(ctx, ns, name, "RolledBack")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(count).To(BeNumerically("==", 1), "one rollback")

	t.Log("a new spec is applied: it is upgraded, Ready for it, and Stalled goes")
	// The short deadline goes first: beside the rollout of 200 releases
	// the controller manager may take longer than 15 s to create the
	// second Pod, and this revision is not the one under test.
	out, err = env.Kubectl("annotate", "-n", ns, "nginx/"+name, "platform.acme.com/ready-timeout-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/spec/nodeSelector"},{"op":"replace","path":"/spec/replicaCount","value":2}]`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	respecified := time.Now()
	// Budgets for a saturated cluster: this test runs beside the rollout
	// of 200 releases, whose API server requests queue with these.
	g.Eventually(func() ([]string, error) { return env.ReleaseRevisions(ctx, ns, name) }).
		WithTimeout(90 * time.Second).WithPolling(250 * time.Millisecond).Should(HaveLen(4))
	t.Logf("upgraded %s after the new spec", time.Since(respecified).Round(100*time.Millisecond))
	g.Eventually(func(g Gomega) {
		cr, err := env.Get(ctx, testkit.NginxGVK, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		status, _, msg := testkit.Condition(cr, "Ready")
		g.Expect(status).To(Equal("True"), msg)
		observed, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
		g.Expect(observed).To(Equal(cr.GetGeneration()), "Ready of the new spec")
		stalled, reason, msg := testkit.Condition(cr, "Stalled")
		g.Expect(stalled).To(BeEmpty(), reason+": "+msg)
	}).WithTimeout(90 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("Ready, not Stalled, %s after the new spec", time.Since(respecified).Round(100*time.Millisecond))
	revs, err := env.ReleaseRevisions(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(4))
}

// toString renders a JSON scalar of a status for a comparison.
func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatInt(int64(x), 10)
	}
	return ""
}

// TestReliabilityRestartDuringTheWait: the manager is killed while a
// broken upgrade waits for its deadline, and the next process takes the
// lease after the deadline passed. The upgrade is rolled back once: not
// twice, and not never.
func TestReliabilityRestartDuringTheWait(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	setupHoldHook(t)
	const ns, name, lease = "e2e-rel-remediation", "healed", "reliability-remediation.acme.com"
	env.CreateNamespace(t, ns)
	first := startHoldHookManager(t, "first", lease)

	applyCR(g, holdHookGVK, ns, name, "message: v1\nworkload: true")
	out, err := env.Kubectl("annotate", "-n", ns, "holdhook/"+name, "platform.acme.com/ready-timeout=20s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("wait", "-n", ns, "--for=condition=Ready", "holdhook/"+name, "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("an upgrade whose Pod no node takes; the manager is killed while it waits")
	applyCR(g, holdHookGVK, ns, name, "message: v2\nworkload: true\nnodeSelector: {platform.acme.com/no-such-node: \"true\"}")
	g.Eventually(func() ([]string, error) { return env.ReleaseRevisions(ctx, ns, name) }).
		WithTimeout(30 * time.Second).Should(HaveLen(2))
	edited := time.Now()
	time.Sleep(5 * time.Second)
	killProcess(first)
	startHoldHookManager(t, "second", lease)

	g.Eventually(func() ([]string, error) { return env.ReleaseRevisions(ctx, ns, name) }).
		WithTimeout(90 * time.Second).WithPolling(250 * time.Millisecond).Should(HaveLen(3))
	t.Logf("rolled back %s after the upgrade (deadline 20s, the manager killed at 5s)", time.Since(edited).Round(100*time.Millisecond))
	desc, err := env.ReleaseDescription(ctx, ns, name, 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(desc).To(Equal("Rollback to 1"))
	out, err = env.Kubectl("wait", "-n", ns, "--for=condition=Ready", "holdhook/"+name, "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Consistently(func() ([]string, error) { return env.ReleaseRevisions(ctx, ns, name) }).
		WithTimeout(20*time.Second).WithPolling(time.Second).Should(HaveLen(3), "one rollback, not two")
	status, reason, msg := env.ConditionOf(g, holdHookGVK, ns, name, "Stalled")
	g.Expect([]string{status, reason}).To(Equal([]string{"True", "RolledBack"}), msg)
}

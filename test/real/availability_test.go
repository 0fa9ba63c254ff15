package real

import (
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/acme/platform-operator/test/testkit"
)

// TestAvailabilityThroughRestarts: while a client edits a spec every
// 200 ms, a helm upgrade of the operator to its chart's next version
// (both Pods replaced, a new Pod ready before an old one stops, which
// drains first) and a SIGKILL of the leading manager refuse no edit; the
// upgrade gives no other release a new revision; a SIGKILL of a sidecar (the webhook's server) is
// measured. After the manager's kill the standby takes over, and a spec
// edit is reconciled within the failover time docs/operations.md states.
func TestAvailabilityThroughRestarts(t *testing.T) {
	g := NewWithT(t)
	const ns = "real-availability"
	cluster.CreateNamespace(t, ns)
	cluster.Apply(t, ns, `apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: edited
spec:
  replicaCount: 0
`)
	cluster.Apply(t, ns, `apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: steady
spec:
  replicaCount: 0
`)
	expectNginxDeployed(t, ns, "edited")
	expectNginxDeployed(t, ns, "steady")
	g.Expect(operatorPods(g)).To(HaveLen(2))
	// Every release but the one edited throughout keeps its revisions.
	unedited := func(g Gomega) map[string]int {
		r := releaseRevisions(g)
		delete(r, ns+"/edited")
		return r
	}
	before := unedited(g)
	g.Expect(before).To(HaveKeyWithValue(ns+"/steady", 1))

	measure := func(what string, disrupt func()) (int, []string) {
		e := testkit.StartEditor(cluster.Client, testkit.NginxGVK, ns, "edited", "podAnnotations", 200*time.Millisecond)
		time.Sleep(2 * time.Second)
		disrupt()
		time.Sleep(5 * time.Second)
		r := e.Finish()
		t.Logf("%s: %d edits, %d refused, slowest admission %s", what, r.Sent, len(r.Refused), r.Slowest.Round(time.Millisecond))
		for _, msg := range r.Refused {
			t.Logf("  refused: %s", msg)
		}
		return r.Sent, r.Refused
	}

	sent, refused := measure("helm upgrade to the chart's next version", func() { upgradeChart(t, g) })
	g.Expect(sent).To(BeNumerically(">", 50))
	g.Expect(refused).To(BeEmpty(), "no edit refused through the operator's upgrade")
	// The new leader has read every resource again by now; give it a while
	// more to act.
	g.Consistently(func(g Gomega) {
		g.Expect(unedited(g)).To(Equal(before))
	}).WithTimeout(10 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
	t.Logf("%d other releases, none with a new revision", len(before))

	// The leading manager killed: the webhook (the sidecar) is untouched,
	// and the other replica's manager, or the restarted one, takes the
	// Lease once it expires.
	g.Eventually(func(g Gomega) { g.Expect(operatorPods(g)).To(HaveLen(2)) }).WithTimeout(time.Minute).Should(Succeed())
	var killed time.Time
	_, refused = measure("SIGKILL of the leading manager", func() {
		g.Expect(syscall.Kill(containerPID(g, operatorPod(g), "manager"), syscall.SIGKILL)).To(Succeed())
		killed = time.Now()
	})
	g.Expect(refused).To(BeEmpty(), "no edit refused when a manager dies")
	cluster.Apply(t, ns, `apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: edited
spec:
  replicaCount: 0
  podAnnotations: {after: failover}
`)
	g.Eventually(func(g Gomega) {
		status, reason, msg := cluster.ConditionOf(g, testkit.NginxGVK, ns, "edited", "Deployed")
		g.Expect([]string{status, reason}).To(Equal([]string{"True", "UpgradeSuccessful"}), msg)
	}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("failover: an edit made after the SIGKILL was reconciled %s after it (Lease duration 12s)", time.Since(killed).Round(time.Millisecond))
	g.Expect(time.Since(killed)).To(BeNumerically("<", 30*time.Second), "docs/operations.md: a spec edit is reconciled within 30s of a leader's death")

	// A sidecar killed: requests in flight on it, or sent to it before the
	// kubelet and kube-proxy see it gone, fail; the count is the figure.
	g.Eventually(func(g Gomega) { g.Expect(operatorPods(g)).To(HaveLen(2)) }).WithTimeout(time.Minute).Should(Succeed())
	sent, refused = measure("SIGKILL of one sidecar (the webhook's server)", func() {
		g.Expect(syscall.Kill(containerPID(g, operatorPods(g)[0], "extensions"), syscall.SIGKILL)).To(Succeed())
	})
	for _, r := range refused {
		g.Expect(r).To(Or(ContainSubstring("failed calling webhook"), ContainSubstring("context deadline exceeded")), "only the webhook call fails")
	}
	t.Logf("a sidecar's SIGKILL refused %d of %d edits", len(refused), sent)
	out, err := cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

package real

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// editor applies a spec edit of one Nginx every 200 ms as a server-side
// dry run: the API server calls the admission webhook for it as for a real
// edit (the configuration's matchConditions see a changed spec), and
// nothing is stored, so the operator has no upgrade to do.
type editor struct {
	ns, name string
	stop     chan struct{}
	done     chan struct{}

	mu      sync.Mutex
	sent    int
	refused []string
	slowest time.Duration
}

func startEditor(ns, name string) *editor {
	e := &editor{ns: ns, name: name, stop: make(chan struct{}), done: make(chan struct{})}
	go e.run()
	return e
}

func (e *editor) run() {
	defer close(e.done)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-e.stop:
			return
		case <-tick.C:
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(testkit.NginxGVK)
		obj.SetNamespace(e.ns)
		obj.SetName(e.name)
		patch := fmt.Sprintf(`{"spec":{"podAnnotations":{"edit":"%d"}}}`, i)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		start := time.Now()
		err := cluster.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.DryRunAll)
		took := time.Since(start)
		cancel()
		e.mu.Lock()
		e.sent++
		e.slowest = max(e.slowest, took)
		if err != nil {
			e.refused = append(e.refused, time.Now().Format("15:04:05.000")+" "+err.Error())
		}
		e.mu.Unlock()
	}
}

// finish stops the editor and returns what it saw.
func (e *editor) finish() (sent int, refused []string, slowest time.Duration) {
	close(e.stop)
	<-e.done
	return e.sent, e.refused, e.slowest
}

// TestAvailabilityThroughRestarts: while a client edits a spec every
// 200 ms, a rollout restart of the operator (a new Pod ready before an old
// one stops, which drains first) and a SIGKILL of the leading manager
// refuse no edit; a SIGKILL of a sidecar (the webhook's server) is
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
	expectNginxDeployed(t, ns, "edited")
	g.Expect(operatorPods(g)).To(HaveLen(2))

	measure := func(what string, disrupt func()) (int, []string) {
		e := startEditor(ns, "edited")
		time.Sleep(2 * time.Second)
		disrupt()
		time.Sleep(5 * time.Second)
		sent, refused, slowest := e.finish()
		t.Logf("%s: %d edits, %d refused, slowest admission %s", what, sent, len(refused), slowest.Round(time.Millisecond))
		for _, r := range refused {
			t.Logf("  refused: %s", r)
		}
		return sent, refused
	}

	sent, refused := measure("kubectl rollout restart", func() {
		out, err := cluster.Kubectl("rollout", "restart", "-n", operatorNamespace, "deployment/"+operatorDeployment)
		g.Expect(err).NotTo(HaveOccurred(), out)
		out, err = cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=300s")
		g.Expect(err).NotTo(HaveOccurred(), out)
	})
	g.Expect(sent).To(BeNumerically(">", 50))
	g.Expect(refused).To(BeEmpty(), "no edit refused through a rollout restart")

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

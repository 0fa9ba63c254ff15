package real

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/acme/platform-operator/test/testkit"
)

// restarts returns the restart count of each container of the operator Pod.
func restarts(g Gomega) map[string]int32 {
	out := map[string]int32{}
	for _, cs := range operatorPod(g).Status.ContainerStatuses {
		out[cs.Name] = cs.RestartCount
	}
	return out
}

// TestOperatorContainerKilled: SIGKILL of the Helm runtime's process in the
// operator Pod; the kubelet restarts the container, a resource created
// meanwhile is installed, and an existing release is not touched.
func TestOperatorContainerKilled(t *testing.T) {
	g := NewWithT(t)
	const ns = "real-restart"
	cluster.CreateNamespace(t, ns)
	cluster.Apply(t, ns, nginxManifest("before", "installed before the kill"))
	expectNginxDeployed(t, ns, "before")
	ctx := context.Background()
	revisions, err := cluster.ReleaseRevisions(ctx, ns, "before")
	g.Expect(err).To(Succeed())
	initial := restarts(g)

	out, err := exec.Command("pgrep", "-f", "^/manager ").Output()
	g.Expect(err).NotTo(HaveOccurred(), "the manager process of the operator Pod")
	pids := strings.Fields(string(out))
	g.Expect(pids).To(HaveLen(1))
	pid, err := strconv.Atoi(pids[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	killed := time.Now()
	cluster.Apply(t, ns, nginxManifest("during", "created while the manager was down"))

	g.Eventually(func(g Gomega) {
		g.Expect(restarts(g)["manager"]).To(Equal(initial["manager"] + 1))
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	expectNginxDeployed(t, ns, "during")
	t.Logf("the Nginx created after the kill was Deployed %s after it", time.Since(killed).Round(time.Millisecond))
	g.Expect(cluster.ReleaseRevisions(ctx, ns, "before")).To(Equal(revisions), "no new revision of the existing release")
	g.Expect(restarts(g)["extensions"]).To(Equal(initial["extensions"]))
	out2, err := cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=120s")
	g.Expect(err).NotTo(HaveOccurred(), out2)
}

func expectNginxDeployed(t *testing.T, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		status, _, msg := cluster.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
}

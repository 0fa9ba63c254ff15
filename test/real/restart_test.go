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
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// restarts returns the restart count of each container of the operator Pod.
func restarts(g Gomega) map[string]int32 {
	out := map[string]int32{}
	for _, cs := range operatorPod(g).Status.ContainerStatuses {
		out[cs.Name] = cs.RestartCount
	}
	return out
}

// releaseRevisions lists the revision Secrets of a release.
func releaseRevisions(g Gomega, ns, name string) []string {
	var list corev1.SecretList
	g.ExpectWithOffset(1, cluster.Client.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

// TestOperatorContainerKilled: SIGKILL of the Helm runtime's process in the
// operator Pod; the kubelet restarts the container, a resource created
// meanwhile is installed, and an existing release is not touched.
func TestOperatorContainerKilled(t *testing.T) {
	g := NewWithT(t)
	const ns = "real-restart"
	createNamespace(t, ns)
	apply(t, ns, nginxManifest("before", "installed before the kill"))
	expectNginxDeployed(t, ns, "before")
	revisions := releaseRevisions(g, ns, "before")
	initial := restarts(g)

	out, err := exec.Command("pgrep", "-f", "^/manager ").Output()
	g.Expect(err).NotTo(HaveOccurred(), "the manager process of the operator Pod")
	pids := strings.Fields(string(out))
	g.Expect(pids).To(HaveLen(1))
	pid, err := strconv.Atoi(pids[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	killed := time.Now()
	apply(t, ns, nginxManifest("during", "created while the manager was down"))

	g.Eventually(func(g Gomega) {
		g.Expect(restarts(g)["manager"]).To(Equal(initial["manager"] + 1))
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	expectNginxDeployed(t, ns, "during")
	t.Logf("the Nginx created after the kill was Deployed %s after it", time.Since(killed).Round(time.Millisecond))
	g.Expect(releaseRevisions(g, ns, "before")).To(Equal(revisions), "no new revision of the existing release")
	g.Expect(restarts(g)["extensions"]).To(Equal(initial["extensions"]))
	out2, err := kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=120s")
	g.Expect(err).NotTo(HaveOccurred(), out2)
}

func expectNginxDeployed(t *testing.T, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cr, err := getCR(context.Background(), nginxGVK, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		status, _, msg := condition(cr, "Deployed")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
}

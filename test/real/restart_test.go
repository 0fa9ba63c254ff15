package real

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/acme/platform-operator/test/testkit"
)

// restarts returns the restart count of each container of the operator
// Pods, by container name; they add up over the Pods.
func restarts(g Gomega) map[string]int32 {
	out := map[string]int32{}
	for _, pod := range operatorPods(g) {
		for _, cs := range pod.Status.ContainerStatuses {
			out[cs.Name] += cs.RestartCount
		}
	}
	return out
}

// containerPID returns the host PID of the main process of container in
// pod: the process whose cgroup names the container's ID.
func containerPID(g Gomega, pod corev1.Pod, container string) int {
	var id string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			_, id, _ = strings.Cut(cs.ContainerID, "://")
		}
	}
	g.ExpectWithOffset(1, id).NotTo(BeEmpty(), "container %s of %s has no ID", container, pod.Name)
	procs, err := filepath.Glob("/proc/[0-9]*/cgroup")
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	pid := 0
	for _, f := range procs {
		data, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(data), id) {
			continue
		}
		n, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err == nil && (pid == 0 || n < pid) {
			pid = n // the container's first process has the lowest PID
		}
	}
	g.ExpectWithOffset(1, pid).NotTo(BeZero(), "no process in the cgroup of container %s of %s", container, pod.Name)
	return pid
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

	g.Expect(syscall.Kill(containerPID(g, operatorPod(g), "manager"), syscall.SIGKILL)).To(Succeed())
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

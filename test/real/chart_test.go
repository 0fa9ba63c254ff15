package real

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// releaseRevisions counts the revisions Helm stores for each release the
// operator manages, by namespace/name (the operator's own release, which
// helm install made, is not one).
func releaseRevisions(g Gomega) map[string]int {
	secrets := &corev1.SecretList{}
	g.Expect(cluster.Client.List(context.Background(), secrets, client.MatchingLabels{"owner": "helm"})).To(Succeed())
	revisions := map[string]int{}
	for _, s := range secrets.Items {
		if s.Namespace == operatorNamespace && s.Labels["name"] == "platform-operator" {
			continue
		}
		revisions[s.Namespace+"/"+s.Labels["name"]]++
	}
	return revisions
}

// upgradeChart is helm upgrade of the operator to its chart packaged as
// the next version, with a new container resource so that both Pods are
// replaced; it returns once they are.
func upgradeChart(t *testing.T, g Gomega) {
	pods := operatorPods(g)
	dir := t.TempDir()
	out, err := helm("package", "dist/chart", "--version", "0.1.1-next", "--app-version", "0.1.1-next", "--destination", dir)
	g.Expect(err).NotTo(HaveOccurred(), out)
	start := time.Now()
	out, err = helm("upgrade", "platform-operator", filepath.Join(dir, "platform-operator-0.1.1-next.tgz"), "--namespace", operatorNamespace,
		"--reuse-values", "--set", "manager.resources.requests.cpu=110m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=300s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = helm("list", "--namespace", operatorNamespace)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("platform-operator-0.1.1-next"))
	g.Eventually(func(g Gomega) {
		for _, p := range operatorPods(g) {
			for _, old := range pods {
				g.Expect(p.Name).NotTo(Equal(old.Name), "both Pods replaced")
			}
		}
	}).WithTimeout(120 * time.Second).WithPolling(time.Second).Should(Succeed())
	t.Logf("helm upgrade to 0.1.1-next: both operator Pods replaced in %s", time.Since(start).Round(time.Second))
}

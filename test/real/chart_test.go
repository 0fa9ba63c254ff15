package real

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
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

// TestHelmUpgradeKeepsReleases: helm upgrade of the operator to a chart of
// the next version, with new container resources so that both Pods are
// replaced, gives no release a new revision: the new leader reads every
// resource again and finds its release as it is.
func TestHelmUpgradeKeepsReleases(t *testing.T) {
	g := NewWithT(t)
	const ns = "real-chart-upgrade"
	cluster.CreateNamespace(t, ns)
	for _, name := range []string{"one", "two"} {
		cluster.Apply(t, ns, fmt.Sprintf("apiVersion: web.acme.com/v1alpha1\nkind: Nginx\nmetadata:\n  name: %s\nspec:\n  replicaCount: 1\n  image: {repository: %s, tag: %q}\n",
			name, realnode.NginxRepo, realnode.NginxTag))
	}
	out, err := cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx", "--all", "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	before := releaseRevisions(g)
	g.Expect(before).To(HaveKeyWithValue(ns+"/one", 1))
	pods := operatorPods(g)

	dir := t.TempDir()
	out, err = helm("package", "dist/chart", "--version", "0.1.1-next", "--app-version", "0.1.1-next", "--destination", dir)
	g.Expect(err).NotTo(HaveOccurred(), out)
	start := time.Now()
	out, err = helm("upgrade", "platform-operator", filepath.Join(dir, "platform-operator-0.1.1-next.tgz"), "--namespace", operatorNamespace,
		"--reuse-values", "--set", "manager.resources.requests.cpu=110m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=300s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("helm upgrade to 0.1.1-next: operator rolled out in %s", time.Since(start).Round(time.Second))
	out, err = helm("list", "--namespace", operatorNamespace)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("platform-operator-0.1.1-next"))
	for _, old := range pods {
		g.Eventually(func(g Gomega) {
			for _, p := range operatorPods(g) {
				g.Expect(p.Name).NotTo(Equal(old.Name), "both Pods replaced")
			}
		}).WithTimeout(120 * time.Second).WithPolling(time.Second).Should(Succeed())
	}

	// The new leader has read every resource again once the Nginxes' Ready
	// conditions have been written by it; give it a while more to act.
	g.Consistently(func(g Gomega) {
		g.Expect(releaseRevisions(g)).To(Equal(before))
	}).WithTimeout(30 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
	out, err = cluster.Kubectl("get", "nginx", "-n", ns, "-o", "custom-columns=NAME:.metadata.name,READY:.status.conditions[?(@.type==\"Ready\")].status", "--no-headers")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.Fields(out)).To(Equal([]string{"one", "True", "two", "True"}))
	t.Logf("%d releases, none with a new revision", len(before))
}

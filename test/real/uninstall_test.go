package real

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/acme/platform-operator/test/realnode"
)

// TestUninstallStrandsNothing: with a WebApp and two NamespaceTenants
// present, `make undeploy` and `helm uninstall` refuse, naming them, and
// leave the operator running; `helm uninstall` told to delete them removes
// them first (their finalizers run), then the operator, within a bound.
// What it keeps (the CRDs) reads with plain kubectl in every version
// without the removed conversion webhook. Installing again takes the kept
// CRDs back, webhook conversion included, for the tests that follow.
func TestUninstallStrandsNothing(t *testing.T) {
	g := NewWithT(t)
	const ns = "real-uninstall"
	cluster.CreateNamespace(t, ns)
	cluster.Apply(t, ns, realnode.WebAppManifest("shop", 1))
	for _, team := range []string{"a", "b"} {
		cluster.Apply(t, "", "apiVersion: tenancy.acme.com/v1alpha1\nkind: NamespaceTenant\nmetadata:\n  name: real-uninstall-"+team+
			"\nspec:\n  namespaceName: real-uninstall-"+team+"\n  adminUsername: sam\n  deploymentTier: dev\n")
	}
	// Each has the operator's finalizer before the operator may go.
	out, err := cluster.Kubectl("wait", "-n", ns, "webapp/shop", "--for=jsonpath={.metadata.finalizers}", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("wait", "namespacetenant/real-uninstall-a", "namespacetenant/real-uninstall-b", "--for=jsonpath={.metadata.finalizers}", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	names := []string{"WebApp " + ns + "/shop", "NamespaceTenant real-uninstall-a", "NamespaceTenant real-uninstall-b"}

	// make undeploy, as a new user would: refused, naming them.
	start := time.Now()
	out, err = cluster.RunEnv([]string{"PATH=" + filepath.Join(cluster.Root, "bin", "k8s") + ":" + os.Getenv("PATH")}, "", "make", "--no-print-directory", "undeploy")
	g.Expect(err).To(HaveOccurred(), "make undeploy with resources present:\n%s", out)
	for _, n := range names {
		g.Expect(out).To(ContainSubstring(n))
	}
	t.Logf("make undeploy refused in %s:\n%s", time.Since(start).Round(time.Millisecond), lastLines(out, 12))
	expectOperatorRunning(g)

	// helm uninstall: the pre-delete hook refuses the same way. Helm has
	// marked the release uninstalling by then; nothing was removed, and
	// helm rollback to the revision it was makes it deployed again.
	out, err = helm("status", "platform-operator", "--namespace", operatorNamespace, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred(), out)
	var status struct {
		Version int `json:"version"`
	}
	g.Expect(json.Unmarshal([]byte(out), &status)).To(Succeed(), out)
	revision := strconv.Itoa(status.Version)
	start = time.Now()
	out, err = helm("uninstall", "platform-operator", "--namespace", operatorNamespace, "--timeout", "3m")
	g.Expect(err).To(HaveOccurred(), "helm uninstall with resources present:\n%s", out)
	logs, lerr := cluster.Kubectl("logs", "-n", operatorNamespace, "job/platform-operator-uninstall")
	g.Expect(lerr).NotTo(HaveOccurred(), logs)
	for _, n := range names {
		g.Expect(logs).To(ContainSubstring(n))
	}
	t.Logf("helm uninstall refused in %s: %s\nthe Job's log:\n%s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out), lastLines(logs, 12))
	expectOperatorRunning(g)
	out, err = helm("rollback", "platform-operator", revision, "--namespace", operatorNamespace)
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = helm("status", "platform-operator", "--namespace", operatorNamespace)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("STATUS: deployed"))

	// Told to delete them: the resources go first, while the operator runs.
	out, err = helm("upgrade", "platform-operator", "dist/chart", "--namespace", operatorNamespace, "--reuse-values", "--set", "uninstall.deleteResources=true")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	start = time.Now()
	out, err = helm("uninstall", "platform-operator", "--namespace", operatorNamespace, "--timeout", "5m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("helm uninstall with uninstall.deleteResources: %s", time.Since(start).Round(time.Millisecond))
	out, err = cluster.Kubectl("get", "deployment", "-n", operatorNamespace, "--no-headers", "--ignore-not-found")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.TrimSpace(out)).To(BeEmpty(), "the operator is gone")
	for _, check := range [][]string{
		{"get", "webapps.v1alpha1.web.acme.com", "-A", "--no-headers"},
		{"get", "webapps", "-A", "--no-headers"}, // v1beta1, the preferred version: no webhook left to convert
		{"get", "namespacetenants,nginxes,cronscalers", "-A", "--no-headers"},
	} {
		out, err = cluster.Kubectl(check...)
		g.Expect(err).NotTo(HaveOccurred(), "kubectl %v:\n%s", check, out)
		g.Expect(strings.TrimSpace(out)).To(HavePrefix("No resources found"), "kubectl %v", check)
	}
	for _, team := range []string{"a", "b"} {
		out, _ = cluster.Kubectl("get", "namespace", "real-uninstall-"+team, "--no-headers", "--ignore-not-found")
		g.Expect(strings.TrimSpace(out)).To(BeEmpty(), "the tenant's namespace was cleaned up by its finalizer")
	}
	out, err = cluster.Kubectl("get", "crd", "webapps.web.acme.com", "-o", "jsonpath={.spec.conversion.strategy}")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("None"), "no WebApp stored: nothing to convert")

	// Installed again: the kept CRDs are the chart's again, webhook
	// conversion included.
	start = time.Now()
	out, err = installChart()
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("get", "crd", "webapps.web.acme.com", "-o", "jsonpath={.spec.conversion.strategy}")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("Webhook"))
	g.Eventually(func() (string, error) {
		return cluster.Kubectl("get", "crd", "webapps.web.acme.com", "-o", "jsonpath={.spec.conversion.webhook.clientConfig.caBundle}")
	}).WithTimeout(60*time.Second).WithPolling(time.Second).ShouldNot(BeEmpty(), "the sidecar sets the conversion webhook's CA again")
	t.Logf("installed again in %s", time.Since(start).Round(time.Millisecond))
}

func expectOperatorRunning(g Gomega) {
	out, err := cluster.Kubectl("get", "deployment", "-n", operatorNamespace, operatorDeployment, "-o", "jsonpath={.status.readyReplicas}")
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	g.ExpectWithOffset(1, out).To(Equal("2"), "the operator still runs")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

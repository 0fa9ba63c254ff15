package real

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/acme/platform-operator/test/testkit"
)

// TestWebhookRefusesAtApply: the sidecar's admission webhook, served from
// the operator Pod behind its Service with the certificate the sidecar
// issued itself (config/default), makes `kubectl apply` fail at once for
// a release name another resource holds, for a spec the chart does not
// render with and for a hostname another tenant serves, and lets a valid
// resource through.
func TestWebhookRefusesAtApply(t *testing.T) {
	g := NewWithT(t)
	const ns = "real-webhook"
	cluster.CreateNamespace(t, ns)

	cluster.Apply(t, ns, `apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: shop
spec:
  replicaCount: 0
`)
	start := time.Now()
	out, err := cluster.KubectlIn(`apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata:
  name: shop
spec:
  deploymentTier: dev
  webAppImage: app:1
  webAppHostname: shop.example.com
`, "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred(), out)
	// kubectl prints the webhook's field error as it prints the schema's.
	g.Expect(out).To(ContainSubstring(`The WebApp "shop" is invalid: metadata.name: Forbidden: release shop in namespace ` +
		ns + " belongs to Nginx " + ns + "/shop; rename this WebApp"))
	t.Logf("refused in %s: %s", time.Since(start).Round(time.Millisecond), testkit.LastLine(out))

	out, err = cluster.KubectlIn(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: ports
spec:
  containerPort: 8081
  statusPort: 8081
`, "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("containerPort and statusPort must differ"))
	t.Logf("refused: %s", testkit.LastLine(out))
	out, err = cluster.Kubectl("get", "webapps,nginxes", "-n", ns, "-o", "name")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.TrimSpace(out)).To(Equal("nginx.web.acme.com/shop"), "nothing refused is stored")

	// Two tenants, one hostname: the second is refused, naming the first.
	const tenantA, tenantB = "real-webhook-a", "real-webhook-b"
	cluster.CreateNamespace(t, tenantA)
	cluster.CreateNamespace(t, tenantB)
	pay := `apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata:
  name: pay
spec:
  deploymentTier: dev
  webAppImage: app:1
  webAppHostname: pay.example.com
`
	cluster.Apply(t, tenantA, pay)
	g.Eventually(func() (string, error) {
		return cluster.Kubectl("get", "ingress", "pay", "-n", tenantA, "-o", "jsonpath={.spec.rules[0].host}")
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Equal("pay.example.com"), "the first tenant's Ingress")
	g.Eventually(func(g Gomega) {
		out, err := cluster.KubectlIn(pay, "apply", "-n", tenantB, "-f", "-")
		g.Expect(err).To(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring(`The WebApp "pay" is invalid: spec.webAppHostname: Forbidden: host pay.example.com is served by Ingress ` +
			tenantA + "/pay of WebApp " + tenantA + "/pay already"))
		t.Logf("refused: %s", testkit.LastLine(out))
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	out, err = cluster.Kubectl("delete", "webapp", "pay", "-n", tenantA, "--timeout=2m")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

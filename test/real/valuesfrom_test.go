package real

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// serverBlockSecret is a Secret whose key server holds an nginx server
// block answering token at /.
func serverBlockSecret(name, token string) string {
	block := fmt.Sprintf(`server {
  listen 8080;
  location = /healthz { return 200 "ok\n"; }
  location / { default_type text/plain; return 200 "%s\n"; }
}
`, token)
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
stringData:
  server: |
%s`, name, indentLines(block, "    "))
}

func indentLines(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// TestValuesFromSecretServes: an Nginx takes its server block from a
// Secret key (valuesFrom with a targetPath) and its replica count from a
// ConfigMap's values.yaml; the real Pods serve what the Secret says,
// through the Service, while the resource's spec and its Events never
// show it. Rotating the key upgrades the release once (one new
// revision) and the Pods then serve the new answer.
func TestValuesFromSecretServes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "real-valuesfrom", "vault"
	cluster.CreateNamespace(t, ns)
	cluster.ClientPod(t, ns, realnode.NginxImage)

	cluster.Apply(t, ns, serverBlockSecret("site-server", "token-one"))
	cluster.Apply(t, ns, `apiVersion: v1
kind: ConfigMap
metadata:
  name: site-values
data:
  values.yaml: |
    replicaCount: 2
`)
	cluster.Apply(t, ns, fmt.Sprintf(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: %s
spec:
  image: {repository: %s, tag: %q}
  valuesFrom:
    - kind: ConfigMap
      name: site-values
    - kind: Secret
      name: site-server
      valuesKey: server
      targetPath: serverBlock
`, name, realnode.NginxRepo, realnode.NginxTag))

	host := name + "-nginx." + ns + ".svc.cluster.local"
	serves := func(token string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			out, err := cluster.HTTPGet(ns, host, 80, "/")
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring(token))
			dep := &appsv1.Deployment{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-nginx"}, dep)).To(Succeed())
			g.Expect(*dep.Spec.Replicas).To(BeEquivalentTo(2))
			g.Expect(testkit.DeploymentReady(dep)).To(BeTrue(), "status: %+v", dep.Status)
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}
	start := time.Now()
	serves("token-one")
	t.Logf("2 Pods serve the Secret's server block %s after apply", time.Since(start).Round(time.Millisecond))
	g.Expect(revisions(g, ns, name)).To(Equal(1))

	// The chart renders serverBlock into a ConfigMap, so the release's
	// manifest in the status shows it as it shows any ConfigMap (only
	// Secrets are redacted there); the spec and the Events never do.
	hidden := func(token string) {
		t.Helper()
		out, err := cluster.Kubectl("get", "nginx", name, "-n", ns, "-o", "jsonpath={.spec}")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).NotTo(ContainSubstring(token))
		out, err = cluster.Kubectl("get", "events", "-n", ns, "-o", "yaml")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).NotTo(ContainSubstring(token))
	}
	hidden("token-one")

	t.Log("rotating the Secret's key upgrades the release once")
	rotated := time.Now()
	cluster.Apply(t, ns, serverBlockSecret("site-server", "token-two"))
	serves("token-two")
	t.Logf("the Pods serve the rotated key %s after the Secret changed", time.Since(rotated).Round(time.Millisecond))
	g.Consistently(func() int { return revisions(g, ns, name) }).
		WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Equal(2))
	hidden("token-two")
}

// revisions counts the Helm release records of release name in ns.
func revisions(g Gomega, ns, name string) int {
	secrets := &corev1.SecretList{}
	g.Expect(cluster.Client.List(context.Background(), secrets, client.InNamespace(ns),
		client.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
	return len(secrets.Items)
}

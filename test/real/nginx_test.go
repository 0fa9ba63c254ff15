package real

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// nginxManifest is an Nginx on the stand-in image whose server answers
// greeting at /.
func nginxManifest(name, greeting string) string {
	return fmt.Sprintf(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: %s
spec:
  replicaCount: 2
  image: {repository: %s, tag: %q}
  serverBlock: |
    server {
      listen 8080;
      location = /healthz { return 200 "ok\n"; }
      location / { default_type text/plain; return 200 "%s\n"; }
    }
`, name, realnode.NginxRepo, realnode.NginxTag, greeting)
}

// TestNginxServes: an Nginx's pods become Ready through the chart's real
// probes and security context, a request through its Service from another
// Pod gets the page, and a spec edit rolls the pods and changes the answer.
func TestNginxServes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "real-nginx"
	cluster.CreateNamespace(t, ns)
	cluster.ClientPod(t, ns, realnode.NginxImage)

	created := time.Now()
	cluster.Apply(t, ns, nginxManifest("site", "hello from v1"))
	dep := &appsv1.Deployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "site-nginx"}, dep)).To(Succeed())
		g.Expect(testkit.DeploymentReady(dep)).To(BeTrue(), "status: %+v", dep.Status)
	}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	t.Logf("2 nginx pods Ready %s after the Nginx was applied", time.Since(created).Round(time.Millisecond))
	sc := dep.Spec.Template.Spec.Containers[0].SecurityContext
	g.Expect(sc).NotTo(BeNil())
	g.Expect(*sc.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*sc.RunAsNonRoot).To(BeTrue())

	host := "site-nginx." + ns + ".svc.cluster.local"
	g.Eventually(func(g Gomega) {
		out, err := cluster.HTTPGet(ns, host, 80, "/")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring("200 OK"))
		g.Expect(out).To(ContainSubstring("hello from v1"))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	out, _ := cluster.HTTPGet(ns, host, 80, "/")
	t.Logf("answer through the Service: %q", testkit.LastLine(out))

	t.Log("a spec edit rolls the pods and changes the answer")
	edited := time.Now()
	cluster.Apply(t, ns, nginxManifest("site", "hello from v2"))
	g.Eventually(func(g Gomega) {
		out, err := cluster.HTTPGet(ns, host, 80, "/")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring("hello from v2"))
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
		g.Expect(testkit.DeploymentReady(dep)).To(BeTrue())
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("new answer %s after the edit", time.Since(edited).Round(time.Millisecond))
	_, reason, _ := cluster.ConditionOf(g, testkit.NginxGVK, ns, "site", "Deployed")
	g.Expect(reason).To(Equal("UpgradeSuccessful"))
}

package real

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// TestTenantQuotaOnRealPods: a NamespaceTenant's admin creates a
// Deployment whose Pod runs (with the LimitRange's defaults), the quota is
// enforced by the API server on real Pods, and the NetworkPolicies are
// admitted. The tenant is Ready once its namespace is Active with its quota
// and limits.
func TestTenantQuotaOnRealPods(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const tenantNS, admin = "real-tenant-app", "sam"
	cluster.Apply(t, "", `apiVersion: tenancy.acme.com/v1alpha1
kind: NamespaceTenant
metadata:
  name: real-tenant
spec:
  namespaceName: `+tenantNS+`
  adminUsername: `+admin+`
  deploymentTier: dev
`)
	g.Eventually(func(g Gomega) {
		var quotas corev1.ResourceQuotaList
		g.Expect(cluster.Client.List(ctx, &quotas, client.InNamespace(tenantNS))).To(Succeed())
		g.Expect(quotas.Items).NotTo(BeEmpty())
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	out, err := cluster.Kubectl("wait", "--for=condition=Ready", "namespacetenant/real-tenant", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	nsObj := &corev1.Namespace{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: tenantNS}, nsObj)).To(Succeed())
	g.Expect(nsObj.Status.Phase).To(Equal(corev1.NamespaceActive), "Ready means the namespace is Active")
	var limits corev1.LimitRangeList
	g.Expect(cluster.Client.List(ctx, &limits, client.InNamespace(tenantNS))).To(Succeed())
	g.Expect(limits.Items).NotTo(BeEmpty(), "Ready means the limits are in place")
	out, err = cluster.Kubectl("get", "networkpolicies", "-n", tenantNS, "-o", "name")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).NotTo(BeEmpty(), "the tenant's NetworkPolicies are admitted")

	t.Log("the admin's Deployment runs")
	out, err = cluster.KubectlIn(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: team-app
spec:
  replicas: 1
  selector: {matchLabels: {app: team-app}}
  template:
    metadata: {labels: {app: team-app}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 10001, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: %s
        env: [{name: DATABASE_HOST, value: 127.0.0.1}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, realnode.AppImage), "apply", "-n", tenantNS, "--as", admin, "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	start := time.Now()
	g.Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "team-app"}, dep)).To(Succeed())
		g.Expect(testkit.DeploymentReady(dep)).To(BeTrue())
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	t.Logf("the admin's pod Ready %s after the Deployment was created", time.Since(start).Round(time.Millisecond))
	var pods corev1.PodList
	g.Expect(cluster.Client.List(ctx, &pods, client.InNamespace(tenantNS), client.MatchingLabels{"app": "team-app"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	g.Expect(pods.Items[0].Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("100m"), "the LimitRange's default request")

	t.Log("a pod over the quota is refused")
	out, err = cluster.KubectlIn(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: too-big
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 10001, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: app
    image: %s
    resources: {requests: {cpu: "6"}, limits: {cpu: "6"}}
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`, realnode.AppImage), "apply", "-n", tenantNS, "--as", admin, "-f", "-")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("exceeded quota"))
	t.Logf("refused: %s", testkit.LastLine(out))

	out, err = cluster.Kubectl("delete", "namespacetenant", "real-tenant", "--wait=true", "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

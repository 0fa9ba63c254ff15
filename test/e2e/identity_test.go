package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// TestTenantReleasesActAsTheTenantServiceAccount: a NamespaceTenant with
// releaseIdentity.enabled gets a ServiceAccount bound to the generated
// release deployer role (config/rbac/release_deployer_role.yaml), and the
// releases in its namespace are applied as it: an Nginx and a WebApp
// install with that role's rights alone; with services taken out of the
// role, an upgrade fails naming the ServiceAccount, the verb and the
// resource; put back, the next edit applies.
func TestTenantReleasesActAsTheTenantServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const tenant, ns, role = "e2e-identity", "e2e-identity", "e2e-release-deployer"
	user := "system:serviceaccount:" + ns + ":release-deployer"

	generated, err := os.ReadFile("../../config/rbac/release_deployer_role.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	roleYAML := strings.Replace(string(generated), "name: release-deployer", "name: "+role, 1)
	env.Apply(t, "", roleYAML)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "clusterrole", role, "--ignore-not-found") })
	// The operator holds none of the role's rights, so binding it takes
	// bind on it, as for any role other than the shipped one.
	env.Apply(t, "", fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s-bind}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [bind], resourceNames: [%[1]s]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s-bind}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s-bind}
subjects: [{kind: ServiceAccount, name: %[2]s, namespace: %[3]s}]
`, role, operatorServiceAccount, operatorNamespace))
	t.Cleanup(func() {
		_, _ = env.Kubectl("delete", "clusterrolebinding", role+"-bind", "--ignore-not-found")
		_, _ = env.Kubectl("delete", "clusterrole", role+"-bind", "--ignore-not-found")
	})

	applyTenant(g, tenant, ns, fmt.Sprintf("  releaseIdentity: {enabled: true, clusterRole: %s}", role))
	waitDeployed(g, ctx, tenant)
	t.Cleanup(func() { deleteTenantAndWait(t, NewWithT(t), ctx, tenant, ns) })
	namespace := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, namespace)).To(Succeed())
	g.Expect(namespace.Annotations).To(HaveKeyWithValue("platform.acme.com/release-service-account", "release-deployer"))

	t.Log("an Nginx and a WebApp install with the generated role's rights alone")
	applyCR(g, testkit.NginxGVK, ns, "web", "replicaCount: 1")
	applyCR(g, testkit.WebAppGVK, ns, "shop", `{deploymentTier: dev, webAppImage: "registry.acme.com/shop/shop:v1", webAppHostname: shop.acme.com, webAppReplicas: 1}`)
	expectDeployed(t, testkit.NginxGVK, ns, "web", "InstallSuccessful")
	expectDeployed(t, testkit.WebAppGVK, ns, "shop", "InstallSuccessful")

	t.Log("services taken out of the role: an upgrade is refused, as the ServiceAccount")
	cr := &rbacv1.ClusterRole{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: role}, cr)).To(Succeed())
	for i, rule := range cr.Rules {
		cr.Rules[i].Resources = slices.DeleteFunc(slices.Clone(rule.Resources), func(r string) bool { return r == "services" })
	}
	g.Expect(env.Client.Update(ctx, cr)).To(Succeed())
	applyCR(g, testkit.NginxGVK, ns, "web", "replicaCount: 2")
	g.Eventually(func(g Gomega) {
		obj, err := env.Get(ctx, testkit.NginxGVK, ns, "web")
		g.Expect(err).NotTo(HaveOccurred())
		_, _, msg := testkit.Condition(obj, "ReleaseFailed")
		g.Expect(msg).To(ContainSubstring(fmt.Sprintf(`User "%s" cannot get resource "services" in API group "" in the namespace "%s"`, user, ns)))
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	t.Log("the right given back: the next edit applies")
	env.Apply(t, "", roleYAML)
	applyCR(g, testkit.NginxGVK, ns, "web", "replicaCount: 3")
	expectDeployed(t, testkit.NginxGVK, ns, "web", "UpgradeSuccessful")

	out, err := env.Kubectl("delete", "-n", ns, "nginx/web", "webapp/shop", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

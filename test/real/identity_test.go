package real

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// TestTenantReleaseActsAsItsServiceAccount: with the operator deployed
// from config/default (its ClusterRole, and the generated
// platform-operator-release-deployer), a NamespaceTenant with
// releaseIdentity.enabled has the WebApp in its namespace applied as the
// tenant's ServiceAccount: it becomes Ready on real Pods; with services
// taken out of the deployer role an upgrade turns ReleaseFailed naming the
// ServiceAccount, the verb and the resource; with the right back it
// applies; and deleting the tenant uninstalls it although the namespace's
// deletion removes the binding.
func TestTenantReleaseActsAsItsServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const tenant, ns, name, deployer = "real-identity", "real-identity", "shop", "platform-operator-release-deployer"
	user := "system:serviceaccount:" + ns + ":release-deployer"
	cluster.Apply(t, "", `apiVersion: tenancy.acme.com/v1alpha1
kind: NamespaceTenant
metadata:
  name: `+tenant+`
spec:
  namespaceName: `+ns+`
  adminUsername: sam
  releaseIdentity: {enabled: true}
`)
	out, err := cluster.Kubectl("wait", "--for=condition=Ready", "namespacetenant/"+tenant, "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)

	cluster.Apply(t, ns, realnode.WebAppManifest(name, 1))
	out, err = cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "webapp/"+name, "--timeout=240s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Log("the WebApp is Ready, applied as " + user)

	role := &rbacv1.ClusterRole{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: deployer}, role)).To(Succeed())
	original := role.DeepCopy()
	restore := func() {
		cur := &rbacv1.ClusterRole{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: deployer}, cur); err == nil {
			cur.Rules = original.Rules
			_ = cluster.Client.Update(ctx, cur)
		}
	}
	t.Cleanup(restore)
	for i, rule := range role.Rules {
		role.Rules[i].Resources = slices.DeleteFunc(slices.Clone(rule.Resources), func(r string) bool { return r == "services" })
	}
	g.Expect(cluster.Client.Update(ctx, role)).To(Succeed())
	t.Log("services taken out of " + deployer)

	out, err = cluster.Kubectl("patch", "webapp", name, "-n", ns, "--type=merge", "-p", `{"spec":{"webAppReplicas":2}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		status, _, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "ReleaseFailed")
		g.Expect(status).To(Equal("True"))
		g.Expect(msg).To(ContainSubstring(fmt.Sprintf(`User "%s" cannot get resource "services" in API group "" in the namespace "%s"`, user, ns)))
		t.Logf("ReleaseFailed: %s", msg)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	restore()
	out, err = cluster.Kubectl("patch", "webapp", name, "-n", ns, "--type=merge", "-p", `{"spec":{"webAppReplicas":1}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		status, _, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "ReleaseFailed")
		g.Expect(status).To(Equal("False"), msg)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	out, err = cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "webapp/"+name, "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("deleting the tenant uninstalls the WebApp although its binding goes with the namespace")
	out, err = cluster.Kubectl("delete", "namespacetenant", tenant, "--wait=true", "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

// TestOperatorWritesWorkloadsOnlyAsTheReleaseServiceAccount: the deployed
// operator's ClusterRole lets it write no Deployment, Service, ConfigMap
// or Ingress in any namespace. A WebApp in a namespace that names no
// identity of its own is applied as platform-operator-release, which the
// runtime creates there with a RoleBinding to the deployer role: the
// WebApp becomes Ready, and that ServiceAccount may write workloads in
// its own namespace only.
func TestOperatorWritesWorkloadsOnlyAsTheReleaseServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name, account = "real-release-identity", "ledger", "platform-operator-release"
	operator := "system:serviceaccount:platform-operator-system:platform-operator-controller-manager"
	releaser := "system:serviceaccount:" + ns + ":" + account
	cluster.CreateNamespace(t, ns)
	canI := func(verb, resource, namespace, user string) string {
		out, _ := cluster.Kubectl("auth", "can-i", verb, resource, "-n", namespace, "--as", user)
		// The answer is the last line, after any warning.
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	for _, res := range []string{"deployments.apps", "statefulsets.apps", "services", "configmaps", "ingresses.networking.k8s.io", "poddisruptionbudgets.policy"} {
		for _, where := range []string{ns, "kube-system"} {
			g.Expect(canI("create", res, where, operator)).To(Equal("no"), "the operator may create %s in %s", res, where)
		}
	}

	cluster.Apply(t, ns, realnode.WebAppManifest(name, 1))
	t.Cleanup(func() {
		// Its host would be taken for the tests after this one.
		if out, err := cluster.Kubectl("delete", "webapp", name, "-n", ns, "--wait=true", "--timeout=120s"); err != nil {
			t.Logf("cleanup: %v\n%s", err, out)
		}
	})
	out, err := cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "webapp/"+name, "--timeout=240s")
	g.Expect(err).NotTo(HaveOccurred(), out)

	sa := &corev1.ServiceAccount{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: account}, sa)).To(Succeed())
	g.Expect(sa.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "platform-operator"))
	binding := &rbacv1.RoleBinding{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: account}, binding)).To(Succeed())
	g.Expect(binding.RoleRef.Name).To(Equal("platform-operator-release-deployer"))
	g.Expect(canI("create", "deployments.apps", ns, releaser)).To(Equal("yes"))
	g.Expect(canI("create", "deployments.apps", "kube-system", releaser)).To(Equal("no"))
	g.Expect(canI("create", "clusterroles.rbac.authorization.k8s.io", ns, releaser)).To(Equal("no"))
	t.Logf("the WebApp is Ready, applied as %s; the operator itself may create no workload", releaser)
}

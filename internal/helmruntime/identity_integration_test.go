package helmruntime

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/helmtest"
)

// TestReleaseActsAsTheKindsServiceAccount: a Crate's release (watches.yaml
// serviceAccountName: crate-deployer) is applied as that ServiceAccount
// of the resource's namespace, not with the runtime's rights: without a
// Role it fails naming the identity, the verb and the resource, and
// writes nothing; once the namespace grants the ServiceAccount its
// ConfigMaps the release installs, upgrades and uninstalls; with delete
// taken away, the uninstall fails and says why.
func TestReleaseActsAsTheKindsServiceAccount(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)
	user := fmt.Sprintf("system:serviceaccount:%s:crate-deployer", ns)

	t.Log("no right granted: refused by the API server, as the ServiceAccount")
	crate := helmtest.CR("Crate", ns, "first", map[string]any{"data": "v1"}, nil)
	g.Expect(k8s.Create(ctx, crate)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, crate)
		g.Expect(err).NotTo(HaveOccurred())
		failed := conditionOf(cur, "ReleaseFailed")
		g.Expect(failed).To(HaveKeyWithValue("status", "True"), "status: %v", cur.Object["status"])
		g.Expect(failed["message"]).To(MatchRegexp(`User "%s" cannot (get|create) resource "configmaps" in API group "" in the namespace "%s"`, user, ns))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "first-box"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing written: %v", err)

	t.Log("the namespace grants the ServiceAccount its ConfigMaps: the release installs")
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crate-deployer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	}
	g.Expect(k8s.Create(ctx, role)).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crate-deployer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "crate-deployer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "crate-deployer"}},
	})).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(crate), crate)).To(Succeed())
	g.Expect(unstructured.SetNestedField(crate.Object, "v2", "spec", "data")).To(Succeed())
	g.Expect(k8s.Update(ctx, crate)).To(Succeed())
	expectDeployed(t, k8s, crate)
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "first-box"}, cm)).To(Succeed())

	t.Log("delete taken away: the uninstall fails and names the missing right")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(role), role)).To(Succeed())
	role.Rules[0].Verbs = []string{"get", "list", "watch", "create", "update", "patch"}
	g.Expect(k8s.Update(ctx, role)).To(Succeed())
	g.Expect(k8s.Delete(ctx, crate)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, crate)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fmt.Sprint(cur.Object["status"])).To(ContainSubstring(fmt.Sprintf(`User "%s" cannot delete resource "configmaps"`, user)))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "first-box"}, cm)).To(Succeed(), "the ConfigMap stays")

	t.Log("delete given back: the uninstall completes")
	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	g.Expect(k8s.Update(ctx, role)).To(Succeed())
	expectGone(t, k8s, crate)
	err = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "first-box"}, cm)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ConfigMap is uninstalled: %v", err)
}

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
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/releaseidentity"
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
	grantConfigMaps(t, k8s, ns, "crate-deployer")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crate-deployer"}}
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

// TestNamespaceNamesTheReleaseServiceAccount: a namespace's
// platform.acme.com/release-service-account annotation makes the releases
// in it act as that ServiceAccount, whatever their kind says (a Box's
// kind names none); a namespace without it leaves the kind's choice.
func TestNamespaceNamesTheReleaseServiceAccount(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)
	namespace := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Name: ns}, namespace)).To(Succeed())
	namespace.Annotations = map[string]string{ReleaseServiceAccountAnnotation: "tenant-deployer"}
	g.Expect(k8s.Update(ctx, namespace)).To(Succeed())

	box := helmtest.CR("Box", ns, "ruled", map[string]any{"data": "v1"}, nil)
	g.Expect(k8s.Create(ctx, box)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, box)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conditionOf(cur, "ReleaseFailed")["message"]).To(ContainSubstring(
			fmt.Sprintf(`User "system:serviceaccount:%s:tenant-deployer" cannot`, ns)))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())

	t.Log("the annotation removed: the Box installs with the operator's rights")
	g.Expect(k8s.Get(ctx, types.NamespacedName{Name: ns}, namespace)).To(Succeed())
	delete(namespace.Annotations, ReleaseServiceAccountAnnotation)
	g.Expect(k8s.Update(ctx, namespace)).To(Succeed())
	// The runtime keeps retrying the failed install meanwhile, and each
	// retry writes the status: edit the latest version.
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(box), box); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(box.Object, "retry", "spec", "data"); err != nil {
			return err
		}
		return k8s.Update(ctx, box)
	})).To(Succeed())
	expectDeployed(t, k8s, box)
}

// TestUninstallInADeletedNamespaceNeedsNoServiceAccountRights: when a
// namespace is deleted its RoleBindings go at the same time as its
// resources, so the uninstalls of the releases in it run with the
// operator's rights; a forbidden uninstall would hold the resource's
// finalizer, and the namespace, forever. (envtest runs no namespace
// controller: the namespace stays Terminating, and the test deletes the
// resource itself.)
func TestUninstallInADeletedNamespaceNeedsNoServiceAccountRights(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)
	binding := grantConfigMaps(t, k8s, ns, "crate-deployer")
	crate := helmtest.CR("Crate", ns, "last", map[string]any{"data": "v1"}, nil)
	g.Expect(k8s.Create(ctx, crate)).To(Succeed())
	expectDeployed(t, k8s, crate)

	g.Expect(k8s.Delete(ctx, binding)).To(Succeed())
	g.Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(k8s.Delete(ctx, crate)).To(Succeed())
	expectGone(t, k8s, crate)
	err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "last-box"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ConfigMap is uninstalled: %v", err)
}

// grantConfigMaps gives the ServiceAccount sa of ns every right on the
// namespace's ConfigMaps (a Role and its RoleBinding, both named sa), and
// returns the RoleBinding.
func grantConfigMaps(t *testing.T, k8s client.Client, ns, sa string) *rbacv1.RoleBinding {
	t.Helper()
	g := NewWithT(t)
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	}
	g.Expect(k8s.Create(t.Context(), role)).To(Succeed())
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}
	g.Expect(k8s.Create(t.Context(), binding)).To(Succeed())
	return binding
}

// TestManagedIdentityCreatedOncePerNamespace: with a managed identity
// (Options.ReleaseIdentity), a release in a namespace that names
// none is applied as it: the runtime creates the ServiceAccount and a
// RoleBinding to the deployer ClusterRole in that namespace, once (a
// second release there costs no request; what a person changes in them
// stands); a namespace annotation and a kind's serviceAccountName still
// win, and a cluster-scoped kind keeps the operator's rights.
func TestManagedIdentityCreatedOncePerNamespace(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)
	managed := releaseidentity.Options{ServiceAccount: "platform-operator-release", DeployerRole: "platform-operator-release-deployer"}.Managed()
	identity := releaseIdentity{namespaces: k8s, writer: k8s, managed: managed}
	box := helmtest.CR("Box", ns, "first", nil, nil)

	sa, err := identity.serviceAccountFor(ctx, box, ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sa).To(Equal("platform-operator-release"))
	account := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: sa}, account)).To(Succeed())
	g.Expect(account.Labels).To(HaveKeyWithValue(releaseidentity.ManagedByLabel, releaseidentity.ManagedByValue))
	binding := &rbacv1.RoleBinding{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: sa}, binding)).To(Succeed())
	g.Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "platform-operator-release-deployer"}))
	g.Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}))

	t.Log("created once: deleted by a person, it is not created again by this process")
	g.Expect(k8s.Delete(ctx, binding)).To(Succeed())
	sa, err = identity.serviceAccountFor(ctx, helmtest.CR("Box", ns, "second", nil, nil), ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sa).To(Equal("platform-operator-release"))
	err = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: sa}, &rbacv1.RoleBinding{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)

	t.Log("the kind's serviceAccountName wins; so does the namespace's annotation")
	crates := releaseIdentity{namespaces: k8s, writer: k8s, managed: managed, kindDefault: "crate-deployer"}
	g.Expect(crates.serviceAccountFor(ctx, box, ns)).To(Equal("crate-deployer"))
	other := newTestNamespace(t, k8s)
	namespace := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Name: other}, namespace)).To(Succeed())
	namespace.Annotations = map[string]string{ReleaseServiceAccountAnnotation: "tenant-deployer"}
	g.Expect(k8s.Update(ctx, namespace)).To(Succeed())
	g.Eventually(func() (string, error) {
		return identity.serviceAccountFor(ctx, helmtest.CR("Box", other, "ruled", nil, nil), other)
	}).WithTimeout(eventually).WithPolling(poll).Should(Equal("tenant-deployer"))
	err = k8s.Get(ctx, types.NamespacedName{Namespace: other, Name: "platform-operator-release"}, &corev1.ServiceAccount{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing created where the namespace names one: %v", err)

	t.Log("a cluster-scoped kind (no managed identity) keeps the operator's rights")
	clusterScoped := releaseIdentity{namespaces: k8s, writer: k8s}
	g.Expect(clusterScoped.serviceAccountFor(ctx, box, ns)).To(BeEmpty())
}

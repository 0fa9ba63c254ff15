package helmruntime

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/release"
)

// expectRefused waits until cr reports ReleaseFailed=True with a message
// containing msg, and a Warning Event with reason.
func expectRefused(t *testing.T, k8s client.Client, cr *unstructured.Unstructured, reason, msg string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		cur, err := getCR(t.Context(), k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		failed := conditionOf(cur, "ReleaseFailed")
		g.Expect(failed).NotTo(BeNil(), "status: %v", cur.Object["status"])
		g.Expect(failed["status"]).To(Equal("True"))
		g.Expect(failed["message"]).To(ContainSubstring(msg))
		g.Expect(failed["reason"]).To(Equal(reason))
		g.Expect(conditionOf(cur, "Irreconcilable")).To(HaveKeyWithValue("reason", reason))
		g.Expect(conditionStatus(cur, "Deployed")).NotTo(Equal("True"))
		g.Expect(cur.Object["status"]).NotTo(HaveKey("deployedRelease"))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventsOf(t.Context(), k8s, cr)).To(ContainElement(And(
			HaveField("Reason", reason), HaveField("Type", corev1.EventTypeWarning), HaveField("Message", ContainSubstring(msg)))))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
}

// eventsOf lists the Events about cr.
func eventsOf(ctx context.Context, k8s client.Client, cr *unstructured.Unstructured) ([]corev1.Event, error) {
	ns := cr.GetNamespace()
	if ns == "" {
		ns = corev1.NamespaceDefault
	}
	var list corev1.EventList
	if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == cr.GetKind() && e.InvolvedObject.Name == cr.GetName() {
			out = append(out, e)
		}
	}
	return out, nil
}

// releaseState is what must not change while a second resource claims a
// release: its revisions and the UIDs of its objects.
func releaseState(g Gomega, ctx context.Context, k8s client.Client, namespace, name string) []string {
	secrets, err := releaseSecrets(ctx, k8s, namespace, name)
	g.Expect(err).NotTo(HaveOccurred())
	var state []string
	for _, s := range secrets {
		state = append(state, s.Name+"="+string(s.UID))
	}
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name + "-config"}, cm)).To(Succeed())
	return append(state, "configmap="+string(cm.UID))
}

// TestReleaseHasOneOwner: a Widget and a Gadget of the same name in one
// namespace; the Gadget came second, is refused with the owner's name,
// never touches the release, and deleting it leaves the release alone.
func TestReleaseHasOneOwner(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	owner := helmtest.CR("Widget", ns, "shop", map[string]any{"greeting": "from the owner"}, nil)
	g.Expect(k8s.Create(ctx, owner)).To(Succeed())
	expectDeployed(t, k8s, owner)
	waitSettled(t, k8s, owner)
	before := releaseState(g, ctx, k8s, ns, "shop")

	secrets, err := releaseSecrets(ctx, k8s, ns, "shop")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(HaveLen(1))
	cur, err := getCR(ctx, k8s, owner)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets[0].Labels).To(And(
		HaveKeyWithValue(release.OwnerKindLabel, "Widget.test.acme.com"),
		HaveKeyWithValue(release.OwnerNamespaceLabel, ns),
		HaveKeyWithValue(release.OwnerNameLabel, "shop"),
		HaveKeyWithValue(release.OwnerUIDLabel, string(cur.GetUID()))))

	second := helmtest.CR("Gadget", ns, "shop", map[string]any{"greeting": "from the second"}, map[string]string{"test.acme.com/managed": "true"})
	g.Expect(k8s.Create(ctx, second)).To(Succeed())
	expectRefused(t, k8s, second, actionpath.ReasonReleaseNameConflict,
		"release shop in namespace "+ns+" belongs to Widget "+ns+"/shop; rename this Gadget")

	t.Log("the owner's release stays as it was, and the refused resource settles")
	g.Consistently(func(g Gomega) {
		g.Expect(releaseState(g, ctx, k8s, ns, "shop")).To(Equal(before))
	}).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	waitSettled(t, k8s, second)
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop-config"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "from the owner"))

	t.Log("deleting the second resource leaves the release installed")
	g.Expect(k8s.Delete(ctx, second)).To(Succeed())
	expectGone(t, k8s, second)
	g.Consistently(func(g Gomega) {
		g.Expect(releaseState(g, ctx, k8s, ns, "shop")).To(Equal(before))
	}).WithTimeout(2 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	g.Expect(k8s.Delete(ctx, owner)).To(Succeed())
	expectGone(t, k8s, owner)
}

// TestReleaseInstalledByHand: a release the operator did not install is
// never taken over; once it is uninstalled, the waiting resource installs
// its own at once (the release deletion watch), without a resync.
func TestReleaseInstalledByHand(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	// Helm as a person would use it: release Secrets without owner
	// references and without owner labels.
	acg := libraryActionClientGetter(t, helmclient.StorageDriverMapper(helmclient.DefaultSecretsStorageDriver(helmclient.SecretsStorageDriverOpts{DisableOwnerRefInjection: true})))
	anchor := &corev1.ConfigMap{}
	anchor.SetNamespace(ns)
	anchor.SetName("anchor")
	g.Expect(k8s.Create(ctx, anchor)).To(Succeed())
	anchor.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	hand, err := acg.ActionClientFor(ctx, anchor)
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := loader.Load("testdata/charts/app")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = hand.Install("web", ns, ch, map[string]any{"greeting": "by hand"})
	g.Expect(err).NotTo(HaveOccurred())
	before := releaseState(g, ctx, k8s, ns, "web")

	cr := helmtest.CR("Widget", ns, "web", map[string]any{"greeting": "from the operator"}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectRefused(t, k8s, cr, actionpath.ReasonReleaseNameConflict,
		"release web in namespace "+ns+" was not installed by this operator")
	waitSettled(t, k8s, cr)
	g.Expect(releaseState(g, ctx, k8s, ns, "web")).To(Equal(before))

	_, err = hand.Uninstall("web")
	g.Expect(err).NotTo(HaveOccurred())
	expectDeployed(t, k8s, cr)
	g.Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-config"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "from the operator"))
	}).WithTimeout(quickly).WithPolling(poll).Should(Succeed())

	g.Expect(k8s.Delete(ctx, cr)).To(Succeed())
	expectGone(t, k8s, cr)
}

// TestReleaseStoredBeforeOwnerLabels: a release the runtime installed
// before it recorded owners (no owner labels, the library's owner reference
// on its storage) is recognised as the resource's own, labelled, and not
// reinstalled.
func TestReleaseStoredBeforeOwnerLabels(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	// Not yet labelled for the Gadget watch's selector: the runtime
	// ignores it while the old-style release is installed.
	cr := helmtest.CR("Gadget", ns, "legacy", map[string]any{}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	// The library's own getter, as the runtime was before owner labels.
	ac, err := libraryActionClientGetter(t).ActionClientFor(ctx, cr)
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := loader.Load("testdata/charts/app")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.Install("legacy", ns, ch, map[string]any{"greeting": "old"})
	g.Expect(err).NotTo(HaveOccurred())
	first, err := releaseSecrets(ctx, k8s, ns, "legacy")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first).To(HaveLen(1))
	g.Expect(first[0].Labels).NotTo(HaveKey(release.OwnerKindLabel))

	cur, err := getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	cur.SetLabels(map[string]string{"test.acme.com/managed": "true"})
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	expectDeployed(t, k8s, cr)

	g.Eventually(func(g Gomega) {
		secrets, err := releaseSecrets(ctx, k8s, ns, "legacy")
		g.Expect(err).NotTo(HaveOccurred())
		var uids []types.UID
		for _, s := range secrets {
			uids = append(uids, s.UID)
			g.Expect(s.Labels).To(HaveKeyWithValue(release.OwnerUIDLabel, string(cur.GetUID())))
		}
		g.Expect(uids).To(ContainElement(first[0].UID), "revision 1 must be kept: no reinstall")
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	events, err := eventsOf(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(events).NotTo(ContainElement(HaveField("Reason", actionpath.ReasonReleaseNameConflict)))

	g.Expect(k8s.Delete(ctx, cr)).To(Succeed())
	expectGone(t, k8s, cr)
	secrets, err := releaseSecrets(ctx, k8s, ns, "legacy")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(BeEmpty(), "its own release is uninstalled")
}

// TestClusterScopedReleaseOwner: a cluster-scoped Tenant's release lives
// in the release namespace, next to namespaced resources of the same name
// there; the namespaced one that came second is refused.
func TestClusterScopedReleaseOwner(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()

	name := "clash-" + rand.String(5)
	tenant := helmtest.CR("Tenant", "", name, map[string]any{"namespace": "tenant-" + name}, nil)
	g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
	expectDeployed(t, k8s, tenant)

	widget := helmtest.CR("Widget", testReleaseNamespace, name, map[string]any{}, nil)
	g.Expect(k8s.Create(ctx, widget)).To(Succeed())
	expectRefused(t, k8s, widget, actionpath.ReasonReleaseNameConflict,
		"release "+name+" in namespace "+testReleaseNamespace+" belongs to Tenant "+name+"; rename this Widget")
	secrets, err := releaseSecrets(ctx, k8s, testReleaseNamespace, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(HaveLen(1))

	for _, cr := range []*unstructured.Unstructured{widget, tenant} {
		g.Expect(k8s.Delete(ctx, cr)).To(Succeed())
		expectGone(t, k8s, cr)
	}
}

// TestNameHelmCannotHold: a resource whose name cannot name a release (one
// created before the CRDs refused such names) says why, and is deletable.
func TestNameHelmCannotHold(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	name := strings.Repeat("a", 60)
	cr := helmtest.CR("Widget", ns, name, map[string]any{}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectRefused(t, k8s, cr, actionpath.ReasonInvalidReleaseName, "cannot name a Helm release")
	g.Expect(k8s.Delete(ctx, cr)).To(Succeed())
	expectGone(t, k8s, cr)
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(cr), cr))).To(BeTrue())
}

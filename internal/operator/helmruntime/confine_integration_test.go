package helmruntime

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/actionpath"
)

// TestConfinement: a Box (namespaced, no confinement in watches.yaml)
// whose spec puts its ConfigMap in another namespace, or turns a
// ClusterRole on, is refused before Helm writes anything, for as long as
// its spec stays so; with the chart's defaults it installs, and an edit
// that moves the ConfigMap out is refused without touching the release.
// No webhook runs here: this is the runtime's own check.
func TestConfinement(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns, other := newTestNamespace(t, k8s), newTestNamespace(t, k8s)

	// nothingOutside asserts that no release of name was stored and that
	// other holds no ConfigMap of it.
	nothingOutside := func(g Gomega, name string) {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: other, Name: name + "-box"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap %s/%s-box: %v", other, name, err)
		var cms corev1.ConfigMapList
		g.Expect(k8s.List(ctx, &cms, client.InNamespace(other))).To(Succeed())
		for _, cm := range cms.Items {
			g.Expect(cm.Name).To(Equal("kube-root-ca.crt"), "only what the API server puts in a namespace")
		}
	}

	t.Log("a ConfigMap in another namespace is refused, and nothing is written")
	away := helmtest.CR("Box", ns, "away", map[string]any{"namespace": other}, nil)
	g.Expect(k8s.Create(ctx, away)).To(Succeed())
	expectRefused(t, k8s, away, actionpath.ReasonConfinement,
		fmt.Sprintf(`ConfigMap "away-box" in namespace %q is outside the resource's namespace %q: Box releases place their objects in their own namespace only`, other, ns))
	waitSettled(t, k8s, away)
	nothingOutside(g, "away")
	secrets, err := releaseSecrets(ctx, k8s, ns, "away")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(BeEmpty(), "no release record")
	cur, err := getCR(ctx, k8s, away)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conditionOf(cur, "ReleaseFailed")["message"]).NotTo(ContainSubstring("post render"), "the refusal's own words, not Helm's wrapping")

	t.Log("a ClusterRole is refused, and none is created")
	wide := helmtest.CR("Box", ns, "wide", map[string]any{"clusterRole": true}, nil)
	g.Expect(k8s.Create(ctx, wide)).To(Succeed())
	roleName := ns + "-wide-box"
	expectRefused(t, k8s, wide, actionpath.ReasonConfinement,
		fmt.Sprintf(`ClusterRole %q is cluster-scoped, and Box releases may not create cluster-scoped objects of kind rbac.authorization.k8s.io/ClusterRole`, roleName))
	err = k8s.Get(ctx, types.NamespacedName{Name: roleName}, &rbacv1.ClusterRole{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ClusterRole %s: %v", roleName, err)
	err = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "wide-box"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing of the release is written: %v", err)

	t.Log("the spec set back to the chart's defaults installs")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(away), away)).To(Succeed())
	g.Expect(unstructured.SetNestedField(away.Object, "", "spec", "namespace")).To(Succeed())
	g.Expect(k8s.Update(ctx, away)).To(Succeed())
	expectDeployed(t, k8s, away)
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "away-box"}, cm)).To(Succeed())
	cur, err = getCR(ctx, k8s, away)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conditionStatus(cur, "ReleaseFailed")).To(Equal("False"))
	waitSettled(t, k8s, away)

	t.Log("an upgrade that moves the ConfigMap out is refused; the release stays as it was")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(away), away)).To(Succeed())
	g.Expect(unstructured.SetNestedField(away.Object, other, "spec", "namespace")).To(Succeed())
	g.Expect(k8s.Update(ctx, away)).To(Succeed())
	msg := fmt.Sprintf(`ConfigMap "away-box" in namespace %q is outside the resource's namespace %q`, other, ns)
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, away)
		g.Expect(err).NotTo(HaveOccurred())
		irreconcilable := conditionOf(cur, "Irreconcilable")
		g.Expect(irreconcilable).To(And(HaveKeyWithValue("status", "True"), HaveKeyWithValue("reason", actionpath.ReasonConfinement)))
		g.Expect(irreconcilable["message"]).To(ContainSubstring(msg))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventsOf(ctx, k8s, away)).To(ContainElement(And(
			HaveField("Reason", actionpath.ReasonConfinement), HaveField("Message", ContainSubstring(msg)))))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	waitSettled(t, k8s, away)
	nothingOutside(g, "away")
	secrets, err = releaseSecrets(ctx, k8s, ns, "away")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(HaveLen(1), "no new revision")
	kept := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "away-box"}, kept)).To(Succeed())
	g.Expect(kept.UID).To(Equal(cm.UID))
	g.Consistently(func(g Gomega) {
		nothingOutside(g, "away")
	}).WithTimeout(2 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	for _, cr := range []*unstructured.Unstructured{away, wide} {
		g.Expect(k8s.Delete(ctx, cr)).To(Succeed())
		expectGone(t, k8s, cr)
	}
}

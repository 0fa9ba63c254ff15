package helmruntime

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/manifest"
)

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

// vaultPassword reads the password of a Vault's credentials Secret.
func vaultPassword(ctx context.Context, k8s client.Client, ns, name string) (string, error) {
	s := &corev1.Secret{}
	err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-credentials"}, s)
	return string(s.Data["password"]), err
}

// expectStatusRedacted checks that the CR's status shows the release
// manifest with the Secret, but not the password.
func expectStatusRedacted(t *testing.T, k8s client.Client, cr *unstructured.Unstructured, password string) {
	t.Helper()
	g := NewWithT(t)
	cur, err := getCR(t.Context(), k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	shown, found, err := unstructured.NestedString(cur.Object, "status", "deployedRelease", "manifest")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(shown).To(ContainSubstring("kind: Secret"))
	g.Expect(shown).To(ContainSubstring("password: " + manifest.RedactedValue))
	g.Expect(shown).To(ContainSubstring("kind: ConfigMap"))
	g.Expect(shown).NotTo(ContainSubstring(password))
}

// expectRevisions checks the release's revisions are exactly want.
func expectRevisions(t *testing.T, k8s client.Client, ns, name string, want ...string) {
	t.Helper()
	secrets, err := releaseSecrets(t.Context(), k8s, ns, name)
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, s := range secrets {
		names = append(names, s.Name)
	}
	g.Expect(names).To(ConsistOf(want))
}

// TestGeneratedValueIsStable covers a chart with a generated password: it
// is generated once, kept through idle reconciles (no new revision, no
// status churn), a hand-deleted Secret and an upgrade, never shown in the
// status, and recovered from a kept Secret when the resource is re-created.
func TestGeneratedValueIsStable(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	// The first Vault's Secret is not kept, so it gets an owner reference
	// and the library watches Secrets of this controller by owner.
	first := helmtest.CR("Vault", ns, "first", map[string]any{}, nil)
	g.Expect(k8s.Create(ctx, first)).To(Succeed())
	expectDeployed(t, k8s, first)
	password, err := vaultPassword(ctx, k8s, ns, "first")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(password).To(MatchRegexp(`^[A-Za-z0-9]{32}$`))
	expectStatusRedacted(t, k8s, first, password)

	// Idle: the CR settles (status writes of a redacted manifest are
	// no-ops), and reconciles caused by metadata edits change nothing.
	waitSettled(t, k8s, first)
	for i := range 5 {
		cur, err := getCR(ctx, k8s, first)
		g.Expect(err).NotTo(HaveOccurred())
		cur.SetAnnotations(map[string]string{"test.acme.com/poke": string(rune('a' + i))})
		g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	}
	waitSettled(t, k8s, first)
	expectRevisions(t, k8s, ns, "first", "sh.helm.release.v1.first.v1")
	g.Expect(vaultPassword(ctx, k8s, ns, "first")).To(Equal(password))

	// A Secret deleted by hand comes back from the release: same password.
	took := deleteAndTimeRecreation(t, k8s, &corev1.Secret{ObjectMeta: objectMeta(ns, "first-credentials")}, quickly)
	t.Logf("deleted Secret recreated after %s", took.Round(time.Millisecond))
	g.Expect(vaultPassword(ctx, k8s, ns, "first")).To(Equal(password))
	expectRevisions(t, k8s, ns, "first", "sh.helm.release.v1.first.v1")

	// An upgrade keeps it.
	cur, err := getCR(ctx, k8s, first)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cur.Object, "bonjour", "spec", "greeting")).To(Succeed())
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "first-settings"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "bonjour"))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	waitSettled(t, k8s, first)
	expectRevisions(t, k8s, ns, "first", "sh.helm.release.v1.first.v1", "sh.helm.release.v1.first.v2")
	g.Expect(vaultPassword(ctx, k8s, ns, "first")).To(Equal(password))
	expectStatusRedacted(t, k8s, first, password)

	// A second Vault keeps its Secret: no owner reference, only owner
	// annotations. Its deletion is still repaired at once (the period is an
	// hour), whatever handler the library picked for Secrets.
	second := helmtest.CR("Vault", ns, "second", map[string]any{"keep": true}, nil)
	g.Expect(k8s.Create(ctx, second)).To(Succeed())
	expectDeployed(t, k8s, second)
	secondPassword, err := vaultPassword(ctx, k8s, ns, "second")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secondPassword).NotTo(Equal(password))
	kept := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "second-credentials"}, kept)).To(Succeed())
	g.Expect(kept.OwnerReferences).To(BeEmpty())
	waitSettled(t, k8s, second)
	took = deleteAndTimeRecreation(t, k8s, &corev1.Secret{ObjectMeta: objectMeta(ns, "second-credentials")}, quickly)
	t.Logf("deleted kept Secret recreated after %s", took.Round(time.Millisecond))
	g.Expect(vaultPassword(ctx, k8s, ns, "second")).To(Equal(secondPassword))

	// Deleting the second Vault leaves its kept Secret; a Vault re-created
	// with the same name takes the password from it.
	g.Expect(k8s.Delete(ctx, second)).To(Succeed())
	expectGone(t, k8s, second)
	g.Expect(vaultPassword(ctx, k8s, ns, "second")).To(Equal(secondPassword))
	again := helmtest.CR("Vault", ns, "second", map[string]any{"keep": true}, nil)
	g.Expect(k8s.Create(ctx, again)).To(Succeed())
	expectDeployed(t, k8s, again)
	g.Expect(vaultPassword(ctx, k8s, ns, "second")).To(Equal(secondPassword))
	var events corev1.EventList
	g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range events.Items {
		reasons = append(reasons, e.Reason)
		g.Expect(e.Message).NotTo(SatisfyAny(ContainSubstring(password), ContainSubstring(secondPassword)))
	}
	g.Expect(reasons).To(ContainElements(ReasonValueGenerated, ReasonValueRecovered))

	for _, cr := range []*unstructured.Unstructured{first, again} {
		g.Expect(k8s.Delete(ctx, cr)).To(Succeed())
		expectGone(t, k8s, cr)
	}
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "first-credentials"}, &corev1.Secret{}))).To(BeTrue())
}

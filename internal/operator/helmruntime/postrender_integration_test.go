package helmruntime

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/actionpath"
)

// TestPostRender: a Parcel (the Box chart, with post-render patches in
// watches.yaml) installs patched, and Helm stores the patched manifest; a
// patch that moves an object out of the resource's namespace is refused
// by the confinement check, which judges the patched objects, before Helm
// writes anything. No webhook runs here: this is the runtime's own path.
func TestPostRender(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	t.Log("a release installs patched")
	plain := helmtest.CR("Parcel", ns, "plain", map[string]any{}, nil)
	g.Expect(k8s.Create(ctx, plain)).To(Succeed())
	expectDeployed(t, k8s, plain)
	var cm corev1.ConfigMap
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "plain-box"}, &cm)).To(Succeed())
	g.Expect(cm.Labels).To(HaveKeyWithValue("patched", "true"))
	clientset, err := kubernetes.NewForConfig(suite.cfg)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := driver.NewSecrets(clientset.CoreV1().Secrets(ns)).Get("sh.helm.release.v1.plain.v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Manifest).To(ContainSubstring("patched: \"true\""), "Helm stores the patched manifest")

	t.Log("a patch that moves an object to another namespace is refused, and nothing is written")
	away := helmtest.CR("Parcel", ns, "away", map[string]any{}, nil)
	g.Expect(k8s.Create(ctx, away)).To(Succeed())
	expectRefused(t, k8s, away, actionpath.ReasonConfinement,
		`ConfigMap "away-box" in namespace "parcel-elsewhere" is outside the resource's namespace "`+ns+`"`)
	waitSettled(t, k8s, away)
	for _, key := range []types.NamespacedName{{Namespace: ns, Name: "away-box"}, {Namespace: "parcel-elsewhere", Name: "away-box"}} {
		err := k8s.Get(ctx, key, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap %s: %v", key, err)
	}
	secrets, err := releaseSecrets(ctx, k8s, ns, "away")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(BeEmpty(), "no release record")
}

package helmruntime

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// TestReconcilerValuesAreReleaseValues: each release is installed with
// exactly what release.Values.Compute, which the admission check calls,
// returns for its spec (the generated value taken from the release). The
// runtime's translator calls the same chain of steps; the library sets the
// override values before it and coalesces with the chart's defaults after
// it, and this shows that neither changes a value, so the webhook renders
// what the reconciler will. The runtime's image defaults are part of it.
func TestReconcilerValuesAreReleaseValues(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	ws, err := watches.Load("testdata/watches.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	resolved, err := watchconfig.ResolveAll(ws, watchconfig.Defaults())
	g.Expect(err).NotTo(HaveOccurred())
	images, err := watchconfig.LoadImageDefaults("testdata/watches.yaml", watchconfig.OSEnv())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(watchconfig.SetImageDefaults(resolved, images)).To(Succeed())
	rules := map[string]release.Values{}
	for _, rw := range resolved {
		gvs, err := manifest.CompileGeneratedValues(rw.Chart)
		g.Expect(err).NotTo(HaveOccurred())
		rules[rw.GVK.Kind] = release.Values{Chart: rw.Chart, Overrides: rw.OverrideValues, Images: rw.ImageDefaults, Generated: gvs}
	}

	acg := libraryActionClientGetter(t)
	for _, tc := range []struct {
		kind, name string
		spec       map[string]any
	}{
		// An override the spec also sets, a value of the user, a default.
		{kind: "Widget", name: "values-override", spec: map[string]any{"enforced": "from-user", "greeting": "hi"}},
		// A generated value the spec leaves empty; the image block left
		// unset runs the watch's default image.
		{kind: "Vault", name: "values-generated", spec: map[string]any{"greeting": "hola"}},
		// An image block the spec sets keeps its choice.
		{kind: "Vault", name: "values-own-image", spec: map[string]any{"image": map[string]any{"tag": "2.0"}}},
	} {
		cr := helmtest.CR(tc.kind, ns, tc.name, tc.spec, nil)
		g.Expect(k8s.Create(ctx, cr)).To(Succeed())
		expectDeployed(t, k8s, cr)

		ac, err := acg.ActionClientFor(ctx, cr)
		g.Expect(err).NotTo(HaveOccurred())
		rel, err := ac.Get(tc.name)
		g.Expect(err).NotTo(HaveOccurred())
		fromRelease := func(gv manifest.CompiledValue) (string, error) {
			s, _ := release.NestedString(rel.Config, gv.Segments)
			return s, nil
		}
		want, err := rules[tc.kind].Compute(tc.spec, fromRelease, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rel.Config).To(Equal(map[string]any(want)), "%s %s: the release's values", tc.kind, tc.name)
		if tc.kind == "Vault" {
			cm := &corev1.ConfigMap{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.name + "-settings"}, cm)).To(Succeed())
			image := "registry.test/mirror/vault@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
			if tc.name == "values-own-image" {
				image = "registry.test/vault:2.0"
			}
			g.Expect(cm.Data).To(HaveKeyWithValue("image", image), tc.name)
		}
	}
}

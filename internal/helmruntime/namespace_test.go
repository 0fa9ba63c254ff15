package helmruntime

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	widgetGVK = schema.GroupVersionKind{Group: "test.acme.com", Version: "v1", Kind: "Widget"}
	tenantGVK = schema.GroupVersionKind{Group: "test.acme.com", Version: "v1", Kind: "Tenant"}
)

func newObject(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func TestIsClusterScoped(t *testing.T) {
	g := NewWithT(t)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(widgetGVK, meta.RESTScopeNamespace)
	mapper.Add(tenantGVK, meta.RESTScopeRoot)

	cs, err := IsClusterScoped(mapper, widgetGVK)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs).To(BeFalse())

	cs, err = IsClusterScoped(mapper, tenantGVK)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs).To(BeTrue())

	_, err = IsClusterScoped(mapper, schema.GroupVersionKind{Group: "test.acme.com", Version: "v1", Kind: "Missing"})
	g.Expect(err).To(MatchError(ContainSubstring("is its CRD installed?")))
	g.Expect(meta.IsNoMatchError(errors.Unwrap(err))).To(BeTrue())
}

func TestReleaseNamespaceMapper(t *testing.T) {
	tests := []struct {
		name          string
		clusterScoped bool
		obj           client.Object
		want          string
		wantErr       bool
	}{
		// Namespaced kinds keep the custom resource's namespace.
		{name: "namespaced", obj: newObject(widgetGVK, "team-a", "w"), want: "team-a"},
		// A namespaced kind without namespace is a bug, not a fallback case.
		{name: "namespaced without namespace", obj: newObject(widgetGVK, "", "w"), wantErr: true},
		// Cluster-scoped kinds go to the release namespace.
		{name: "cluster-scoped", clusterScoped: true, obj: newObject(tenantGVK, "", "t"), want: "releases"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ReleaseNamespaceMapper(tc.clusterScoped, "releases")(tc.obj)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// recordingActionClient records the namespaces Install and Upgrade receive.
type recordingActionClient struct {
	helmclient.ActionInterface // nil: other methods are not called
	installNS, upgradeNS       string
	// manifest is the manifest of the releases returned.
	manifest string
	// cfg is returned by Config; capsAtInstall records its capabilities
	// when Install is called.
	cfg           action.Configuration
	capsAtInstall *chartutil.Capabilities
}

func (r *recordingActionClient) Config() *action.Configuration { return &r.cfg }

func (r *recordingActionClient) Install(name, ns string, _ *chart.Chart, _ map[string]interface{}, _ ...helmclient.InstallOption) (*release.Release, error) {
	r.installNS = ns
	r.capsAtInstall = r.cfg.Capabilities
	return &release.Release{Name: name, Namespace: ns, Manifest: r.manifest}, nil
}

func (r *recordingActionClient) Upgrade(name, ns string, _ *chart.Chart, _ map[string]interface{}, _ ...helmclient.UpgradeOption) (*release.Release, error) {
	r.upgradeNS = ns
	return &release.Release{Name: name, Namespace: ns, Manifest: r.manifest}, nil
}

func TestInstallInReleaseNamespace(t *testing.T) {
	g := NewWithT(t)
	rec := &recordingActionClient{}
	inner := helmclient.ActionClientGetterFunc(func(context.Context, client.Object) (helmclient.ActionInterface, error) {
		return rec, nil
	})

	// Cluster-scoped: the reconciler passes obj.GetNamespace() == "".
	getter := &layeredGetter{base: inner, nsFor: ReleaseNamespaceMapper(true, "releases"), layers: []layer{installInReleaseNamespace}}
	tenant := newObject(tenantGVK, "", "acme")
	ac, err := getter.ActionClientFor(t.Context(), tenant)
	g.Expect(err).NotTo(HaveOccurred())

	rel, err := ac.Install("acme", tenant.GetNamespace(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Namespace).To(Equal("releases"))
	g.Expect(rec.installNS).To(Equal("releases"))

	_, err = ac.Upgrade("acme", tenant.GetNamespace(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.upgradeNS).To(Equal("releases"))

	// Namespaced: the custom resource's namespace is kept.
	getter = &layeredGetter{base: inner, nsFor: ReleaseNamespaceMapper(false, "releases"), layers: []layer{installInReleaseNamespace}}
	widget := newObject(widgetGVK, "team-a", "web")
	ac, err = getter.ActionClientFor(t.Context(), widget)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.Install("web", widget.GetNamespace(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.installNS).To(Equal("team-a"))

	// Mapping failures surface before any Helm call.
	_, err = getter.ActionClientFor(t.Context(), newObject(widgetGVK, "", "web"))
	g.Expect(err).To(MatchError(ContainSubstring("map release namespace")))

	// Errors of the wrapped getter are returned as they are.
	boom := errors.New("boom")
	getter = &layeredGetter{
		layers: []layer{installInReleaseNamespace},
		base: helmclient.ActionClientGetterFunc(func(context.Context, client.Object) (helmclient.ActionInterface, error) {
			return nil, boom
		}),
		nsFor: ReleaseNamespaceMapper(true, "releases"),
	}
	_, err = getter.ActionClientFor(t.Context(), tenant)
	g.Expect(err).To(MatchError(boom))
}

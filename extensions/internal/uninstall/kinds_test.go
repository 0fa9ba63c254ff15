package uninstall

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestLoadKindsShipped reads the repository's kinds and watches files:
// every kind the operator serves is found, the CronScaler among them.
func TestLoadKindsShipped(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("..", "..", "..")
	kinds, err := LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"), filepath.Join(root, "watches.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds).To(Equal([]schema.GroupKind{
		{Group: "autoscaling.acme.com", Kind: "CronScaler"},
		{Group: "tenancy.acme.com", Kind: "NamespaceTenant"},
		{Group: "web.acme.com", Kind: "Nginx"},
		{Group: "web.acme.com", Kind: "WebApp"},
	}))
}

func TestLoadKindsMissingFile(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("..", "..", "..")
	_, err := LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"), filepath.Join(t.TempDir(), "watches.yaml"))
	g.Expect(err).To(MatchError(ContainSubstring("watches file")))
	_, err = LoadKinds(filepath.Join(t.TempDir(), "kinds.yaml"), filepath.Join(root, "watches.yaml"))
	g.Expect(err).To(MatchError(ContainSubstring("kinds file")))
}

func TestParseWatchedKinds(t *testing.T) {
	cases := []struct {
		name    string
		data    string
		want    []schema.GroupKind
		wantErr string
	}{
		// Only group and kind are read; the other fields (a chart that
		// is not there) do not matter.
		{"entries", "- group: a.io\n  version: v1\n  kind: A\n  chart: nowhere\n- group: b.io\n  kind: B\n",
			[]schema.GroupKind{{Group: "a.io", Kind: "A"}, {Group: "b.io", Kind: "B"}}, ""},
		// An empty file watches nothing.
		{"empty", "", []schema.GroupKind{}, ""},
		// An entry without a kind is an error, not a kind nobody finds.
		{"no kind", "- group: a.io\n", nil, "entry 0 has no kind"},
		// Not a list.
		{"not a list", "group: a.io\n", nil, "cannot unmarshal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseWatchedKinds([]byte(tc.data))
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestSortKinds(t *testing.T) {
	g := NewWithT(t)
	got := sortKinds([]schema.GroupKind{{Group: "b", Kind: "X"}, {Group: "a", Kind: "Y"}, {Group: "a", Kind: "X"}, {Group: "b", Kind: "X"}})
	g.Expect(got).To(Equal([]schema.GroupKind{{Group: "a", Kind: "X"}, {Group: "b", Kind: "X"}, {Group: "a", Kind: "Y"}}))
}

// crd is a CRD of group and kind with the given versions, the first one
// stored.
func crd(group, kind, plural string, versions ...string) apiextensionsv1.CustomResourceDefinition {
	c := apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural},
		},
	}
	for i, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0})
	}
	return c
}

func TestSelectCRDs(t *testing.T) {
	g := NewWithT(t)
	webapps := crd("web.acme.com", "WebApp", "webapps", "v1alpha1")
	nginxes := crd("web.acme.com", "Nginx", "nginxes", "v1alpha1")
	// Same kind, another group: someone else's.
	theirs := crd("other.io", "WebApp", "webapps", "v1")
	kinds := []schema.GroupKind{{Group: "web.acme.com", Kind: "Nginx"}, {Group: "web.acme.com", Kind: "WebApp"}, {Group: "tenancy.acme.com", Kind: "NamespaceTenant"}}
	got := SelectCRDs([]apiextensionsv1.CustomResourceDefinition{webapps, theirs, nginxes}, kinds)
	// In the order of kinds; the kind without a CRD is left out.
	g.Expect(got).To(HaveLen(2))
	g.Expect(got[0].Name).To(Equal("nginxes.web.acme.com"))
	g.Expect(got[1].Name).To(Equal("webapps.web.acme.com"))
}

func TestStorageVersion(t *testing.T) {
	g := NewWithT(t)
	c := crd("web.acme.com", "WebApp", "webapps", "v1alpha1", "v1beta1")
	// The stored version, not the last or the preferred one.
	g.Expect(StorageVersion(&c)).To(Equal("v1alpha1"))
	gvr, err := resourceOf(&c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gvr).To(Equal(schema.GroupVersionResource{Group: "web.acme.com", Version: "v1alpha1", Resource: "webapps"}))
	c.Spec.Versions[0].Storage = false
	_, err = StorageVersion(&c)
	g.Expect(err).To(MatchError(ContainSubstring("no storage version")))
}

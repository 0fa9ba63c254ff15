package watchconfig

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

func TestResolveReleaseNamespace(t *testing.T) {
	tests := []struct {
		name  string
		vars  map[string]string
		files map[string]string
		want  string
	}{{
		name: "POD_NAMESPACE wins over the service-account file",
		vars: map[string]string{PodNamespaceEnvVar: "from-env"},
		files: map[string]string{
			ServiceAccountNamespaceFile: "from-file",
		},
		want: "from-env",
	}, {
		name:  "service-account file when POD_NAMESPACE is unset",
		files: map[string]string{ServiceAccountNamespaceFile: "from-file\n"},
		want:  "from-file",
	}, {
		name:  "blank POD_NAMESPACE is ignored",
		vars:  map[string]string{PodNamespaceEnvVar: "  "},
		files: map[string]string{ServiceAccountNamespaceFile: "from-file"},
		want:  "from-file",
	}, {
		name:  "blank service-account file is ignored",
		files: map[string]string{ServiceAccountNamespaceFile: "\n"},
		want:  "default",
	}, {
		name: "default outside a cluster",
		want: "default",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(ResolveReleaseNamespace(EnvOf(tc.vars, tc.files))).To(Equal(tc.want))
		})
	}
}

func TestParseWatchNamespaces(t *testing.T) {
	tests := []struct {
		value string
		want  []string
	}{
		{value: "", want: nil},                      // unset: all namespaces
		{value: " , ,", want: nil},                  // only separators: all namespaces
		{value: "team-a", want: []string{"team-a"}}, // single namespace
		{value: "team-a,team-b", want: []string{"team-a", "team-b"}},
		{value: " team-a , team-b ,", want: []string{"team-a", "team-b"}}, // blanks trimmed
		{value: "team-a,team-a", want: []string{"team-a"}},                // duplicates dropped
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(ParseWatchNamespaces(tc.value)).To(Equal(tc.want))
		})
	}
}

var (
	widgetGVK = schema.GroupVersionKind{Group: "test.acme.com", Version: "v1", Kind: "Widget"}
	tenantGVK = schema.GroupVersionKind{Group: "test.acme.com", Version: "v1", Kind: "Tenant"}
)

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
		{name: "namespaced", obj: helmtest.Object(widgetGVK, "team-a", "w"), want: "team-a"},
		// A namespaced kind without namespace is a bug, not a fallback case.
		{name: "namespaced without namespace", obj: helmtest.Object(widgetGVK, "", "w"), wantErr: true},
		// Cluster-scoped kinds go to the release namespace.
		{name: "cluster-scoped", clusterScoped: true, obj: helmtest.Object(tenantGVK, "", "t"), want: "releases"},
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

package claims

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/release"
)

// Objects of a chart's own CRDs, which the server does not serve yet, are
// placed by the scope their CRD declares; the server's mapping wins for
// what it serves.
func TestWithCRDs(t *testing.T) {
	g := NewWithT(t)
	crd := func(kind, plural, scope string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: `+plural+`.example.com}
spec:
  group: example.com
  names: {kind: `+kind+`, plural: `+plural+`, singular: x}
  scope: `+scope+`
  versions: [{name: v1}, {name: v2}]
`), &u.Object)).To(Succeed())
		return u
	}
	server := meta.NewDefaultRESTMapper(nil)
	server.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper := WithCRDs(server, []*unstructured.Unstructured{crd("Widget", "widgets", "Namespaced"), crd("Realm", "realms", "Cluster")})
	objs, err := FromManifests(map[string]string{"t.yaml": `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
apiVersion: example.com/v2
kind: Realm
metadata: {name: r, namespace: ignored}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
---
apiVersion: other.example.com/v1
kind: Gizmo
metadata: {name: g}
`}, "ns", mapper)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(4))
	g.Expect(objs[0].Namespace).To(Equal("ns"))
	g.Expect(objs[0].Scope).To(Equal(release.Namespaced))
	g.Expect(objs[1].Namespace).To(BeEmpty())
	g.Expect(objs[1].Scope).To(Equal(release.ClusterScoped))
	g.Expect(objs[2].Scope).To(Equal(release.Namespaced))
	g.Expect(objs[3].Scope).To(BeZero(), "a kind neither serves stays unknown")
	g.Expect(WithCRDs(server, nil)).To(BeIdenticalTo(meta.RESTMapper(server)))
}

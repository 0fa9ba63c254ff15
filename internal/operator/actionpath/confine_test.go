package actionpath

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/acme/platform-operator/internal/operator/claims"
)

// TestPlacementsOfKeptBuild: the placements read from a kept build are
// those claims reads from the same manifest parsed: a namespaced object
// without a namespace lands in the release's (Helm's build defaults it),
// a cluster-scoped one has none even when its manifest names one; an
// object without a REST mapping sends the check back to the parse.
func TestPlacementsOfKeptBuild(t *testing.T) {
	g := NewWithT(t)
	const manifest = `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: here
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: there
  namespace: other
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: wide
  namespace: ignored
`
	rm := meta.NewDefaultRESTMapper(nil)
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	cr := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	rm.Add(cm, meta.RESTScopeNamespace)
	rm.Add(cr, meta.RESTScopeRoot)
	objs, err := claims.FromManifests(map[string]string{"manifest": manifest}, "team-a", rm)
	g.Expect(err).NotTo(HaveOccurred())

	info := func(gvk schema.GroupVersionKind, name, ns string) *resource.Info {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetName(name)
		u.SetNamespace(ns)
		m, err := rm.RESTMapping(gvk.GroupKind(), gvk.Version)
		g.Expect(err).NotTo(HaveOccurred())
		return &resource.Info{Name: name, Namespace: ns, Object: u, Mapping: m}
	}
	built := kube.ResourceList{info(cm, "here", "team-a"), info(cm, "there", "other"), info(cr, "wide", "ignored")}
	got, ok := placementsOf(built)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(claims.Placements(objs)))

	built[0].Mapping = nil
	_, ok = placementsOf(built)
	g.Expect(ok).To(BeFalse(), "an object without a mapping is left to the parse")
}

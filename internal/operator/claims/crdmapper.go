package claims

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WithCRDs returns mapper, which falls back, for a kind the API server
// does not serve (yet), on the CustomResourceDefinitions crds: a chart's
// crds/, which the runtime installs before the chart's templates are
// applied (actionpath/crds.go), so that the objects the templates render
// of them are placed by the scope their CRD declares.
func WithCRDs(mapper meta.RESTMapper, crds []*unstructured.Unstructured) meta.RESTMapper {
	if len(crds) == 0 {
		return mapper
	}
	own := meta.NewDefaultRESTMapper(nil)
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		singular, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "singular")
		scopeName, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		scope := meta.RESTScopeNamespace
		if scopeName == "Cluster" {
			scope = meta.RESTScopeRoot
		}
		for _, v := range versions {
			name, _, _ := unstructured.NestedString(v.(map[string]interface{}), "name")
			if kind == "" || plural == "" || name == "" {
				continue
			}
			gv := schema.GroupVersion{Group: group, Version: name}
			own.AddSpecific(gv.WithKind(kind), gv.WithResource(plural), gv.WithResource(singular), scope)
		}
	}
	return fallbackMapper{RESTMapper: mapper, fallback: own}
}

// fallbackMapper asks fallback for the kinds RESTMapper does not know.
type fallbackMapper struct {
	meta.RESTMapper
	fallback meta.RESTMapper
}

// RESTMapping maps gk with the server's mapper, else with the fallback.
func (m fallbackMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil && meta.IsNoMatchError(err) {
		if own, ownErr := m.fallback.RESTMapping(gk, versions...); ownErr == nil {
			return own, nil
		}
	}
	return mapping, err
}

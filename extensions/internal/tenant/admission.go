package tenant

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespaceIndex indexes NamespaceTenants by spec.namespaceName.
const namespaceIndex = "spec.namespaceName"

// NamespaceClaims is the admission check of NamespaceTenants that no
// template can make: two tenants created one after the other with the same
// namespaceName would both render a namespace that neither has installed
// yet. It reads the manager's cache, indexed by IndexNamespaces. A
// namespace that exists already and is not the tenant's own is refused by
// the chart itself (its lookup), when the admission check renders it.
type NamespaceClaims struct {
	Client client.Reader
}

// IndexNamespaces registers the index NamespaceClaims looks tenants up in.
func IndexNamespaces(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, NewObject(), namespaceIndex, func(o client.Object) []string {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		if ns := (Tenant{u}).NamespaceName(); ns != "" {
			return []string{ns}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing NamespaceTenants by namespace: %w", err)
	}
	return nil
}

// Check refuses obj when another NamespaceTenant claims its namespace.
func (c NamespaceClaims) Check(ctx context.Context, obj *unstructured.Unstructured) (field.ErrorList, error) {
	ns := Tenant{obj}.NamespaceName()
	if ns == "" {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(GVK.GroupVersion().WithKind(GVK.Kind + "List"))
	if err := c.Client.List(ctx, list, client.MatchingFields{namespaceIndex: ns}); err != nil {
		return nil, fmt.Errorf("listing the NamespaceTenants of namespace %s: %w", ns, err)
	}
	for _, other := range list.Items {
		if other.GetName() != obj.GetName() {
			return field.ErrorList{field.Forbidden(field.NewPath("spec", "namespaceName"), fmt.Sprintf(
				"namespace %q is claimed by NamespaceTenant %s; a namespace belongs to one tenant only: choose another namespaceName",
				ns, other.GetName()))}, nil
		}
	}
	return nil, nil
}

package admission

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/claims"
)

// hostIndex is the cache index of Ingresses by the hosts they serve.
const hostIndex = "admission.hosts"

// IndexIngressHosts indexes the Ingresses of the cache by host, for
// IngressesByHost.
func IndexIngressHosts(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &networkingv1.Ingress{}, hostIndex, func(obj client.Object) []string {
		in, ok := obj.(*networkingv1.Ingress)
		if !ok {
			return nil
		}
		return claims.IngressHosts(in)
	})
}

// IngressesByHost finds the Ingresses serving a host in the cache (every
// namespace the sidecar watches).
type IngressesByHost struct {
	Reader client.Reader
}

var _ claims.IngressIndex = IngressesByHost{}

// ServingHost lists the Ingresses that serve host.
func (i IngressesByHost) ServingHost(ctx context.Context, host string) ([]claims.Ingress, error) {
	var list networkingv1.IngressList
	if err := i.Reader.List(ctx, &list, client.MatchingFields{hostIndex: host}); err != nil {
		return nil, err
	}
	out := make([]claims.Ingress, 0, len(list.Items))
	for _, in := range list.Items {
		out = append(out, claims.Ingress{
			Namespace: in.Namespace, Name: in.Name,
			ReleaseName:      in.Annotations[claims.ReleaseNameAnnotation],
			ReleaseNamespace: in.Annotations[claims.ReleaseNamespaceAnnotation],
		})
	}
	return out, nil
}

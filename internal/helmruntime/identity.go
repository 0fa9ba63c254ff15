package helmruntime

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReleaseServiceAccountAnnotation, on a namespace, names the
// ServiceAccount of that namespace that the releases in it are applied
// as, whatever their kind's serviceAccountName says. Namespaces are
// cluster-scoped, so it is set by whoever may edit the namespace (a
// NamespaceTenant's chart, a cluster administrator), not by its tenants.
const ReleaseServiceAccountAnnotation = "platform.acme.com/release-service-account"

// releaseIdentity picks the ServiceAccount a kind's releases are applied
// as (helmconfig.Config.ServiceAccountFor).
type releaseIdentity struct {
	// namespaces reads Namespaces' metadata (the manager's cache).
	namespaces client.Reader
	// kindDefault is the kind's serviceAccountName, "" for none.
	kindDefault string
}

// serviceAccountFor returns the annotation of ns when it has one, and the
// kind's serviceAccountName otherwise. The uninstall of a resource whose
// namespace is being deleted runs with the operator's rights: the
// namespace's deletion removes the ServiceAccount's RoleBindings at the
// same time, and a forbidden uninstall would keep the resource's
// finalizer, and so the namespace, forever.
func (r releaseIdentity) serviceAccountFor(ctx context.Context, obj client.Object, ns string) (string, error) {
	var meta metav1.PartialObjectMetadata
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.namespaces.Get(ctx, client.ObjectKey{Name: ns}, &meta); err != nil {
		if apierrors.IsNotFound(err) {
			return r.kindDefault, nil
		}
		return "", err
	}
	if meta.DeletionTimestamp != nil && obj.GetDeletionTimestamp() != nil {
		return "", nil
	}
	if sa, ok := meta.Annotations[ReleaseServiceAccountAnnotation]; ok && sa != "" {
		if msgs := validation.IsDNS1123Subdomain(sa); len(msgs) > 0 {
			return "", fmt.Errorf("namespace %s: annotation %s: %q is not a ServiceAccount name: %s", ns, ReleaseServiceAccountAnnotation, sa, strings.Join(msgs, "; "))
		}
		return sa, nil
	}
	return r.kindDefault, nil
}

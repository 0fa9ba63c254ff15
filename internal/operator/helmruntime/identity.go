package helmruntime

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/releaseidentity"
)

// ReleaseServiceAccountAnnotation, on a namespace, names the
// ServiceAccount of that namespace that the releases in it are applied
// as (releaseidentity.NamespaceAnnotation).
const ReleaseServiceAccountAnnotation = releaseidentity.NamespaceAnnotation

// releaseIdentity picks the ServiceAccount a kind's releases are applied
// as (helmconfig.Config.ServiceAccountFor), in the order package
// releaseidentity gives.
type releaseIdentity struct {
	// namespaces reads Namespaces' metadata (the manager's cache).
	namespaces client.Reader
	// kindDefault is the kind's serviceAccountName, "" for none.
	kindDefault string
	// managed, when set, is the ServiceAccount a release is applied as
	// when neither its namespace nor its kind names one; the runtime
	// creates it. Unset for cluster-scoped kinds, whose releases create
	// namespaces and run with the operator's rights.
	managed *releaseidentity.Managed
	// writer creates the managed ServiceAccount and its RoleBinding.
	writer client.Writer
}

// serviceAccountFor returns the ServiceAccount of ns that obj's release
// is applied as, "" for the operator's rights. The uninstall of a
// resource whose namespace is being deleted runs with the operator's
// rights: the namespace's deletion removes the ServiceAccount's
// RoleBindings at the same time, and a forbidden uninstall would keep the
// resource's finalizer, and so the namespace, forever (see
// namespaceDeleting for the deletes the operator may not make itself).
func (r releaseIdentity) serviceAccountFor(ctx context.Context, obj client.Object, ns string) (string, error) {
	meta, err := releaseidentity.Namespace(ctx, r.namespaces, ns)
	if err != nil {
		return "", err
	}
	if meta == nil {
		// The action fails on the missing namespace, as it would with the
		// operator's rights.
		return r.fallback(), nil
	}
	if meta.DeletionTimestamp != nil && obj.GetDeletionTimestamp() != nil {
		return "", nil
	}
	if sa, err := releaseidentity.Annotated(meta); err != nil || sa != "" {
		return sa, err
	}
	if r.kindDefault != "" || r.managed == nil {
		return r.kindDefault, nil
	}
	if err := r.managed.Ensure(ctx, r.writer, ns, meta.UID); err != nil {
		return "", err
	}
	return r.managed.Name, nil
}

// namespaceDeleting reports whether ns is being deleted
// (helmconfig.Config.NamespaceDeleting).
func (r releaseIdentity) namespaceDeleting(ctx context.Context, ns string) (bool, error) {
	meta, err := releaseidentity.Namespace(ctx, r.namespaces, ns)
	if err != nil || meta == nil {
		return false, err
	}
	return meta.DeletionTimestamp != nil, nil
}

// fallback is the identity of a release whose namespace is not known.
func (r releaseIdentity) fallback() string {
	if r.kindDefault == "" && r.managed != nil {
		return r.managed.Name
	}
	return r.kindDefault
}

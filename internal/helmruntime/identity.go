package helmruntime

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/watchconfig"
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
	// managed, when set, is the ServiceAccount a release is applied as
	// when neither its namespace nor its kind names one; the runtime
	// creates it. Unset for cluster-scoped kinds, whose releases create
	// namespaces and run with the operator's rights.
	managed *managedIdentity
	// writer creates the managed ServiceAccount and its RoleBinding.
	writer client.Writer
}

// serviceAccountFor returns the annotation of ns when it has one, the
// kind's serviceAccountName otherwise, and else the managed
// ServiceAccount (created in ns when missing) or "" (the operator's
// rights). The uninstall of a resource whose namespace is being deleted
// runs with the operator's rights: the namespace's deletion removes the
// ServiceAccount's RoleBindings at the same time, and a forbidden
// uninstall would keep the resource's finalizer, and so the namespace,
// forever (see namespaceDeleting for the deletes the operator may not
// make itself).
func (r releaseIdentity) serviceAccountFor(ctx context.Context, obj client.Object, ns string) (string, error) {
	meta, err := r.namespace(ctx, ns)
	if err != nil {
		return "", err
	}
	if meta == nil {
		return r.fallback(), nil
	}
	if meta.DeletionTimestamp != nil && obj.GetDeletionTimestamp() != nil {
		return "", nil
	}
	if sa, ok := meta.Annotations[ReleaseServiceAccountAnnotation]; ok && sa != "" {
		if err := watchconfig.CheckServiceAccountName(sa); err != nil {
			return "", fmt.Errorf("namespace %s: annotation %s: %w", ns, ReleaseServiceAccountAnnotation, err)
		}
		return sa, nil
	}
	if r.kindDefault != "" || r.managed == nil {
		return r.kindDefault, nil
	}
	if err := r.managed.ensure(ctx, r.writer, ns, meta.UID); err != nil {
		return "", err
	}
	return r.managed.name, nil
}

// namespaceDeleting reports whether ns is being deleted
// (helmconfig.Config.NamespaceDeleting).
func (r releaseIdentity) namespaceDeleting(ctx context.Context, ns string) (bool, error) {
	meta, err := r.namespace(ctx, ns)
	if err != nil || meta == nil {
		return false, err
	}
	return meta.DeletionTimestamp != nil, nil
}

// namespace returns the metadata of ns, nil when there is no such
// namespace.
func (r releaseIdentity) namespace(ctx context.Context, ns string) (*metav1.PartialObjectMetadata, error) {
	var meta metav1.PartialObjectMetadata
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.namespaces.Get(ctx, client.ObjectKey{Name: ns}, &meta); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return &meta, nil
}

// fallback is the identity of a release whose namespace is not (yet)
// known: the kind's, else the managed one's name (the action then fails
// on the missing namespace, as with the operator's rights).
func (r releaseIdentity) fallback() string {
	if r.kindDefault == "" && r.managed != nil {
		return r.managed.name
	}
	return r.kindDefault
}

// ManagedByLabel marks the ServiceAccounts and RoleBindings the runtime
// creates for releases (managedIdentity), so that they can be found.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// managedByValue is ManagedByLabel's value on them.
const managedByValue = "platform-operator"

// managedIdentity is the ServiceAccount the runtime applies a namespace's
// releases as when nothing else names one (Options.ReleaseServiceAccount):
// it creates the ServiceAccount in the namespace, and a RoleBinding of
// the same name that grants it the release deployer ClusterRole in that
// namespace only. It is shared by the kinds of the runtime.
type managedIdentity struct {
	// name is the ServiceAccount's and the RoleBinding's; role is the
	// ClusterRole bound.
	name, role string
	// ensured holds the UIDs of the namespaces where both were found or
	// created, so that each namespace costs two requests once per process
	// (a namespace deleted and created again has a new UID).
	ensured sync.Map
}

// ensure creates the ServiceAccount and the RoleBinding in ns (whose UID
// is uid) unless they exist. An existing one is left as it is: what a
// cluster administrator changed in it stands.
func (m *managedIdentity) ensure(ctx context.Context, c client.Writer, ns string, uid types.UID) error {
	if _, ok := m.ensured.Load(uid); ok {
		return nil
	}
	labels := map[string]string{ManagedByLabel: managedByValue}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.name, Labels: labels}}
	if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the ServiceAccount %s/%s that releases are applied as: %w", ns, m.name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: m.role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: m.name}},
	}
	if err := c.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind the ClusterRole %s to the ServiceAccount %s/%s: %w", m.role, ns, m.name, err)
	}
	m.ensured.Store(uid, struct{}{})
	return nil
}

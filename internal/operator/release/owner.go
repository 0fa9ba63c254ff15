package release

import (
	"fmt"
	"strconv"

	"helm.sh/helm/v3/pkg/chartutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// A Helm release has exactly one owner.
//
// Releases are named after their custom resource, and releases of every
// kind share the namespace they are stored in: an Nginx and a WebApp both
// named shop in one namespace, or a NamespaceTenant and a namespaced
// resource of the same name in the release namespace, would otherwise
// upgrade one release back and forth with two charts, each upgrade deleting
// the other chart's objects. A release installed by hand with `helm install`
// would be taken over the same way.
//
// So every revision records its owner in labels (OwnerKindLabel and the
// others below), Helm copies them to each upgrade and rollback, and Judge
// decides, from the recorded owner and the resource that asks, whether the
// resource may act on the release:
//
//   - a record of another resource, or of a release installed by hand, is
//     Foreign: never read, changed or uninstalled by this resource;
//   - a record of the same kind, namespace and name is Owned; when its UID
//     differs, the recorded owner has been deleted (two live objects cannot
//     share a kind and a name) and the release is adopted (Adopted), which
//     is what the old owner's finalizer would have left to a new resource
//     had it been able to uninstall;
//   - a release stored before the owner labels existed is judged by the
//     controller owner reference the library puts on its storage Secret
//     (OwnerFromReference).

// Labels recording the owner of a release on every revision.
const (
	// OwnerKindLabel is the owner's kind and group ("Nginx.platform.acme.com").
	OwnerKindLabel = "platform.acme.com/owner-kind"
	// OwnerNamespaceLabel is the owner's namespace, empty for cluster-scoped
	// kinds.
	OwnerNamespaceLabel = "platform.acme.com/owner-namespace"
	// OwnerNameLabel is the owner's name.
	OwnerNameLabel = "platform.acme.com/owner-name"
	// OwnerUIDLabel is the owner's UID.
	OwnerUIDLabel = "platform.acme.com/owner-uid"
	// ShardLabel is the shard that stored the revision (shard.ID; empty when
	// the operator is not sharded). A revision another shard left pending
	// may still be in progress there.
	ShardLabel = "platform.acme.com/shard-id"
)

// Owner identifies the custom resource a release belongs to.
type Owner struct {
	GroupKind schema.GroupKind
	Namespace string
	Name      string
	UID       types.UID
}

// Object is what OwnerOf reads: a custom resource, typed or not.
type Object interface {
	metav1.Object
	runtime.Object
}

// OwnerOf returns obj as the owner of its release.
func OwnerOf(obj Object) Owner {
	return Owner{
		GroupKind: obj.GetObjectKind().GroupVersionKind().GroupKind(),
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
		UID:       obj.GetUID(),
	}
}

// String is how messages name the owner: "Nginx acc/shop", "NamespaceTenant acme".
func (o Owner) String() string {
	if o.Namespace == "" {
		return o.GroupKind.Kind + " " + o.Name
	}
	return o.GroupKind.Kind + " " + o.Namespace + "/" + o.Name
}

// SameResource reports whether o and other name the same kind, namespace
// and name (the UID aside).
func (o Owner) SameResource(other Owner) bool {
	return o.GroupKind == other.GroupKind && o.Namespace == other.Namespace && o.Name == other.Name
}

// Labels are the release labels that record o.
func (o Owner) Labels() map[string]string {
	return map[string]string{
		OwnerKindLabel:      o.GroupKind.String(),
		OwnerNamespaceLabel: o.Namespace,
		OwnerNameLabel:      o.Name,
		OwnerUIDLabel:       string(o.UID),
	}
}

// OwnerFromLabels returns the owner recorded in the labels of a release or
// of its storage Secret (Helm copies the release's labels there).
func OwnerFromLabels(labels map[string]string) (Owner, bool) {
	kind, ok := labels[OwnerKindLabel]
	if !ok || kind == "" {
		return Owner{}, false
	}
	return Owner{
		GroupKind: schema.ParseGroupKind(kind),
		Namespace: labels[OwnerNamespaceLabel],
		Name:      labels[OwnerNameLabel],
		UID:       types.UID(labels[OwnerUIDLabel]),
	}, true
}

// OwnerFromReference returns the resource named by ref, the controller
// owner reference of a release's storage Secret in namespace (the library
// puts one there); false when there is none (installed by hand). An owner
// reference names an object of the Secret's namespace or a cluster-scoped
// one; the claimant's own kind tells which.
func OwnerFromReference(ref *metav1.OwnerReference, namespace string, claimant Owner) (Owner, bool) {
	if ref == nil {
		return Owner{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return Owner{}, false
	}
	owner := Owner{GroupKind: gv.WithKind(ref.Kind).GroupKind(), Name: ref.Name, UID: ref.UID}
	if owner.GroupKind == claimant.GroupKind {
		owner.Namespace = claimant.Namespace
	} else {
		owner.Namespace = namespace
	}
	return owner, true
}

// Verdict is what Judge decides about a release and the resource that asks.
type Verdict int

const (
	// Owned: the release belongs to the claimant.
	Owned Verdict = iota
	// Adopted: the release belonged to a deleted resource of the claimant's
	// kind and name; it now belongs to the claimant, which must record
	// itself on the release.
	Adopted
	// Foreign: the release belongs to another resource, or was installed
	// outside the operator.
	Foreign
)

// Judge decides whether claimant may act on a release whose owner is
// recorded (ok false: no owner is known, the release was installed by
// hand).
func Judge(recorded Owner, ok bool, claimant Owner) Verdict {
	switch {
	case !ok || !recorded.SameResource(claimant):
		return Foreign
	case recorded.UID != "" && claimant.UID != "" && recorded.UID != claimant.UID:
		return Adopted
	}
	return Owned
}

// RecordOwner returns the owner a stored release record names: its owner
// labels, else the controller owner reference of its storage Secret in
// namespace; false when it names none.
func RecordOwner(record metav1.Object, namespace string, claimant Owner) (Owner, bool) {
	if o, ok := OwnerFromLabels(record.GetLabels()); ok {
		return o, true
	}
	return OwnerFromReference(metav1.GetControllerOfNoCopy(record), namespace, claimant)
}

// LatestRecord returns the latest revision among the storage Secrets of one
// release (Helm's "version" label); nil when there is none.
func LatestRecord(records []metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	var latest *metav1.PartialObjectMetadata
	latestVersion := -1
	for i := range records {
		v, err := strconv.Atoi(records[i].Labels["version"])
		if err == nil && v > latestVersion {
			latest, latestVersion = &records[i], v
		}
	}
	return latest
}

// ConflictError refuses an action on a release that belongs to another
// resource or was installed outside the operator.
type ConflictError struct {
	// Release and Namespace locate the release.
	Release, Namespace string
	// Owner is the resource the release belongs to; nil when the operator
	// did not install it.
	Owner *Owner
	// Claimant is the kind of the resource that was refused.
	Claimant string
}

func (e *ConflictError) Error() string {
	if e.Owner == nil {
		return fmt.Sprintf("release %s in namespace %s was not installed by this operator (helm install or another tool); rename this %s, or uninstall that release",
			e.Release, e.Namespace, e.Claimant)
	}
	return fmt.Sprintf("release %s in namespace %s belongs to %s; rename this %s", e.Release, e.Namespace, e.Owner, e.Claimant)
}

// InvalidNameError refuses a release under a name Helm cannot hold. Only a
// new resource with another name helps.
type InvalidNameError struct {
	Name, Kind string
	Err        error
}

func (e *InvalidNameError) Error() string {
	return fmt.Sprintf("%s name %q cannot name a Helm release (%v; at most 53 characters, lower-case letters, digits, '-' and '.'): create it under a shorter name", e.Kind, e.Name, e.Err)
}

func (e *InvalidNameError) Unwrap() error { return e.Err }

// CheckName refuses a release name Helm cannot hold, for a resource of kind.
func CheckName(name, kind string) *InvalidNameError {
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return &InvalidNameError{Name: name, Kind: kind, Err: err}
	}
	return nil
}

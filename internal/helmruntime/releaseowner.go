package helmruntime

import (
	"context"
	"errors"
	"fmt"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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
// So every release revision records its owner in labels (kind and group,
// namespace, name and UID of the custom resource), and before the library
// installs, upgrades or uninstalls anything, the ownership layer checks
// that the release, if it exists, belongs to the resource at hand:
//
//   - A release owned by another resource, or one the operator did not
//     install, is invisible to this resource: Get reports no release (so
//     recovery never unlocks it and the status shows no release), Install
//     and Upgrade are refused with a ReleaseConflictError that names the
//     owner, and Uninstall leaves it alone (so deleting the resource that
//     came second removes its finalizer and nothing else).
//   - The refusal is terminal: the resource is not retried with backoff but
//     reconciled again when it changes, when a release of its name is
//     deleted (releaseDeletionWatch), or at its periodic resync.
//   - Releases installed before the owner labels existed are judged by the
//     controller owner reference the library puts on their storage Secret,
//     and the labels are then recorded on them, without a new revision.
//   - A recorded owner of the same kind, namespace and name but another UID
//     has been deleted (two live objects cannot share a kind and a name), so
//     the release is adopted, which is what the old owner's finalizer would
//     have left to a new resource had it been able to uninstall.
//   - A name Helm cannot hold (longer than 53 characters, say; the CRDs
//     refuse such names at apply, but they may predate that rule) has no
//     release: Install is refused with the reason, Uninstall finds nothing,
//     so the resource is always deletable.

// Labels recording the owner of a release on every revision. Helm copies a
// release's labels to each upgrade and rollback.
const (
	// ReleaseOwnerKindLabel is the owner's kind and group, "Nginx.web.acme.com".
	ReleaseOwnerKindLabel = "platform.acme.com/owner-kind"
	// ReleaseOwnerNamespaceLabel is the owner's namespace, empty for
	// cluster-scoped kinds.
	ReleaseOwnerNamespaceLabel = "platform.acme.com/owner-namespace"
	// ReleaseOwnerNameLabel is the owner's name.
	ReleaseOwnerNameLabel = "platform.acme.com/owner-name"
	// ReleaseOwnerUIDLabel is the owner's UID.
	ReleaseOwnerUIDLabel = "platform.acme.com/owner-uid"
	// ReleaseShardLabel is the shard that stored the revision (shard.ID;
	// empty when the operator is not sharded). A revision another shard
	// left pending may still be in progress there (see pending.go).
	ReleaseShardLabel = "platform.acme.com/shard-id"
)

// ReasonReleaseNameConflict is the reason of the Warning Event emitted when
// a resource's release belongs to another resource.
const ReasonReleaseNameConflict = "ReleaseNameConflict"

// ReasonInvalidReleaseName is the reason of the Warning Event emitted when
// a resource's name cannot name a Helm release.
const ReasonInvalidReleaseName = "InvalidReleaseName"

// ReasonReleaseAdopted is the reason of the Normal Event emitted when a
// release whose recorded owner was deleted is adopted by the resource that
// now has its kind and name.
const ReasonReleaseAdopted = "ReleaseAdopted"

// releaseOwner identifies the custom resource a release belongs to.
type releaseOwner struct {
	GroupKind schema.GroupKind
	Namespace string
	Name      string
	UID       types.UID
}

func ownerOf(obj client.Object) releaseOwner {
	return releaseOwner{
		GroupKind: obj.GetObjectKind().GroupVersionKind().GroupKind(),
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
		UID:       obj.GetUID(),
	}
}

// String is how messages name the owner: "Nginx acc/shop", "NamespaceTenant acme".
func (o releaseOwner) String() string {
	if o.Namespace == "" {
		return o.GroupKind.Kind + " " + o.Name
	}
	return o.GroupKind.Kind + " " + o.Namespace + "/" + o.Name
}

// sameResource reports whether o and other name the same kind, namespace
// and name (the UID aside).
func (o releaseOwner) sameResource(other releaseOwner) bool {
	return o.GroupKind == other.GroupKind && o.Namespace == other.Namespace && o.Name == other.Name
}

// labels are the release labels that record o.
func (o releaseOwner) labels() map[string]string {
	return map[string]string{
		ReleaseOwnerKindLabel:      o.GroupKind.String(),
		ReleaseOwnerNamespaceLabel: o.Namespace,
		ReleaseOwnerNameLabel:      o.Name,
		ReleaseOwnerUIDLabel:       string(o.UID),
	}
}

// recordedOwner returns the owner recorded in a release's labels.
func recordedOwner(rel *release.Release) (releaseOwner, bool) {
	return ownerFromLabels(rel.Labels)
}

// ownerFromLabels returns the owner recorded in the labels of a release or
// of its storage Secret (Helm copies the release's labels there).
func ownerFromLabels(labels map[string]string) (releaseOwner, bool) {
	kind, ok := labels[ReleaseOwnerKindLabel]
	if !ok || kind == "" {
		return releaseOwner{}, false
	}
	return releaseOwner{
		GroupKind: schema.ParseGroupKind(kind),
		Namespace: labels[ReleaseOwnerNamespaceLabel],
		Name:      labels[ReleaseOwnerNameLabel],
		UID:       types.UID(labels[ReleaseOwnerUIDLabel]),
	}, true
}

// ownerFromReference returns the resource named by ref, the controller
// owner reference of a release's storage Secret in namespace (the library
// puts one there); false when there is none (installed by hand). An owner
// reference names an object of the Secret's namespace or a cluster-scoped
// one; the claimant's own kind tells which.
func ownerFromReference(ref *metav1.OwnerReference, namespace string, claimant releaseOwner) (releaseOwner, bool) {
	if ref == nil {
		return releaseOwner{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return releaseOwner{}, false
	}
	owner := releaseOwner{GroupKind: gv.WithKind(ref.Kind).GroupKind(), Name: ref.Name, UID: ref.UID}
	if owner.GroupKind == claimant.GroupKind {
		owner.Namespace = claimant.Namespace
	} else {
		owner.Namespace = namespace
	}
	return owner, true
}

// ReleaseConflictError refuses an action on a release that belongs to
// another resource or was installed outside the operator. It is terminal
// for controller-runtime: the resource is reconciled again when something
// changes, not retried with backoff.
type ReleaseConflictError struct {
	// Release and Namespace locate the release.
	Release, Namespace string
	// Owner is the resource the release belongs to; nil when the operator
	// did not install it.
	Owner *releaseOwner
	// Claimant is the kind of the resource that was refused.
	Claimant string
}

func (e *ReleaseConflictError) Error() string {
	if e.Owner == nil {
		return fmt.Sprintf("release %s in namespace %s was not installed by this operator (helm install or another tool); rename this %s, or uninstall that release",
			e.Release, e.Namespace, e.Claimant)
	}
	return fmt.Sprintf("release %s in namespace %s belongs to %s; rename this %s", e.Release, e.Namespace, e.Owner, e.Claimant)
}

// Is makes the error a reconcile.TerminalError for errors.Is.
func (e *ReleaseConflictError) Is(target error) bool {
	return errors.Is(reconcile.TerminalError(nil), target)
}

// InvalidReleaseNameError refuses to install a release under a name Helm
// cannot hold. It is terminal: only a new resource with another name helps.
type InvalidReleaseNameError struct {
	Name, Kind string
	Err        error
}

func (e *InvalidReleaseNameError) Error() string {
	return fmt.Sprintf("%s name %q cannot name a Helm release (%v; at most 53 characters, lower-case letters, digits, '-' and '.'): create it under a shorter name", e.Kind, e.Name, e.Err)
}

func (e *InvalidReleaseNameError) Unwrap() error { return e.Err }

// Is makes the error a reconcile.TerminalError for errors.Is.
func (e *InvalidReleaseNameError) Is(target error) bool {
	return errors.Is(reconcile.TerminalError(nil), target)
}

// ownership is the layer that keeps a release to its one owner: a
// release of another resource, or one installed by hand, is never read,
// changed or uninstalled by this resource's reconciles (see above).
func (k *kindRuntime) ownership(ctx context.Context, t target, below actionClient) (actionClient, error) {
	return &ownedActionClient{actionClient: below, k: k, ctx: ctx, obj: t.obj, owner: ownerOf(t.obj), namespace: t.namespace}, nil
}

// ownedActionClient is the action client of one reconcile of one resource.
// It judges the owner of the release on every call, from the release the
// memo below it read once.
type ownedActionClient struct {
	actionClient
	k         *kindRuntime
	ctx       context.Context
	obj       client.Object
	owner     releaseOwner
	namespace string
}

// verdict is what the ownership check found.
type verdict int

const (
	noRelease verdict = iota
	owned
	foreign
)

// judgeLatest reads the latest revision of name and judges who owns it.
func (c *ownedActionClient) judgeLatest(name string) (*release.Release, verdict, *ReleaseConflictError, error) {
	if chartutil.ValidateReleaseName(name) != nil {
		return nil, noRelease, nil, nil
	}
	rel, err := c.actionClient.Get(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, noRelease, nil, nil
	}
	if err != nil {
		return nil, noRelease, nil, err
	}
	if rec, ok := recordedOwner(rel); ok {
		return c.judge(rel, rec)
	}
	// Stored before owner labels: the library puts a controller owner
	// reference to the resource on every storage Secret.
	rec, ok, err := c.storageOwner(rel)
	if err != nil {
		return nil, noRelease, nil, err
	}
	if !ok {
		return rel, foreign, c.conflict(name, nil), nil
	}
	rel, v, conflict, err := c.judge(rel, rec)
	if err == nil && v == owned {
		rel = c.recordOwner(rel)
	}
	return rel, v, conflict, err
}

// judge compares the recorded owner rec with this resource.
func (c *ownedActionClient) judge(rel *release.Release, rec releaseOwner) (*release.Release, verdict, *ReleaseConflictError, error) {
	if !rec.sameResource(c.owner) {
		return rel, foreign, c.conflict(rel.Name, &rec), nil
	}
	if rec.UID != "" && c.owner.UID != "" && rec.UID != c.owner.UID {
		msg := fmt.Sprintf("release %s in namespace %s was owned by a %s with UID %s, which no longer exists; adopted it",
			rel.Name, c.namespace, rec, rec.UID)
		c.k.log.Info("Adopting a release whose owner was deleted", "release", c.namespace+"/"+rel.Name, "previousUID", string(rec.UID), "uid", string(c.owner.UID))
		c.k.recorder.Event(c.obj, corev1.EventTypeNormal, ReasonReleaseAdopted, msg)
		rel = c.recordOwner(rel)
	}
	return rel, owned, nil, nil
}

func (c *ownedActionClient) conflict(name string, owner *releaseOwner) *ReleaseConflictError {
	return &ReleaseConflictError{Release: name, Namespace: c.namespace, Owner: owner, Claimant: c.owner.GroupKind.Kind}
}

// storageOwner returns the resource named by the controller owner reference
// of rel's storage Secret; false when it has none (installed by hand).
func (c *ownedActionClient) storageOwner(rel *release.Release) (releaseOwner, bool, error) {
	var s metav1.PartialObjectMetadata
	s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	key := client.ObjectKey{Namespace: c.namespace, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version)}
	if err := c.k.apiReader.Get(c.ctx, key, &s); err != nil {
		if apierrors.IsNotFound(err) {
			// Not stored as a Secret of the Secrets driver: not ours.
			return releaseOwner{}, false, nil
		}
		return releaseOwner{}, false, fmt.Errorf("read the storage of release %s: %w", key, err)
	}
	owner, ok := ownerFromReference(metav1.GetControllerOfNoCopy(&s), c.namespace, c.owner)
	return owner, ok, nil
}

// recordOwner stores this resource as the owner of the deployed record rel,
// without a new revision. A failure is logged: the next reconcile judges
// the release again.
func (c *ownedActionClient) recordOwner(rel *release.Release) *release.Release {
	updated, err := relabel(c.Config(), rel, c.owner.labels())
	if err != nil {
		c.k.log.Info("Could not record the owner on the release", "release", c.namespace+"/"+rel.Name, "error", err.Error())
	}
	return updated
}

// refuse reports a conflict and returns it as the action's error.
func (c *ownedActionClient) refuse(conflict *ReleaseConflictError) error {
	c.k.log.Info("Release belongs to another resource; not touching it", "release", c.namespace+"/"+conflict.Release, "error", conflict.Error())
	c.k.recorder.Event(c.obj, corev1.EventTypeWarning, ReasonReleaseNameConflict, conflict.Error())
	c.k.refusals.refused(c.obj.GetUID(), ReasonReleaseNameConflict, conflict.Error())
	return conflict
}

// Get returns the release of name when this resource owns it, and reports
// no release otherwise.
func (c *ownedActionClient) Get(name string, opts ...helmclient.GetOption) (*release.Release, error) {
	rel, v, _, err := c.judgeLatest(name)
	switch {
	case err != nil:
		return nil, err
	case v != owned:
		return nil, driver.ErrReleaseNotFound
	case len(opts) > 0: // a specific revision
		return c.actionClient.Get(name, opts...)
	}
	return rel, nil
}

// History lists the revisions of name when this resource owns it.
func (c *ownedActionClient) History(name string, opts ...helmclient.HistoryOption) ([]*release.Release, error) {
	if _, err := c.Get(name); err != nil {
		return nil, err
	}
	return c.actionClient.History(name, opts...)
}

// Install installs the release with this resource recorded as its owner,
// unless a release of that name exists or the name is invalid.
func (c *ownedActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	if err := chartutil.ValidateReleaseName(name); err != nil {
		invalid := &InvalidReleaseNameError{Name: name, Kind: c.owner.GroupKind.Kind, Err: err}
		c.k.recorder.Event(c.obj, corev1.EventTypeWarning, ReasonInvalidReleaseName, invalid.Error())
		c.k.refusals.refused(c.obj.GetUID(), ReasonInvalidReleaseName, invalid.Error())
		return nil, invalid
	}
	_, v, conflict, err := c.judgeLatest(name)
	if err != nil {
		return nil, err
	}
	if v == foreign {
		return nil, c.refuse(conflict)
	}
	c.k.refusals.forget(c.obj.GetUID())
	labels := c.revisionLabels()
	opts = append(opts, func(i *action.Install) error {
		i.Labels = mergeLabels(i.Labels, labels)
		return nil
	})
	return c.actionClient.Install(name, namespace, chrt, vals, opts...)
}

// Upgrade upgrades the release when this resource owns it.
func (c *ownedActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	if err := c.mayChange(name); err != nil {
		return nil, err
	}
	return c.actionClient.Upgrade(name, namespace, chrt, vals, append(opts, c.labelUpgrade)...)
}

// DryRunUpgrade renders the upgrade when this resource owns the release.
func (c *ownedActionClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	if err := c.mayChange(name); err != nil {
		return nil, err
	}
	return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, append(opts, c.labelUpgrade)...)
}

// mayChange refuses an upgrade of a release this resource does not own.
func (c *ownedActionClient) mayChange(name string) error {
	_, v, conflict, err := c.judgeLatest(name)
	if err != nil {
		return err
	}
	if v == foreign {
		return c.refuse(conflict)
	}
	c.k.refusals.forget(c.obj.GetUID())
	return nil
}

// labelUpgrade records this resource as the owner on the new revision.
func (c *ownedActionClient) labelUpgrade(u *action.Upgrade) error {
	u.Labels = mergeLabels(u.Labels, c.revisionLabels())
	return nil
}

// revisionLabels are the labels of a revision this resource stores: its
// owner and the shard that stored it.
func (c *ownedActionClient) revisionLabels() map[string]string {
	l := c.owner.labels()
	l[ReleaseShardLabel] = c.k.rt.shardID
	return l
}

// Uninstall uninstalls the release when this resource owns it; a release
// of another owner, or none, is reported as not found, so that the library
// removes its finalizer without touching anything.
func (c *ownedActionClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	_, v, conflict, err := c.judgeLatest(name)
	if err != nil {
		return nil, err
	}
	if v == foreign {
		c.k.log.Info("Release belongs to another resource; leaving it installed", "release", c.namespace+"/"+name, "owner", conflict.Error())
	}
	c.k.refusals.forget(c.obj.GetUID())
	if v != owned {
		return nil, driver.ErrReleaseNotFound
	}
	return c.actionClient.Uninstall(name, opts...)
}

// refusedByOwnership reports whether err is the ownership layer's refusal,
// which that layer has reported already.
func refusedByOwnership(err error) bool {
	var conflict *ReleaseConflictError
	var invalid *InvalidReleaseNameError
	return errors.As(err, &conflict) || errors.As(err, &invalid)
}

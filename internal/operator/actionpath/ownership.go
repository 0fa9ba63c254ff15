package actionpath

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/acme/platform-operator/internal/operator/claims"
	"github.com/acme/platform-operator/internal/operator/postrender"
	"github.com/acme/platform-operator/internal/operator/release"
)

// The ownership layer keeps a release to its one owner (the rules are
// package release's; see release.Judge):
//
//   - A release owned by another resource, or one the operator did not
//     install, is invisible to this resource: Get reports no release (so
//     recovery never unlocks it and the status shows no release), Install
//     and Upgrade are refused with a release.ConflictError that names the
//     owner, and Uninstall leaves it alone (so deleting the resource that
//     came second removes its finalizer and nothing else).
//   - The refusal is terminal: the resource is not retried with backoff but
//     reconciled again when it changes, when a release of its name is
//     deleted (the runtime's release deletion watch), or at its periodic
//     resync.
//   - Releases installed before the owner labels existed are judged by the
//     controller owner reference the library puts on their storage Secret,
//     and the labels are then recorded on them, without a new revision; so
//     is the new owner of an adopted release.
//   - A name Helm cannot hold (longer than 53 characters, say; the CRDs
//     refuse such names at apply, but they may predate that rule) has no
//     release: Install is refused with the reason, Uninstall finds nothing,
//     so the resource is always deletable.

// ReasonReleaseNameConflict is the reason of the Warning Event emitted when
// a resource's release belongs to another resource.
const ReasonReleaseNameConflict = "ReleaseNameConflict"

// ReasonInvalidReleaseName is the reason of the Warning Event emitted when
// a resource's name cannot name a Helm release.
const ReasonInvalidReleaseName = "InvalidReleaseName"

// ReasonObjectConflict is the reason of the Warning Event emitted when an
// object a resource's chart renders exists and belongs to another release
// (or to none), so Helm refuses the install.
const ReasonObjectConflict = "ObjectConflict"

// ReasonReleaseAdopted is the reason of the Normal Event emitted when a
// release whose recorded owner was deleted is adopted by the resource that
// now has its kind and name.
const ReasonReleaseAdopted = "ReleaseAdopted"

// terminal makes a refusal terminal for controller-runtime: the resource
// is reconciled again when something changes, not retried with backoff. Its
// message is the refusal's.
type terminal struct{ error }

func (e terminal) Unwrap() error { return e.error }

// Is makes the error a reconcile.TerminalError for errors.Is.
func (e terminal) Is(target error) bool {
	return errors.Is(reconcile.TerminalError(nil), target)
}

// ownership is the layer that keeps a release to its one owner: a
// release of another resource, or one installed by hand, is never read,
// changed or uninstalled by this resource's reconciles (see above).
func ownership(log logr.Logger, recorder record.EventRecorder, apiReader client.Reader, shardID string, post *postrender.Renderer) func(context.Context, target, actionClient) actionClient {
	return func(ctx context.Context, t target, below actionClient) actionClient {
		return &ownedActionClient{
			actionClient: below, log: log, recorder: recorder, apiReader: apiReader, shardID: shardID, postRender: post,
			ctx: ctx, obj: t.obj, owner: release.OwnerOf(t.obj), namespace: t.namespace,
		}
	}
}

// ownedActionClient is the action client of one reconcile of one resource.
// It judges the owner of the release on every call, from the release the
// memo below it read once.
type ownedActionClient struct {
	actionClient
	log       logr.Logger
	recorder  record.EventRecorder
	apiReader client.Reader
	shardID   string
	// postRender is the kind's post-render patches, which the install
	// applied: explainClash renders as it did.
	postRender *postrender.Renderer
	ctx        context.Context
	obj        client.Object
	owner      release.Owner
	namespace  string
}

// verdict is what the ownership check found.
type verdict int

const (
	noRelease verdict = iota
	owned
	foreign
)

// judgeLatest reads the latest revision of name and judges who owns it.
func (c *ownedActionClient) judgeLatest(name string) (*hrelease.Release, verdict, *release.ConflictError, error) {
	if release.CheckName(name, c.owner.GroupKind.Kind) != nil {
		return nil, noRelease, nil, nil
	}
	rel, err := c.actionClient.Get(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, noRelease, nil, nil
	}
	if err != nil {
		return nil, noRelease, nil, err
	}
	rec, ok := release.OwnerFromLabels(rel.Labels)
	labelled := ok
	if !ok {
		// Stored before owner labels: the library puts a controller owner
		// reference to the resource on every storage Secret.
		if rec, ok, err = c.storageOwner(rel); err != nil {
			return nil, noRelease, nil, err
		}
	}
	switch release.Judge(rec, ok, c.owner) {
	case release.Foreign:
		if !ok {
			return rel, foreign, c.conflict(name, nil), nil
		}
		return rel, foreign, c.conflict(name, &rec), nil
	case release.Adopted:
		msg := fmt.Sprintf("release %s in namespace %s was owned by a %s with UID %s, which no longer exists; adopted it",
			rel.Name, c.namespace, rec, rec.UID)
		c.log.Info("Adopting a release whose owner was deleted", "release", c.namespace+"/"+rel.Name, "previousUID", string(rec.UID), "uid", string(c.owner.UID))
		c.recorder.Event(c.obj, corev1.EventTypeNormal, ReasonReleaseAdopted, msg)
		rel = c.recordOwner(rel)
	case release.Owned:
		if !labelled {
			rel = c.recordOwner(rel)
		}
	}
	return rel, owned, nil, nil
}

func (c *ownedActionClient) conflict(name string, owner *release.Owner) *release.ConflictError {
	return &release.ConflictError{Release: name, Namespace: c.namespace, Owner: owner, Claimant: c.owner.GroupKind.Kind}
}

// storageOwner returns the resource named by the controller owner reference
// of rel's storage Secret; false when it has none (installed by hand).
func (c *ownedActionClient) storageOwner(rel *hrelease.Release) (release.Owner, bool, error) {
	var s metav1.PartialObjectMetadata
	s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	key := client.ObjectKey{Namespace: c.namespace, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version)}
	if err := c.apiReader.Get(c.ctx, key, &s); err != nil {
		if apierrors.IsNotFound(err) {
			// Not stored as a Secret of the Secrets driver: not ours.
			return release.Owner{}, false, nil
		}
		return release.Owner{}, false, fmt.Errorf("read the storage of release %s: %w", key, err)
	}
	owner, ok := release.OwnerFromReference(metav1.GetControllerOfNoCopy(&s), c.namespace, c.owner)
	return owner, ok, nil
}

// recordOwner stores this resource as the owner of the deployed record rel,
// without a new revision. A failure is logged: the next reconcile judges
// the release again.
func (c *ownedActionClient) recordOwner(rel *hrelease.Release) *hrelease.Release {
	updated, err := relabel(c.Config(), rel, c.owner.Labels())
	if err != nil {
		c.log.Info("Could not record the owner on the release", "release", c.namespace+"/"+rel.Name, "error", err.Error())
	}
	return updated
}

// refuse reports a conflict and returns it as the action's error.
func (c *ownedActionClient) refuse(conflict *release.ConflictError) error {
	c.log.Info("Release belongs to another resource; not touching it", "release", c.namespace+"/"+conflict.Release, "error", conflict.Error())
	c.recorder.Event(c.obj, corev1.EventTypeWarning, ReasonReleaseNameConflict, conflict.Error())
	refused(c.obj, ReasonReleaseNameConflict, conflict.Error())
	return terminal{conflict}
}

// Get returns the release of name when this resource owns it, and reports
// no release otherwise.
func (c *ownedActionClient) Get(name string, opts ...helmclient.GetOption) (*hrelease.Release, error) {
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
func (c *ownedActionClient) History(name string, opts ...helmclient.HistoryOption) ([]*hrelease.Release, error) {
	if _, err := c.Get(name); err != nil {
		return nil, err
	}
	return c.actionClient.History(name, opts...)
}

// Install installs the release with this resource recorded as its owner,
// unless a release of that name exists or the name is invalid.
func (c *ownedActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*hrelease.Release, error) {
	if invalid := release.CheckName(name, c.owner.GroupKind.Kind); invalid != nil {
		c.recorder.Event(c.obj, corev1.EventTypeWarning, ReasonInvalidReleaseName, invalid.Error())
		refused(c.obj, ReasonInvalidReleaseName, invalid.Error())
		return nil, terminal{invalid}
	}
	_, v, conflict, err := c.judgeLatest(name)
	if err != nil {
		return nil, err
	}
	if v == foreign {
		return nil, c.refuse(conflict)
	}
	proceeded(c.obj)
	rel, err := c.actionClient.Install(name, namespace, chrt, vals, append(opts, labelInstall(c.revisionLabels()))...)
	if claims.ImportRefused(err) {
		err = c.explainClash(name, namespace, chrt, vals, err)
	}
	return rel, err
}

// explainClash turns Helm's refusal to install over an object that is not
// the release's own into the refusal the admission check gives for it (a
// claims.ObjectClashError naming the object and its holder), reported and
// terminal like the other refusals of this layer: retrying changes nothing
// until the resource or the holder does. For resources the admission
// webhook did not see. The chart is rendered again as the install
// rendered it, the kind's post-render patches applied. When the clash
// cannot be found again (the object
// went, or the chart has dependencies, which are not rendered again
// here), Helm's error stays.
func (c *ownedActionClient) explainClash(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, helmErr error) error {
	cfg := c.Config()
	if cfg == nil || cfg.RESTClientGetter == nil || cfg.Capabilities == nil || len(chrt.Dependencies()) > 0 {
		return helmErr
	}
	restCfg, err := cfg.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return helmErr
	}
	mapper, err := cfg.RESTClientGetter.ToRESTMapper()
	if err != nil {
		return helmErr
	}
	files, err := claims.Render(c.ctx, restCfg, chrt, vals,
		chartutil.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}, cfg.Capabilities)
	if err != nil {
		return helmErr
	}
	if files, err = c.postRender.Files(files); err != nil {
		return helmErr
	}
	objs, err := claims.FromManifests(files, namespace, mapper)
	if err != nil {
		return helmErr
	}
	var spec map[string]interface{}
	if u, ok := c.obj.(*unstructured.Unstructured); ok {
		spec, _ = u.Object["spec"].(map[string]interface{})
	}
	clash, err := claims.Checker{Reader: c.apiReader}.Objects(c.ctx, objs,
		claims.Claimant{Owner: c.owner, ReleaseName: name, ReleaseNamespace: namespace, Spec: spec})
	if err != nil || clash == nil {
		return helmErr
	}
	c.log.Info("An object of the release belongs to another release; not installing", "release", namespace+"/"+name, "error", clash.Error())
	c.recorder.Event(c.obj, corev1.EventTypeWarning, ReasonObjectConflict, clash.Error())
	refused(c.obj, ReasonObjectConflict, clash.Error())
	return terminal{clash}
}

// Upgrade upgrades the release when this resource owns it.
func (c *ownedActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	if err := c.mayChange(name); err != nil {
		return nil, err
	}
	return c.actionClient.Upgrade(name, namespace, chrt, vals, append(opts, labelUpgrade(c.revisionLabels()))...)
}

// DryRunUpgrade renders the upgrade when this resource owns the release.
func (c *ownedActionClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	if err := c.mayChange(name); err != nil {
		return nil, err
	}
	return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, append(opts, labelUpgrade(c.revisionLabels()))...)
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
	proceeded(c.obj)
	return nil
}

// revisionLabels are the labels of a revision this resource stores: its
// owner and the shard that stored it.
func (c *ownedActionClient) revisionLabels() map[string]string {
	l := c.owner.Labels()
	l[release.ShardLabel] = c.shardID
	return l
}

// Uninstall uninstalls the release when this resource owns it; a release
// of another owner, or none, is reported as not found, so that the library
// removes its finalizer without touching anything.
func (c *ownedActionClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*hrelease.UninstallReleaseResponse, error) {
	_, v, conflict, err := c.judgeLatest(name)
	if err != nil {
		return nil, err
	}
	if v == foreign {
		c.log.Info("Release belongs to another resource; leaving it installed", "release", c.namespace+"/"+name, "owner", conflict.Error())
	}
	proceeded(c.obj)
	if v != owned {
		return nil, driver.ErrReleaseNotFound
	}
	return c.actionClient.Uninstall(name, opts...)
}

// reportedRefusal reports whether err is a refusal of the ownership, the
// confinement, the record size or the remediation layer, which that layer
// has reported already.
func reportedRefusal(err error) bool {
	return refusedByOwnership(err) || refusedByConfinement(err) || refusedForSize(err) || refusedByRemediation(err)
}

// refusedByOwnership reports whether err is the ownership layer's refusal.
func refusedByOwnership(err error) bool {
	var conflict *release.ConflictError
	var invalid *release.InvalidNameError
	var clash *claims.ObjectClashError
	return errors.As(err, &conflict) || errors.As(err, &invalid) || errors.As(err, &clash)
}

package actionpath

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/prometheus/client_golang/prometheus"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/helmconfig"
	"github.com/acme/platform-operator/internal/operator/postrender"
	"github.com/acme/platform-operator/internal/operator/reconcilerecord"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/valuesschema"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// The action path: everything between the library's reconciler and Helm.
//
// For every reconcile the library asks the kind's ActionClientGetter for the
// action client of one custom resource and calls Get, then Install, or a
// dry-run Upgrade followed by an Upgrade (or nothing), or Reconcile (drift
// repair), or Uninstall. The getter New builds answers with the library's
// own action client (built by package helmconfig) under a stack of
// layers, each adding one concern, after one step: a release left pending
// by an action that can no longer finish is unlocked (pending.go). Read
// New's list top to bottom: that is the order in which an upgrade passes
// through the layers on its way to Helm.

// Kind is what the action path of one kind is built from.
type Kind struct {
	// Kind names the custom resource kind in metrics.
	Kind string
	Log  logr.Logger
	// Recorder records Events on the custom resources.
	Recorder record.EventRecorder
	// Status writes the Recovered condition; APIReader reads what the
	// cache does not hold (release Secrets' owner references).
	Status    client.Client
	APIReader client.Reader
	// ReleaseNamespace picks the namespace of a resource's release.
	ReleaseNamespace helmclient.ObjectToStringMapper
	// Activity records this process's actions; it outlives each manager.
	Activity *Activity
	// Charts remembers the digest of each chart.
	Charts *release.ChartDigests
	// DryRuns counts the library's dry-run upgrades by kind and result.
	DryRuns *prometheus.CounterVec
	// Capabilities is the kind's shared view of the API server.
	Capabilities *helmconfig.Capabilities
	// ShardID is this process's shard, recorded on every revision it stores.
	ShardID string
	// StaleAfter is how old a pending revision this process knows nothing
	// about must be to be unlocked.
	StaleAfter time.Duration
	// Drift is the kind's drift policy (watches.yaml drift).
	Drift watchconfig.Drift
	// Confinement is what the kind's releases may place outside their
	// resource's namespace (watches.yaml confinement).
	Confinement release.Confinement
	// PostRender is the kind's post-render patches (watches.yaml
	// postRender); nil changes nothing.
	PostRender *postrender.Renderer
	// Remediation is the kind's (watches.yaml remediation): whether its
	// charts' tests run; TestResults carries their outcomes to the
	// readiness controller.
	Remediation watchconfig.Remediation
	TestResults *TestResults
	// CRDs is the kind's policy for its chart's crds/ (watches.yaml crds).
	CRDs watchconfig.CRDPolicy
	// Versions are the kind's chart versions and the gate of its rollout
	// (chartversion.go); nil renders the library's chart.
	Versions *ChartVersions
	// Schemas validates the values of the kind's actions against its
	// charts' schemas, each compiled once (valuesschema.go); nil leaves
	// the validation to Helm's actions.
	Schemas *valuesschema.Schemas
}

// New returns the action client getter of one kind: base (the library's
// getter, helmconfig.NewActionClientGetter) under the layers of Layers.
func New(base helmclient.ActionClientGetter, k Kind) helmclient.ActionClientGetter {
	return &getter{
		base:   base,
		nsFor:  k.ReleaseNamespace,
		unlock: newStaleUnlocker(k.Log, k.Recorder, k.Status, k.Activity, k.ShardID, k.StaleAfter),
		layers: Layers(k),
	}
}

// NewWithLayers returns base under layers alone (outermost first, taken
// from Layers), without the stale-pending step: a part of the path, for
// tests that drive some of its layers against an API server.
func NewWithLayers(base helmclient.ActionClientGetter, nsFor helmclient.ObjectToStringMapper, layers ...Layer) helmclient.ActionClientGetter {
	return &getter{base: base, nsFor: nsFor, layers: layers}
}

// Layers are the layers of one kind's path, outermost first.
func Layers(k Kind) []Layer {
	return []Layer{
		// A release renders with the chart version its resource pins, or,
		// until the kind's rollout admits it, with the version it runs
		// (chartversion.go); every layer below sees that chart.
		{"chart version", chartVersionsLayer(k.Versions)},
		// A resource with the uninstall-wait annotation stays until its
		// release's objects are gone (uninstallwait.go); above the
		// failure Events, as waiting is no failure.
		{"uninstall wait", uninstallWaits(k.Recorder)},
		// An upgrade that failed is tried again with the same values only
		// after a backoff, not at each echo of its rollback
		// (upgradebackoff.go); above the failure Events, as waiting is no
		// new failure.
		{"upgrade backoff", upgradeBackoffs(k.Charts, k.clock())},
		// Failed installs, upgrades, renders and uninstalls become Warning
		// Events on the custom resource (events.go).
		{"failure events", failureEvents(k.Recorder)},
		// A failed upgrade that the library rolled back says so (rollback.go).
		{"rollback note", noteRollbacks},
		// Installs, upgrades and uninstalls of this process are recorded
		// while they run, for the stale-pending judgement (activity.go).
		{"activity", k.Activity.track},
		// A release another resource owns, or one installed by hand, is
		// never touched (ownership.go).
		{"ownership", ownership(k.Log, k.Recorder, k.APIReader, k.ShardID, k.PostRender)},
		// A revision that did not become Ready in time is rolled back as
		// the readiness controller decided, and the spec that broke it is
		// not applied again until it changes (remediate.go).
		{"remediation", remediations(k.Recorder, k.Activity)},
		// The chart's tests run on a revision whose objects are ready,
		// when the kind or the resource asks (charttests.go).
		{"chart tests", chartTests(k.Remediation, k.Recorder, k.TestResults, k.Log)},
		// A dry-run upgrade of an unchanged release is answered without
		// rendering; releases record the digest (digest.go).
		{"digest", digests(k.Charts, k.PostRender, k.DryRuns, k.Kind, k.Log)},
		// The kind's post-render patches apply to what installs and
		// upgrades render, before the confinement check judges it
		// (postrender.go).
		{"post-render", postRenders(k.PostRender)},
		// What a release renders lands only where the kind's allowance
		// lets it: refused before Helm writes anything (confine.go).
		{"confinement", confine(k.Log, k.Recorder, k.Confinement)},
		// An upgrade's manifest is post-rendered (owner references,
		// patches, the confinement check) once per reconcile, not again
		// after its dry-run (rendermemo.go).
		{"post-render memo", memoPostRenders},
		// A release whose record is larger than a Secret may hold is
		// refused, an upgrade at its dry-run, an install by the storage
		// before it sends the record (recordsize.go).
		{"record size", recordSizes(k.Log, k.Recorder)},
		// The release is read from storage once per reconcile; every write
		// to storage forgets it (memo.go).
		{"release memo", rememberRelease},
		// Drift is repaired, reported or left alone, as the kind and the
		// resource ask; ignored fields are not repaired (drift.go).
		{"drift policy", drifts(k.Drift, k.Status, k.Recorder, k.Log)},
		// Drift repair stamps Helm's ownership metadata on what it
		// recreates (driftrepair.go).
		{"repair stamp", stampOwnershipOnRepair},
		// Installs and upgrades go to the release namespace (namespace.go).
		{"release namespace", installInReleaseNamespace},
		// The chart's crds/ are created, or created and updated, as the
		// kind's policy says, with the operator's rights, and Established
		// before the release renders objects of them; Helm's own install of
		// crds/ is off (crds.go).
		{"CRDs", crdsOf(k.CRDs, k.Status, k.APIReader, k.Capabilities, k.Log)},
		// Charts with CRDs see fresh capabilities; releases that add APIs
		// drop the shared ones (capabilities.go).
		{"capabilities", capabilities(k.Capabilities)},
		// Values are validated against the chart's schemas, each compiled
		// once; Helm's action validates only what fails, compiling anew
		// (valuesschema.go).
		{"values schema", checkSchemas(k.Schemas)},
		// Helm gets its own copy of a chart with dependencies, which its
		// dependency processing edits (chartcopy.go).
		{"chart copy", copyCharts},
	}
}

// clock is the kind's clock: the Activity's, else the real one.
func (k Kind) clock() clock.PassiveClock {
	if k.Activity != nil {
		return k.Activity.clock
	}
	return clock.RealClock{}
}

// target is the custom resource one action client acts for, and where its
// release lives.
type target struct {
	obj       client.Object
	namespace string // the release namespace
}

// key names the release in logs and messages: namespace/name.
func (t target) key() string { return ReleaseKey(t.namespace, t.obj.GetName()) }

// ReleaseKey names a release in logs, messages and the Activity:
// namespace/name.
func ReleaseKey(namespace, name string) string { return namespace + "/" + name }

// A Layer adds one concern to the action client of one custom resource:
// Wrap returns the client the layer above it calls (ctx is the
// reconcile's). Layers do not act when the client is built.
type Layer struct {
	Name string
	Wrap func(ctx context.Context, t target, below actionClient) actionClient
}

// actionClient is the library's ActionInterface with dry-run upgrades as a
// method of their own. The library asks for a dry-run upgrade before every
// upgrade, to compare manifests; the top of the path tells the two apart
// once (splitDryRuns), so no layer parses upgrade options again. A layer
// embeds the client below it and overrides what it changes.
type actionClient interface {
	helmclient.ActionInterface
	// DryRunUpgrade renders the upgrade and asks the API server to
	// validate it (server-side dry-run), changing nothing.
	DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error)
}

// getter builds each action client: the base client at the bottom, the
// layers on top, the last layer of the list first; then it unlocks a stale
// pending release through the whole stack, so that the unlock reads the
// release as every layer does (a release of another owner is never
// unlocked) and its write makes the memo forget the pending revision.
type getter struct {
	base   helmclient.ActionClientGetter
	nsFor  helmclient.ObjectToStringMapper
	unlock *staleUnlocker
	layers []Layer // outermost first
}

var _ helmclient.ActionClientGetter = (*getter)(nil)

// ActionClientFor returns the action client of obj.
func (g *getter) ActionClientFor(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
	ns, err := g.nsFor(obj)
	if err != nil {
		return nil, fmt.Errorf("map release namespace: %w", err)
	}
	lib, err := g.base.ActionClientFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	t := target{obj: obj, namespace: ns}
	ac := stack(ctx, t, lib, g.layers)
	if g.unlock == nil { // NewWithLayers
		return ac, nil
	}
	if err := g.unlock.unlockIfStale(ctx, ac, t); err != nil {
		return nil, err
	}
	return ac, nil
}

// stack returns the action client of t: lib under layers (outermost first).
func stack(ctx context.Context, t target, lib helmclient.ActionInterface, layers []Layer) splitDryRuns {
	var ac actionClient = libraryClient{lib}
	for i := len(layers) - 1; i >= 0; i-- {
		ac = layers[i].Wrap(ctx, t, ac)
	}
	return splitDryRuns{actionClient: ac, t: t}
}

// libraryClient is the bottom of the path: the library's action client, on
// which a dry-run upgrade is an upgrade with the dry-run option.
type libraryClient struct {
	helmclient.ActionInterface
}

// DryRunUpgrade passes the dry-run upgrade to the library.
func (c libraryClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	return c.Upgrade(name, namespace, chrt, vals, opts...)
}

// splitDryRuns is the top of the path: what the library's reconciler calls.
type splitDryRuns struct {
	actionClient
	t target
}

// Get reads a release. The latest revision of the resource's own release,
// which the library reads before it asks for the values, goes into the
// reconcile's record, as every layer judged it (a release another
// resource owns is none): the values translator takes the stored values
// from there instead of reading again.
func (c splitDryRuns) Get(name string, opts ...helmclient.GetOption) (*hrelease.Release, error) {
	rel, err := c.actionClient.Get(name, opts...)
	if len(opts) == 0 && c.t.obj != nil && name == c.t.obj.GetName() {
		reconcilerecord.Of(c.t.obj).ReadRelease(rel, err)
	}
	return rel, err
}

// Upgrade sends a dry-run upgrade to DryRunUpgrade, any other to Upgrade.
func (c splitDryRuns) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	dry, err := isDryRun(opts)
	if err != nil {
		return nil, err
	}
	if dry {
		return c.DryRunUpgrade(name, namespace, chrt, vals, opts...)
	}
	return c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
}

// isDryRun reports whether opts make an upgrade a dry-run.
func isDryRun(opts []helmclient.UpgradeOption) (bool, error) {
	probe := action.NewUpgrade(&action.Configuration{})
	for _, o := range opts {
		if err := o(probe); err != nil {
			return false, err
		}
	}
	return probe.DryRun, nil
}

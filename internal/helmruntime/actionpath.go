package helmruntime

import (
	"context"
	"fmt"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The action path: everything between the library's reconciler and Helm.
//
// For every reconcile the library asks the kind's ActionClientGetter for the
// action client of one custom resource and calls Get, then Install, or a
// dry-run Upgrade followed by an Upgrade (or nothing), or Reconcile (drift
// repair), or Uninstall. The getter built by actionPath answers with the
// library's own action client under a stack of layers, each adding one
// concern. Read actionPath's list top to bottom: that is the order in which
// an upgrade passes through them on its way to Helm.

// actionPath returns the action client getter of one kind: base (the
// library's getter, see newLibraryGetter) under the layers below.
func actionPath(base helmclient.ActionClientGetter, k *kindRuntime) helmclient.ActionClientGetter {
	return &layeredGetter{base: base, nsFor: k.nsFor, layers: []layer{
		// Failed installs, upgrades, renders and uninstalls become Warning
		// Events on the custom resource (events.go).
		k.failureEvents,
		// A failed upgrade that Helm rolled back says so (rollback.go).
		noteRollbacks,
		// Installs, upgrades and uninstalls of this process are recorded
		// while they run, for the stale-pending judgement (activity.go).
		k.rt.activity.track,
		// A release left pending by an action that can no longer finish is
		// unlocked (pending.go).
		k.unlockStale,
		// A release another resource owns, or one installed by hand, is
		// never touched (releaseowner.go).
		k.ownership,
		// A dry-run upgrade of an unchanged release is answered without
		// rendering; releases record the digest (digest.go).
		k.digests,
		// The release is read from storage once per reconcile; every write
		// to storage forgets it (releasememo.go).
		rememberRelease,
		// Helm's waits end when the manager stops (shutdown.go).
		k.interruptibleWaits,
		// Drift repair stamps Helm's ownership metadata on what it
		// recreates (driftrepair.go).
		stampOwnershipOnRepair,
		// Installs and upgrades go to the release namespace (namespace.go).
		installInReleaseNamespace,
		// Charts with CRDs see fresh capabilities; releases that add APIs
		// drop the shared ones (capabilities.go).
		k.capabilities.layer,
	}}
}

// target is the custom resource one action client acts for, and where its
// release lives.
type target struct {
	obj       client.Object
	namespace string // the release namespace
}

// key names the release in logs and messages: namespace/name.
func (t target) key() string { return t.namespace + "/" + t.obj.GetName() }

// A layer adds one concern to the action client of one custom resource: it
// may act once when the client is built (ctx is the reconcile's), and
// returns the client the layer above it calls.
type layer func(ctx context.Context, t target, below actionClient) (actionClient, error)

// actionClient is the library's ActionInterface with dry-run upgrades as a
// method of their own. The library asks for a dry-run upgrade before every
// upgrade, to compare manifests; the top of the path tells the two apart
// once (splitDryRuns), so no layer parses upgrade options again. A layer
// embeds the client below it and overrides what it changes.
type actionClient interface {
	helmclient.ActionInterface
	// DryRunUpgrade renders the upgrade and asks the API server to
	// validate it (server-side dry-run), changing nothing.
	DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error)
}

// layeredGetter builds each action client: the base client at the bottom,
// the layers on top, the last layer of the list first.
type layeredGetter struct {
	base   helmclient.ActionClientGetter
	nsFor  helmclient.ObjectToStringMapper
	layers []layer // outermost first
}

var _ helmclient.ActionClientGetter = (*layeredGetter)(nil)

// ActionClientFor returns the action client of obj.
func (g *layeredGetter) ActionClientFor(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
	ns, err := g.nsFor(obj)
	if err != nil {
		return nil, fmt.Errorf("map release namespace: %w", err)
	}
	lib, err := g.base.ActionClientFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	return stack(ctx, target{obj: obj, namespace: ns}, lib, g.layers)
}

// stack returns the action client of t: lib under layers (outermost first).
func stack(ctx context.Context, t target, lib helmclient.ActionInterface, layers []layer) (helmclient.ActionInterface, error) {
	var ac actionClient = libraryClient{lib}
	for i := len(layers) - 1; i >= 0; i-- {
		var err error
		if ac, err = layers[i](ctx, t, ac); err != nil {
			return nil, err
		}
	}
	return splitDryRuns{ac}, nil
}

// libraryClient is the bottom of the path: the library's action client, on
// which a dry-run upgrade is an upgrade with the dry-run option.
type libraryClient struct {
	helmclient.ActionInterface
}

// DryRunUpgrade passes the dry-run upgrade to the library.
func (c libraryClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	return c.Upgrade(name, namespace, chrt, vals, opts...)
}

// splitDryRuns is the top of the path: what the library's reconciler calls.
type splitDryRuns struct {
	actionClient
}

// Upgrade sends a dry-run upgrade to DryRunUpgrade, any other to Upgrade.
func (c splitDryRuns) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
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

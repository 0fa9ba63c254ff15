package actionpath

import (
	"context"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/operator/postrender"
)

// The post-render layer applies the kind's post-render patches
// (watches.yaml postRender, package postrender) to what installs, upgrades
// and dry-run upgrades render:
//
//   - It sits above the confinement layer, whose option runs after this
//     one's: the confinement check runs on the patched objects, so a patch
//     can neither move an object out of its namespace nor add a
//     cluster-scoped kind the kind may not create.
//   - Its post-renderer runs after those the options already set (the
//     library's owner references).
//   - Helm stores the post-rendered manifest, so drift repair restores the
//     patched fields, and a change of the patches changes the dry-run
//     upgrade's manifest (and the release digest, digest.go): the release
//     is upgraded on its next reconcile.
//   - Helm does not post-render hooks: they are applied as the chart
//     renders them.

// postRenders is the layer that sets the kind's post-renderer r (nil: the
// layer passes every action through as it is).
func postRenders(r *postrender.Renderer) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, _ target, below actionClient) actionClient {
		if r == nil {
			return below
		}
		return &postRenderedActionClient{actionClient: below, r: r}
	}
}

// postRenderedActionClient post-renders the installs and upgrades of one
// resource.
type postRenderedActionClient struct {
	actionClient
	r *postrender.Renderer
}

// Install installs the release post-rendered.
func (c *postRenderedActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*hrelease.Release, error) {
	return c.actionClient.Install(name, namespace, chrt, vals, append(opts, func(i *action.Install) error {
		i.PostRenderer = c.r.Chain(i.PostRenderer)
		return nil
	})...)
}

// Upgrade upgrades the release post-rendered.
func (c *postRenderedActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	return c.actionClient.Upgrade(name, namespace, chrt, vals, append(opts, c.upgradeOption())...)
}

// DryRunUpgrade renders the upgrade post-rendered.
func (c *postRenderedActionClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, append(opts, c.upgradeOption())...)
}

// upgradeOption sets the post-renderer of an upgrade.
func (c *postRenderedActionClient) upgradeOption() helmclient.UpgradeOption {
	return func(u *action.Upgrade) error {
		u.PostRenderer = c.r.Chain(u.PostRenderer)
		return nil
	}
}

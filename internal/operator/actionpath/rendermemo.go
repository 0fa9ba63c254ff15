package actionpath

import (
	"bytes"
	"context"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/postrender"
	hrelease "helm.sh/helm/v3/pkg/release"
)

// The post-render memo layer post-renders an upgrade's manifest once, not
// twice:
//
//   - The library asks for a dry-run upgrade before every upgrade, and an
//     upgrade that follows renders the same chart with the same values
//     again. Each render passes the whole post-render chain: the owner
//     references (helmconfig's, which parse and re-marshal every object), the
//     kind's post-render patches and the confinement check (which parses
//     them again), a third of the allocations of an upgrade.
//   - This layer sits below every layer that sets a post-renderer, so its
//     post-renderer wraps the whole chain. It keeps, for the action client
//     of one reconcile, the last manifest the chain accepted and what the
//     chain made of it; a render of the same manifest bytes gets a copy of
//     that output without running the chain again.
//   - The chain is a function of its input within a reconcile: the owner
//     is the same resource, the patches and the allowance are the kind's,
//     and the REST mapper's answers for the kinds of the manifest do not
//     change between the dry-run and the upgrade milliseconds later.
//   - A render the chain refuses is not kept, so a refusal is judged again
//     (and reported) on every render. Installs are not memoised: nothing
//     renders before them in a reconcile.

// memoPostRenders is the layer that post-renders each manifest once per
// reconcile (see above).
func memoPostRenders(_ context.Context, _ target, below actionClient) actionClient {
	return &renderMemoClient{actionClient: below}
}

// renderMemoClient remembers the last post-render of one reconcile's
// upgrades.
type renderMemoClient struct {
	actionClient
	in, out []byte // the last manifest the chain accepted, and its output
}

// Upgrade upgrades the release, post-rendered at most once for the
// manifest its dry-run rendered.
func (c *renderMemoClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	return c.actionClient.Upgrade(name, namespace, chrt, vals, append(opts, c.memoise())...)
}

// DryRunUpgrade renders the upgrade, remembering its post-render.
func (c *renderMemoClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, append(opts, c.memoise())...)
}

// memoise is the upgrade option that wraps the post-render chain the
// options above set (none: nothing to remember).
func (c *renderMemoClient) memoise() helmclient.UpgradeOption {
	return func(u *action.Upgrade) error {
		if u.PostRenderer != nil {
			u.PostRenderer = memoPostRenderer{chain: u.PostRenderer, c: c}
		}
		return nil
	}
}

// memoPostRenderer runs chain on a manifest c has not seen accepted.
type memoPostRenderer struct {
	chain postrender.PostRenderer
	c     *renderMemoClient
}

// Run returns a copy of the remembered output when in is the remembered
// input, else what chain returns, remembered when it accepts in.
func (p memoPostRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	if p.c.in != nil && bytes.Equal(in.Bytes(), p.c.in) {
		return bytes.NewBuffer(bytes.Clone(p.c.out)), nil
	}
	input := bytes.Clone(in.Bytes()) // the chain may consume or edit in
	out, err := p.chain.Run(in)
	if err != nil {
		p.c.in, p.c.out = nil, nil
		return nil, err
	}
	p.c.in, p.c.out = input, bytes.Clone(out.Bytes())
	return out, nil
}

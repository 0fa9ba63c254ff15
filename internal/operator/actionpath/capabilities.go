package actionpath

import (
	"context"
	"regexp"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/operator/helmconfig"
)

// capabilities is the layer that keeps the kind's shared capabilities
// (helmconfig.Capabilities) right around installs and upgrades (see
// capabilitiesActionClient).
func capabilities(cache *helmconfig.Capabilities) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, _ target, below actionClient) actionClient {
		return &capabilitiesActionClient{actionClient: below, cache: cache}
	}
}

// capabilitiesActionClient installs charts with CRDs on fresh
// capabilities, and drops the shared ones after every release that may
// have added APIs.
type capabilitiesActionClient struct {
	actionClient
	cache *helmconfig.Capabilities
}

// Install installs the release. The CRD layer above applies a chart's
// crds/ before Helm renders the templates; those must see the new APIs,
// so Helm fetches the capabilities itself then.
func (c *capabilitiesActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	crds := chrt != nil && len(chrt.CRDObjects()) > 0
	if cfg := c.Config(); crds && cfg != nil {
		cfg.Capabilities = nil
	}
	rel, err := c.actionClient.Install(name, namespace, chrt, vals, opts...)
	if crds || addsAPIs(rel) {
		c.cache.Invalidate()
	}
	return rel, err
}

// Upgrade upgrades the release.
func (c *capabilitiesActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	rel, err := c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
	if err == nil && addsAPIs(rel) {
		c.cache.Invalidate()
	}
	return rel, err
}

// addsAPIs reports whether rel's manifest holds objects that add APIs to
// the server: CRDs and aggregated APIServices.
func addsAPIs(rel *release.Release) bool {
	return rel != nil && apiKind.MatchString(rel.Manifest)
}

var apiKind = regexp.MustCompile(`(?m)^kind:\s*(CustomResourceDefinition|APIService)\s*$`)

package actionpath

import (
	"context"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
)

// installInReleaseNamespace is the layer that makes installs and upgrades
// target the release namespace. The library's reconciler passes
// obj.GetNamespace(), which is "" for cluster-scoped custom resources;
// Helm would then render .Release.Namespace as "" and record the release
// with an empty namespace.
func installInReleaseNamespace(_ context.Context, t target, below actionClient) actionClient {
	return &namespacedActionClient{actionClient: below, namespace: t.namespace}
}

// namespacedActionClient is an action client whose installs and upgrades
// always target one namespace, whatever namespace the caller passes.
type namespacedActionClient struct {
	actionClient
	namespace string
}

// Install installs the release in the bound namespace.
func (c *namespacedActionClient) Install(name, _ string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	return c.actionClient.Install(name, c.namespace, chrt, vals, opts...)
}

// DryRunUpgrade renders the upgrade in the bound namespace.
func (c *namespacedActionClient) DryRunUpgrade(name, _ string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	return c.actionClient.DryRunUpgrade(name, c.namespace, chrt, vals, opts...)
}

// Upgrade upgrades the release in the bound namespace.
func (c *namespacedActionClient) Upgrade(name, _ string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	return c.actionClient.Upgrade(name, c.namespace, chrt, vals, opts...)
}

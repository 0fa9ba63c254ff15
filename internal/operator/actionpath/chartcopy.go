package actionpath

import (
	"context"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// copyCharts is the layer that hands Helm a copy of a chart with
// dependencies for each install, upgrade and dry-run upgrade. Helm's
// dependency processing edits the chart it is given (manifest.CopyChart
// says how), and the library gives every reconcile of a kind the same
// chart: without the copy, the first resource whose values turn a
// subchart off would turn it off for every later one, and parallel
// reconciles would race. It is the last layer, so that the layers above
// see the kind's chart itself (the digest layer remembers digests by
// chart). A chart without dependencies passes as it is.
func copyCharts(_ context.Context, _ target, below actionClient) actionClient {
	return chartCopyActionClient{below}
}

type chartCopyActionClient struct {
	actionClient
}

// Install installs the release from a copy of chrt.
func (c chartCopyActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	return c.actionClient.Install(name, namespace, ownCopy(chrt), vals, opts...)
}

// DryRunUpgrade renders the upgrade from a copy of chrt.
func (c chartCopyActionClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	return c.actionClient.DryRunUpgrade(name, namespace, ownCopy(chrt), vals, opts...)
}

// Upgrade upgrades the release from a copy of chrt.
func (c chartCopyActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	return c.actionClient.Upgrade(name, namespace, ownCopy(chrt), vals, opts...)
}

// ownCopy is a copy of chrt when Helm would edit it, else chrt.
func ownCopy(chrt *chart.Chart) *chart.Chart {
	if !manifest.HasDependencies(chrt) {
		return chrt
	}
	return manifest.CopyChart(chrt)
}

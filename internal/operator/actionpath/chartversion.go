package actionpath

import (
	"context"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	hrelease "helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/operator/reconcilerecord"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/rollout"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// Which chart version a release renders with.
//
// The library hands every action the kind's default chart. This layer
// swaps it, once per reconcile, for:
//   - the version a resource pins (rollout.PinAnnotation), which must be
//     one the operator ships: a pin to another is refused;
//   - for an upgrade of a release that runs another version and that the
//     kind's rollout has not admitted yet (rollout.Gate), that version: a
//     spec edit is applied with the chart the release runs, not the new
//     one. The chart is the shipped one of that version, or, when the
//     operator no longer ships it, the one stored in the release record.
//
// Installs render the default (or pinned) version. The library merges the
// spec's values with the defaults of the kind's default chart; a release
// rendered with another version gets the spec's values merged with that
// version's defaults instead (reconcilerecord.Record.Values), and one the
// rollout holds back keeps the default images it runs.

// ReasonChartVersionNotShipped is the reason of the refusal of a pin to a
// version the operator does not ship.
const ReasonChartVersionNotShipped = "ChartVersionNotShipped"

// ChartVersions is what the layer needs of a kind: the shipped versions,
// and the gate of its rollout.
type ChartVersions struct {
	Versions watchconfig.ChartVersions
	Gate     *rollout.Gate
	// recorded are charts of versions the operator does not ship, taken
	// from release records, one per version: a stable chart, whose
	// digest is computed once.
	recorded sync.Map // version -> *chart.Chart
}

// recordedChart returns the chart of rel's version, remembered from the
// first record of that version.
func (cv *ChartVersions) recordedChart(rel *hrelease.Release) *chart.Chart {
	v := rel.Chart.Metadata.Version
	c, _ := cv.recorded.LoadOrStore(v, rel.Chart)
	return c.(*chart.Chart)
}

// chartVersionsLayer is the layer; nil cv, or a kind with one version and
// nothing pinned, changes nothing but refusing pins.
func chartVersionsLayer(cv *ChartVersions) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, t target, below actionClient) actionClient {
		if cv == nil {
			return below
		}
		return &chartVersionClient{actionClient: below, cv: cv, t: t}
	}
}

type chartVersionClient struct {
	actionClient
	cv *ChartVersions
	t  target
	// chosen is the chart of this reconcile's upgrades, picked at the
	// first; held is the release when the rollout holds it back on the
	// version it runs.
	chosen *chart.Chart
	held   *hrelease.Release
}

// pinned returns the chart of the resource's pin, nil without one.
func (c *chartVersionClient) pinned() (*chart.Chart, error) {
	v, ok := c.t.obj.GetAnnotations()[rollout.PinAnnotation]
	if !ok {
		return nil, nil
	}
	chrt, shipped := c.cv.Versions.Chart(v)
	if !shipped {
		err := c.cv.Versions.CheckPin(v)
		refused(c.t.obj, ReasonChartVersionNotShipped, err.Error())
		return nil, terminal{err}
	}
	return chrt, nil
}

// Install installs the pinned version, or the default.
func (c *chartVersionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*hrelease.Release, error) {
	p, err := c.pinned()
	if err != nil {
		return nil, err
	}
	if p != nil && p != chrt {
		if vals, err = c.valuesFor(p, vals, nil); err != nil {
			return nil, err
		}
		chrt = p
	}
	return c.actionClient.Install(name, namespace, chrt, vals, opts...)
}

// valuesFor are the reconcile's values merged with the defaults of chrt
// rather than the library's chart; vals when the reconcile recorded none.
// A release the rollout holds back (held) also keeps the images it runs
// where its spec takes the operator's default image: a new default image
// comes with the new chart version, in the release's wave.
func (c *chartVersionClient) valuesFor(chrt *chart.Chart, vals map[string]interface{}, held *hrelease.Release) (map[string]interface{}, error) {
	raw, defaulted := reconcilerecord.Of(c.t.obj).Values()
	if raw == nil {
		return vals, nil
	}
	if held != nil && len(defaulted) > 0 {
		var err error
		if raw, err = release.KeepImages(raw, held.Config, defaulted); err != nil {
			return nil, err
		}
	}
	return chartutil.CoalesceValues(chrt, raw)
}

// upgradeChart is the chart the release's upgrades render with.
func (c *chartVersionClient) upgradeChart(name string, def *chart.Chart) (*chart.Chart, error) {
	if c.chosen != nil {
		return c.chosen, nil
	}
	p, err := c.pinned()
	if err != nil {
		return nil, err
	}
	c.chosen = def
	switch {
	case p != nil:
		c.chosen = p
	default:
		cur, err := c.Get(name)
		if err != nil || cur == nil || cur.Chart == nil || cur.Chart.Metadata == nil {
			break
		}
		v := cur.Chart.Metadata.Version
		if v == c.cv.Versions.Default || c.cv.Gate.Admits(rollout.Key(c.t.obj.GetNamespace(), c.t.obj.GetName())) {
			break
		}
		if shipped, ok := c.cv.Versions.Chart(v); ok {
			c.chosen = shipped
		} else {
			c.chosen = c.cv.recordedChart(cur)
		}
		c.held = cur
	}
	return c.chosen, nil
}

// upgradeArgs are the chart and values of an upgrade of name: those of
// upgradeChart, and the values merged with that chart's defaults.
func (c *chartVersionClient) upgradeArgs(name string, chrt *chart.Chart, vals map[string]interface{}) (*chart.Chart, map[string]interface{}, error) {
	use, err := c.upgradeChart(name, chrt)
	if err != nil || use == chrt {
		return use, vals, err
	}
	vals, err = c.valuesFor(use, vals, c.held)
	return use, vals, err
}

// DryRunUpgrade renders with the chart of upgradeChart.
func (c *chartVersionClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	chrt, vals, err := c.upgradeArgs(name, chrt, vals)
	if err != nil {
		return nil, err
	}
	return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
}

// Upgrade upgrades with the chart of upgradeChart.
func (c *chartVersionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	chrt, vals, err := c.upgradeArgs(name, chrt, vals)
	if err != nil {
		return nil, err
	}
	return c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
}

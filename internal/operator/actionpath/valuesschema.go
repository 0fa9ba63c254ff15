package actionpath

import (
	"context"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/operator/valuesschema"
)

// checkSchemas is the layer that validates the values of installs,
// upgrades and dry-run upgrades against the chart's values.schema.json
// with each schema compiled once (package valuesschema), and turns Helm's
// own validation, which compiles the schemas anew at every action, off
// for the values that pass: the judgement is Helm's, so Helm would pass
// them too.
//
// Values that fail go to Helm with its validation on: it refuses them at
// its own point in the action (after its checks of the release's state)
// and in its own words. So does an upgrade whose values Helm does not
// take as they are: none at all (Helm then takes the deployed release's)
// or the reuse options. A kind without schemas (nil) leaves every
// validation to Helm.
func checkSchemas(schemas *valuesschema.Schemas) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, _ target, below actionClient) actionClient {
		if schemas == nil {
			return below
		}
		return schemaCheckingClient{actionClient: below, schemas: schemas}
	}
}

type schemaCheckingClient struct {
	actionClient
	schemas *valuesschema.Schemas
}

// Install installs the release, Helm's validation off when the values
// pass.
func (c schemaCheckingClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	if c.schemas.CheckValues(chrt, vals) == nil {
		opts = append(opts, func(i *action.Install) error {
			i.SkipSchemaValidation = true
			return nil
		})
	}
	return c.actionClient.Install(name, namespace, chrt, vals, opts...)
}

// DryRunUpgrade renders the upgrade, Helm's validation off when the values
// pass.
func (c schemaCheckingClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, c.upgradeOptions(chrt, vals, opts)...)
}

// Upgrade upgrades the release, Helm's validation off when the values
// pass.
func (c schemaCheckingClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	return c.actionClient.Upgrade(name, namespace, chrt, vals, c.upgradeOptions(chrt, vals, opts)...)
}

// upgradeOptions returns opts, with Helm's validation off when the
// upgrade renders with vals and they pass.
func (c schemaCheckingClient) upgradeOptions(chrt *chart.Chart, vals map[string]interface{}, opts []helmclient.UpgradeOption) []helmclient.UpgradeOption {
	if len(vals) == 0 || reusesValues(opts) || c.schemas.CheckValues(chrt, vals) != nil {
		return opts
	}
	return append(opts, func(u *action.Upgrade) error {
		u.SkipSchemaValidation = true
		return nil
	})
}

// reusesValues reports whether opts make an upgrade merge the deployed
// release's values into the ones it is given. Options that fail are
// Helm's to report.
func reusesValues(opts []helmclient.UpgradeOption) bool {
	probe := action.NewUpgrade(&action.Configuration{})
	for _, o := range opts {
		if err := o(probe); err != nil {
			return true
		}
	}
	return !probe.ResetValues && (probe.ReuseValues || probe.ResetThenReuseValues)
}

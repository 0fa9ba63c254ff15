package helmruntime

import (
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
)

// isDryRun reports whether opts make an upgrade a dry-run; the library's
// reconciler asks for one before every upgrade, to compare manifests.
func isDryRun(opts []helmclient.UpgradeOption) (bool, error) {
	probe := action.NewUpgrade(&action.Configuration{})
	for _, o := range opts {
		if err := o(probe); err != nil {
			return false, err
		}
	}
	return probe.DryRun, nil
}

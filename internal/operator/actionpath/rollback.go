package actionpath

import (
	"context"
	"fmt"
	"strings"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
)

// noteRollbacks is the layer that says, in the error of a failed upgrade,
// that the library rolled the release back and to which revision. The
// library does so when Helm recorded the failed revision, and its error
// alone reads as if nothing were serving.
func noteRollbacks(_ context.Context, _ target, below actionClient) actionClient {
	return rollbackNotes{below}
}

// rollbackNotes adds the rollback to upgrade errors.
type rollbackNotes struct {
	actionClient
}

// Upgrade upgrades the release; when it fails and the release was rolled
// back, the error says so.
func (c rollbackNotes) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	before := c.lastVersion(name)
	rel, err := c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
	if err != nil && !reportedRefusal(err) {
		err = c.describeRollback(name, before, err)
	}
	return rel, err
}

// describeRollback adds the rollback to err when the latest revision is
// one. before is the latest revision before the upgrade: a failed upgrade
// stores before+1, its rollback before+2.
func (c rollbackNotes) describeRollback(name string, before int, err error) error {
	last := c.last(name)
	if last == nil || last.Info == nil || last.Version < before+2 ||
		last.Info.Status != release.StatusDeployed || !strings.HasPrefix(last.Info.Description, "Rollback to ") {
		return err
	}
	return fmt.Errorf("%w; rolled back to the last deployed revision (%s, now revision %d), which keeps serving", err, last.Info.Description, last.Version)
}

// lastVersion returns the latest stored revision of name, 0 when unknown.
func (c rollbackNotes) lastVersion(name string) int {
	if last := c.last(name); last != nil {
		return last.Version
	}
	return 0
}

// last reads the latest stored revision of name from storage; nil when
// there is none or it cannot be read.
func (c rollbackNotes) last(name string) *release.Release {
	cfg := c.Config()
	if cfg == nil || cfg.Releases == nil {
		return nil
	}
	last, err := cfg.Releases.Last(name)
	if err != nil {
		return nil
	}
	return last
}

package actionpath

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// countingUpgrades fails every upgrade with err (none when nil), counting them.
type countingUpgrades struct {
	failingClient
	upgrades *int
}

func (c countingUpgrades) Upgrade(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	*c.upgrades++
	if c.err != nil {
		return nil, c.err
	}
	return &hrelease.Release{Name: name}, nil
}

// TestUpgradeBackoff: a failed upgrade is tried again with the same values
// only once its backoff passed, doubling per failure; other values are
// tried at once, and a success forgets the failures.
func TestUpgradeBackoff(t *testing.T) {
	g := NewWithT(t)
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	upgrades := 0
	inner := countingUpgrades{failingClient: failingClient{err: errors.New("Deployment is invalid")}, upgrades: &upgrades}
	acg := NewWithLayers(getterOf(&inner), watchconfig.ReleaseNamespaceMapper(false, ""),
		Layer{"upgrade backoff", upgradeBackoffs(&release.ChartDigests{}, clk)})
	widget := helmtest.Object(schema.GroupVersionKind{Group: "acme.com", Version: "v1", Kind: "Widget"}, "ns", "web")
	try := func(vals map[string]interface{}) error {
		ac, err := acg.ActionClientFor(t.Context(), widget)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = ac.Upgrade("web", "ns", helmtest.Chart(nil), vals)
		return err
	}
	bad := map[string]interface{}{"team": "not valid!"}

	g.Expect(try(bad)).To(MatchError("Deployment is invalid"))
	g.Expect(upgrades).To(Equal(1))
	err := try(bad)
	g.Expect(err).To(MatchError(ContainSubstring("failed 1 time(s)")))
	g.Expect(err).To(MatchError(ContainSubstring("tried again at 2026-11-26T12:00:10Z, or at once when the spec changes")))
	g.Expect(upgrades).To(Equal(1), "waiting, Helm is not asked")

	clk.SetTime(clk.Now().Add(10 * time.Second))
	g.Expect(try(bad)).To(MatchError("Deployment is invalid"))
	g.Expect(upgrades).To(Equal(2))
	clk.SetTime(clk.Now().Add(19 * time.Second))
	g.Expect(try(bad)).To(MatchError(ContainSubstring("failed 2 time(s)")), "the second wait is 20 s")
	clk.SetTime(clk.Now().Add(time.Second))
	g.Expect(try(bad)).To(MatchError("Deployment is invalid"))
	g.Expect(upgrades).To(Equal(3))

	inner.err = nil
	g.Expect(try(map[string]interface{}{"team": "web"})).To(Succeed(), "a fixed spec is tried at once")
	g.Expect(upgrades).To(Equal(4))
	g.Expect(try(bad)).To(Succeed(), "a success forgets the failures")
}

func TestUpgradeBackoffIsBounded(t *testing.T) {
	g := NewWithT(t)
	last := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	g.Expect(failedUpgrade{failures: 1, last: last}.next()).To(Equal(last.Add(10 * time.Second)))
	g.Expect(failedUpgrade{failures: 4, last: last}.next()).To(Equal(last.Add(80 * time.Second)))
	g.Expect(failedUpgrade{failures: 40, last: last}.next()).To(Equal(last.Add(10 * time.Minute)))
}

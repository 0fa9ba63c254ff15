package actionpath

import (
	"context"
	"fmt"
	"sync"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/utils/clock"

	"github.com/acme/platform-operator/internal/operator/release"
)

// A failed upgrade is rolled back by the library, and the rollback writes
// the release's objects. Those writes wake the resource through its
// dependent watches, which the controller's backoff does not slow down,
// and the same upgrade was tried again at once: about 1.5 times a second,
// each try storing a failed and a rolled-back revision. The upgrade
// backoff layer makes such retries wait: after n failures of an upgrade
// to the same chart and values, the next try of that upgrade waits
// upgradeBackoffBase·2^(n-1), at most upgradeBackoffMax. Meanwhile the
// upgrade fails at once, without touching Helm, with an error that says
// when the next try is; an upgrade to other values (a fixed spec) is tried
// at once. What a process remembers is lost when it stops: the first
// upgrade of a new leader is tried at once.

const (
	upgradeBackoffBase = 10 * time.Second
	upgradeBackoffMax  = 10 * time.Minute
)

// failedUpgrade is what the layer remembers of one release's failing
// upgrade.
type failedUpgrade struct {
	digest   string
	failures int
	last     time.Time
	err      error
}

// next is when the upgrade may be tried again.
func (f failedUpgrade) next() time.Time {
	wait := upgradeBackoffBase
	for i := 1; i < f.failures && wait < upgradeBackoffMax; i++ {
		wait *= 2
	}
	return f.last.Add(min(wait, upgradeBackoffMax))
}

// upgradeBackoffs is the layer; failures are kept per release key for the
// life of the process.
func upgradeBackoffs(charts *release.ChartDigests, clk clock.PassiveClock) func(context.Context, target, actionClient) actionClient {
	var mu sync.Mutex
	failed := map[string]failedUpgrade{}
	return func(_ context.Context, t target, below actionClient) actionClient {
		return &upgradeBackoff{actionClient: below, t: t, charts: charts, clock: clk, mu: &mu, failed: failed}
	}
}

type upgradeBackoff struct {
	actionClient
	t      target
	charts *release.ChartDigests
	clock  clock.PassiveClock
	mu     *sync.Mutex
	failed map[string]failedUpgrade
}

// Upgrade upgrades the release, unless the same upgrade failed and its
// backoff has not passed.
func (c *upgradeBackoff) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	key := c.t.key()
	digest, _, derr := release.Digest(c.charts.Of(chrt), vals, nil)
	if derr == nil {
		c.mu.Lock()
		f, ok := c.failed[key]
		c.mu.Unlock()
		if ok && f.digest == digest {
			if next := f.next(); c.clock.Now().Before(next) {
				return nil, fmt.Errorf("the upgrade to this spec failed %d time(s), the last at %s: %w; tried again at %s, or at once when the spec changes",
					f.failures, f.last.UTC().Format(time.RFC3339), f.err, next.UTC().Format(time.RFC3339))
			}
		}
	}
	rel, err := c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil, derr != nil, reportedRefusal(err):
		delete(c.failed, key)
	default:
		f := c.failed[key]
		if f.digest != digest {
			f = failedUpgrade{digest: digest}
		}
		f.failures++
		f.last, f.err = c.clock.Now(), err
		c.failed[key] = f
	}
	return rel, err
}

// Uninstall uninstalls the release and forgets its failures.
func (c *upgradeBackoff) Uninstall(name string, opts ...helmclient.UninstallOption) (*hrelease.UninstallReleaseResponse, error) {
	c.mu.Lock()
	delete(c.failed, c.t.key())
	c.mu.Unlock()
	return c.actionClient.Uninstall(name, opts...)
}

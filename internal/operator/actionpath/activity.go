package actionpath

import (
	"context"
	"sync"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/utils/clock"
)

// Activity tracks, per release ("namespace/name"), the Helm actions
// this process runs, and since when the process leads. It is shared by the
// reconcilers of every kind, since two kinds may store releases in the same
// namespace.
type Activity struct {
	clock clock.PassiveClock

	mu          sync.Mutex
	leaderSince time.Time
	inFlight    map[string]int
	// finished holds the start and end of the last action of this process
	// that may have written a pending revision.
	finished map[string]actionSpan
}

type actionSpan struct{ start, end time.Time }

// NewActivity returns the activity of a process that does not lead yet.
func NewActivity(c clock.PassiveClock) *Activity {
	return &Activity{clock: c, inFlight: map[string]int{}, finished: map[string]actionSpan{}}
}

// Elected records that this process became the leader now (again, after
// a lost lease: whatever was started before then and is not running here
// has no live author).
func (a *Activity) Elected() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.leaderSince = a.clock.Now()
}

// begin records the start of an action on key and returns the function
// that records its end.
func (a *Activity) begin(key string) (end func()) {
	a.mu.Lock()
	a.inFlight[key]++
	start := a.clock.Now()
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.inFlight[key]--; a.inFlight[key] <= 0 {
			delete(a.inFlight, key)
		}
		a.finished[key] = actionSpan{start: start, end: a.clock.Now()}
	}
}

// Busy reports whether an action of this process on key is running: its
// objects are being written, and judging their health now would judge a
// revision half applied (package readycontroller).
func (a *Activity) Busy(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inFlight[key] > 0
}

// LastEnded is when the last action of this process on key ended; zero
// when none did. The readiness controller waits from then until the
// action's post-release hook (or the library's status write, when the
// action failed) tells it which revision the objects now are.
func (a *Activity) LastEnded(key string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.finished[key].end
}

// staleness reports whether a pending revision of key stored at started is
// stale, and why (see the package comment above). A reconcile only runs on
// the leader, so the first call also marks the leadership start when the
// election callback has not run yet.
//
// otherShard says that another shard stored the revision (the resource
// moved between shards): that shard may still be running the action
// whatever this process's leadership, so only the timeout makes it stale.
func (a *Activity) staleness(key string, started time.Time, timeout time.Duration, otherShard bool) (reason string, stale bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	if a.leaderSince.IsZero() {
		a.leaderSince = now
	}
	if a.inFlight[key] > 0 {
		return "", false
	}
	if started.Before(a.leaderSince) && !otherShard {
		return staleBeforeLeadership, true
	}
	if span, ok := a.finished[key]; ok && !started.Before(span.start) && !started.After(span.end) {
		return staleOwnActionEnded, true
	}
	if now.Sub(started) > timeout {
		return staleTimeout, true
	}
	return "", false
}

// track is the layer that records the installs, upgrades and uninstalls
// this process runs on a release while they run (dry-runs change no
// release and are not recorded).
func (a *Activity) track(_ context.Context, t target, below actionClient) actionClient {
	return &trackedClient{actionClient: below, key: t.key(), activity: a}
}

// trackedClient records each action on its release in a Activity.
type trackedClient struct {
	actionClient
	key      string
	activity *Activity
}

// Install installs the release, recorded as running.
func (c *trackedClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	defer c.activity.begin(c.key)()
	return c.actionClient.Install(name, namespace, chrt, vals, opts...)
}

// Upgrade upgrades the release, recorded as running.
func (c *trackedClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	defer c.activity.begin(c.key)()
	return c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
}

// Uninstall uninstalls the release, recorded as running.
func (c *trackedClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	defer c.activity.begin(c.key)()
	return c.actionClient.Uninstall(name, opts...)
}

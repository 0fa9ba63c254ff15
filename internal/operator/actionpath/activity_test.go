package actionpath

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

func TestReleaseActivityStaleness(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const key = "ns/web"
	cases := []struct {
		name string
		// setup runs against the activity with the clock at t0 and may move it.
		setup func(a *Activity, c *clocktesting.FakePassiveClock)
		// started is when the pending revision was stored; otherShard,
		// that another shard stored it.
		started    time.Time
		otherShard bool
		// wantStale and wantReason are the verdict.
		wantStale  bool
		wantReason string
	}{{
		name:       "started before this process became the leader",
		setup:      func(a *Activity, c *clocktesting.FakePassiveClock) { a.Elected() },
		started:    t0.Add(-time.Second),
		wantStale:  true,
		wantReason: staleBeforeLeadership,
	}, {
		name: "started before this process became the leader, by another shard: it may still run there",
		setup: func(a *Activity, c *clocktesting.FakePassiveClock) {
			a.Elected()
			c.SetTime(t0.Add(time.Minute))
		},
		started:    t0.Add(-time.Second),
		otherShard: true,
	}, {
		name:       "started by another shard longer ago than the timeout",
		setup:      func(a *Activity, c *clocktesting.FakePassiveClock) { a.Elected(); c.SetTime(t0.Add(time.Hour)) },
		started:    t0.Add(-time.Second),
		otherShard: true,
		wantStale:  true,
		wantReason: staleTimeout,
	}, {
		name: "started while leading, by someone else, recently",
		setup: func(a *Activity, c *clocktesting.FakePassiveClock) {
			a.Elected()
			c.SetTime(t0.Add(time.Minute))
		},
		started: t0.Add(30 * time.Second),
	}, {
		name:       "started while leading, by someone else, longer ago than the timeout",
		setup:      func(a *Activity, c *clocktesting.FakePassiveClock) { a.Elected(); c.SetTime(t0.Add(time.Hour)) },
		started:    t0.Add(time.Second),
		wantStale:  true,
		wantReason: staleTimeout,
	}, {
		name: "an action of this process is running on it, even if it looks old",
		setup: func(a *Activity, c *clocktesting.FakePassiveClock) {
			c.SetTime(t0.Add(time.Hour))
			a.Elected()
			a.begin(key)
		},
		started: t0,
	}, {
		name: "an action of this process on another release does not protect it",
		setup: func(a *Activity, c *clocktesting.FakePassiveClock) {
			c.SetTime(t0.Add(time.Hour))
			a.Elected()
			a.begin("ns/other")
		},
		started:    t0,
		wantStale:  true,
		wantReason: staleBeforeLeadership,
	}, {
		name: "started by an action of this process that has returned",
		setup: func(a *Activity, c *clocktesting.FakePassiveClock) {
			a.Elected()
			c.SetTime(t0.Add(time.Second))
			end := a.begin(key)
			c.SetTime(t0.Add(3 * time.Second))
			end()
		},
		started:    t0.Add(2 * time.Second),
		wantStale:  true,
		wantReason: staleOwnActionEnded,
	}, {
		name: "started after the last action of this process returned",
		setup: func(a *Activity, c *clocktesting.FakePassiveClock) {
			a.Elected()
			c.SetTime(t0.Add(time.Second))
			end := a.begin(key)
			c.SetTime(t0.Add(2 * time.Second))
			end()
			c.SetTime(t0.Add(10 * time.Second))
		},
		started: t0.Add(5 * time.Second),
	}, {
		name:       "no election callback yet: the first check marks the leadership start",
		setup:      func(a *Activity, c *clocktesting.FakePassiveClock) {},
		started:    t0.Add(-time.Millisecond),
		wantStale:  true,
		wantReason: staleBeforeLeadership,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clocktesting.NewFakePassiveClock(t0)
			a := NewActivity(c)
			tc.setup(a, c)
			reason, stale := a.staleness(key, tc.started, DefaultStalePendingTimeout, tc.otherShard)
			g.Expect(stale).To(Equal(tc.wantStale))
			g.Expect(reason).To(Equal(tc.wantReason))
		})
	}
}

func TestActivityTracksActionsNotDryRuns(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	a := NewActivity(clk)
	a.Elected()
	lib := blockingClient{fakeReleaseClient: newFakeReleaseClient(), started: make(chan string, 1), release: make(chan struct{})}
	ac := stack(t.Context(), target{obj: helmtest.CR("Widget", "ns", "web", nil, nil), namespace: "ns"}, lib, []Layer{{Name: "activity", Wrap: a.track}})
	chrt := helmtest.Chart(nil)

	done := make(chan error)
	go func() { _, err := ac.Install("web", "ns", chrt, nil); done <- err }()
	g.Eventually(lib.started).Should(Receive(Equal("install")))
	_, stale := a.staleness("ns/web", t0.Add(-time.Hour), time.Minute, false)
	g.Expect(stale).To(BeFalse(), "a release with an action running is never stale")
	close(lib.release)
	g.Eventually(done).Should(Receive(BeNil()))
	_, stale = a.staleness("ns/web", t0.Add(-time.Hour), time.Minute, false)
	g.Expect(stale).To(BeTrue())

	t.Log("a dry-run is not an action on the release")
	lib.release = make(chan struct{})
	close(lib.release)
	clk.SetTime(t0.Add(time.Minute))
	_, err := ac.Upgrade("web", "ns", chrt, nil, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	_, stale = a.staleness("ns/web", t0.Add(30*time.Second), time.Hour, false)
	g.Expect(stale).To(BeFalse(), "only the install's span counts as this process's own action")
}

package helmruntime

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestReleaseActivityStaleness(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const key = "ns/web"
	cases := []struct {
		name string
		// setup runs against the activity with the clock at t0 and may move it.
		setup func(a *releaseActivity, c *clocktesting.FakePassiveClock)
		// started is when the pending revision was stored; otherShard,
		// that another shard stored it.
		started    time.Time
		otherShard bool
		// wantStale and wantReason are the verdict.
		wantStale  bool
		wantReason string
	}{{
		name:       "started before this process became the leader",
		setup:      func(a *releaseActivity, c *clocktesting.FakePassiveClock) { a.elected() },
		started:    t0.Add(-time.Second),
		wantStale:  true,
		wantReason: staleBeforeLeadership,
	}, {
		name: "started before this process became the leader, by another shard: it may still run there",
		setup: func(a *releaseActivity, c *clocktesting.FakePassiveClock) {
			a.elected()
			c.SetTime(t0.Add(time.Minute))
		},
		started:    t0.Add(-time.Second),
		otherShard: true,
	}, {
		name:       "started by another shard longer ago than the timeout",
		setup:      func(a *releaseActivity, c *clocktesting.FakePassiveClock) { a.elected(); c.SetTime(t0.Add(time.Hour)) },
		started:    t0.Add(-time.Second),
		otherShard: true,
		wantStale:  true,
		wantReason: staleTimeout,
	}, {
		name: "started while leading, by someone else, recently",
		setup: func(a *releaseActivity, c *clocktesting.FakePassiveClock) {
			a.elected()
			c.SetTime(t0.Add(time.Minute))
		},
		started: t0.Add(30 * time.Second),
	}, {
		name:       "started while leading, by someone else, longer ago than the timeout",
		setup:      func(a *releaseActivity, c *clocktesting.FakePassiveClock) { a.elected(); c.SetTime(t0.Add(time.Hour)) },
		started:    t0.Add(time.Second),
		wantStale:  true,
		wantReason: staleTimeout,
	}, {
		name: "an action of this process is running on it, even if it looks old",
		setup: func(a *releaseActivity, c *clocktesting.FakePassiveClock) {
			c.SetTime(t0.Add(time.Hour))
			a.elected()
			a.begin(key)
		},
		started: t0,
	}, {
		name: "an action of this process on another release does not protect it",
		setup: func(a *releaseActivity, c *clocktesting.FakePassiveClock) {
			c.SetTime(t0.Add(time.Hour))
			a.elected()
			a.begin("ns/other")
		},
		started:    t0,
		wantStale:  true,
		wantReason: staleBeforeLeadership,
	}, {
		name: "started by an action of this process that has returned",
		setup: func(a *releaseActivity, c *clocktesting.FakePassiveClock) {
			a.elected()
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
		setup: func(a *releaseActivity, c *clocktesting.FakePassiveClock) {
			a.elected()
			c.SetTime(t0.Add(time.Second))
			end := a.begin(key)
			c.SetTime(t0.Add(2 * time.Second))
			end()
			c.SetTime(t0.Add(10 * time.Second))
		},
		started: t0.Add(5 * time.Second),
	}, {
		name:       "no election callback yet: the first check marks the leadership start",
		setup:      func(a *releaseActivity, c *clocktesting.FakePassiveClock) {},
		started:    t0.Add(-time.Millisecond),
		wantStale:  true,
		wantReason: staleBeforeLeadership,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clocktesting.NewFakePassiveClock(t0)
			a := newReleaseActivity(c)
			tc.setup(a, c)
			reason, stale := a.staleness(key, tc.started, DefaultStalePendingTimeout, tc.otherShard)
			g.Expect(stale).To(Equal(tc.wantStale))
			g.Expect(reason).To(Equal(tc.wantReason))
		})
	}
}

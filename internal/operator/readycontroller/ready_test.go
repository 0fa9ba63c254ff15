package readycontroller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestRecheckAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	status := func(notReadyFor time.Duration) map[string]any {
		return map[string]any{"conditions": []any{map[string]any{
			"type": ConditionReady, "status": "False",
			"lastTransitionTime": now.Add(-notReadyFor).Format(time.RFC3339),
		}}}
	}
	tests := []struct {
		name string
		st   map[string]any
		// want is the wait before the next judgement.
		want time.Duration
	}{
		{"just turned not ready", status(0), readyRecheck},
		{"not ready for 30 s: still the shortest wait", status(30 * time.Second), readyRecheck},
		{"not ready for 2 minutes: a quarter of that", status(2 * time.Minute), 30 * time.Second},
		{"not ready for an hour: the longest wait", status(time.Hour), readyRecheckMax},
		{"no Ready condition yet", map[string]any{}, readyRecheck},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(recheckAfter(tc.st, now)).To(Equal(tc.want))
		})
	}
}

// TestUnreported: a release is not judged between the end of an action
// and what reports it (the post-release hook, or the library's status
// write of a failure), for at most reportWait.
func TestUnreported(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name            string
		ended           time.Time
		hookAt, stamped time.Time
		want            time.Duration
	}{
		{"no action ended", time.Time{}, now.Add(-time.Minute), time.Time{}, 0},
		{"the hook ran after the action", now.Add(-time.Second), now.Add(-time.Second / 2), time.Time{}, 0},
		{"the library wrote the status after a failed action", now.Add(-time.Second), now.Add(-time.Minute), now.Add(-time.Second / 2), 0},
		{"a rollback ended, its hook is still to come", now.Add(-time.Second), now.Add(-time.Minute), now.Add(-time.Minute), afterHook},
		{"nothing reported it within reportWait", now.Add(-reportWait), now.Add(-time.Minute), now.Add(-time.Minute), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &readyEntry{hookAt: tc.hookAt, stampedAt: tc.stamped}
			NewWithT(t).Expect(unreported(tc.ended, e, now)).To(Equal(tc.want))
		})
	}
}

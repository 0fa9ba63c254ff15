package readycontroller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/readiness"
)

// TestStatusWriteLostToAConflict: the status write after a rollback
// (revision 3, the rollback of 2 to 1, and RolledBackAs) loses a conflict,
// and the next write is of the retry, revision 4. What the lost write
// recorded must be in it: without revision 3 in the history the retry's
// remediation finds revision 2 before it, not Ready, and says there is
// nothing to roll back to.
func TestStatusWriteLostToAConflict(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	obj := &unstructured.Unstructured{}
	obj.SetGeneration(2)
	rec := actionpath.Remediation{Revision: 2, Generation: 2, Action: actionpath.RemediationRollback, To: 1, Attempt: 1, RetriesLeft: 1, At: now.Format(time.RFC3339)}
	history := []HistoryEntry{
		{Revision: 2, AppliedAt: now.Add(-time.Minute).Format(time.RFC3339)},
		{Revision: 1, AppliedAt: now.Add(-2 * time.Minute).Format(time.RFC3339), Ready: true},
	}
	known := map[string]any{"history": historyValue(history), actionpath.StatusRemediation: rec.Map()}

	e := &readyEntry{generation: 2, rev: revisionInfo{revision: 3, appliedAt: now, rollbackTo: 1}}
	e.release.Revision = 3
	lost, computed := withRemediation(map[string]any{}, known, e, readiness.Verdict{Ready: true}, obj, now)
	e.computed = computed // as the tracker remembers it
	g.Expect(ReadHistory(lost)[0]).To(HaveField("Revision", 3))
	r, _ := remediationOf(lost)
	g.Expect(r.RolledBackAs).To(Equal(3))

	// The write of lost failed: known is still what it was. Revision 4,
	// the retry, is applied and written next.
	e.rev = revisionInfo{revision: 4, appliedAt: now.Add(time.Second)}
	e.release.Revision = 4
	next, _ := withRemediation(map[string]any{}, known, e, readiness.Verdict{}, obj, now.Add(time.Second))
	var revs []int
	for _, h := range ReadHistory(next) {
		revs = append(revs, h.Revision)
	}
	g.Expect(revs).To(Equal([]int{4, 3, 2, 1}))
	g.Expect(ReadHistory(next)[1].Ready).To(BeTrue(), "the rollback was Ready")
	r, _ = remediationOf(next)
	g.Expect(r.RolledBackAs).To(Equal(3))
}

// TestLateReadyAfterNoRemediation: a first install that missed its
// deadline is left as it is (remediation none); when its objects become
// Ready after all, its history entry says Ready, so that a later broken
// upgrade has a revision to roll back to. A revision that was rolled back
// is not marked Ready by what is judged after it (the rollback's objects).
func TestLateReadyAfterNoRemediation(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	obj := &unstructured.Unstructured{}
	obj.SetGeneration(1)
	for _, tc := range []struct {
		action    string
		wantReady bool
	}{
		{actionpath.RemediationNone, true},
		{actionpath.RemediationRollback, false},
	} {
		t.Run(tc.action, func(t *testing.T) {
			g := NewWithT(t)
			rec := actionpath.Remediation{Revision: 1, Generation: 1, Action: tc.action, At: now.Format(time.RFC3339)}
			history := []HistoryEntry{{Revision: 1, AppliedAt: now.Add(-time.Minute).Format(time.RFC3339)}}
			known := map[string]any{"history": historyValue(history), actionpath.StatusRemediation: rec.Map()}
			e := &readyEntry{generation: 1, rev: revisionInfo{revision: 1, appliedAt: now.Add(-time.Minute)}}
			e.release.Revision = 1
			st, _ := withRemediation(map[string]any{}, known, e, readiness.Verdict{Ready: true}, obj, now)
			g.Expect(ReadHistory(st)).To(HaveLen(1))
			g.Expect(ReadHistory(st)[0].Ready).To(Equal(tc.wantReady))
		})
	}
}

package readiness

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ready := Verdict{Ready: true, Reason: ReasonReady, Message: "all 1 objects of the release are ready"}
	tests := []struct {
		name string
		rel  Release
		// want is the verdict; objects() answers ready when asked.
		want Verdict
	}{{
		name: "deployed long ago: the objects decide",
		rel:  Release{Deployed: true, Revision: 3, AppliedAt: now.Add(-time.Minute)},
		want: ready,
	}, {
		name: "a revision applied within Settle is Progressing, whatever the cache says",
		rel:  Release{Deployed: true, Revision: 4, AppliedAt: now.Add(-Settle / 2)},
		want: Verdict{Reason: ReasonProgressing, Message: "revision 4 applied; waiting for its objects to report status"},
	}, {
		name: "a failed upgrade is ReleaseFailed even though the previous revision works",
		rel:  Release{Deployed: true, ReleaseFailed: true, ReleaseFailedMessage: "upgrade failed: boom"},
		want: Verdict{Reason: ReasonReleaseFailed, Message: "upgrade failed: boom"},
	}, {
		name: "not installed",
		rel:  Release{},
		want: Verdict{Reason: ReasonProgressing, Message: "the release is not installed yet"},
	}, {
		name: "paused",
		rel:  Release{Paused: true, Deployed: true},
		want: Verdict{Reason: ReasonPaused, Message: "reconciliation is paused; readiness is not judged"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Judge(tc.rel, now, func() Verdict { return ready })).To(Equal(tc.want))
		})
	}
}

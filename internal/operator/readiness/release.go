package readiness

import (
	"fmt"
	"time"
)

// Release is what the Ready condition of a custom resource depends on
// besides its objects: the conditions the Helm library wrote, and when
// the deployed revision was applied.
type Release struct {
	// Paused: the library's Paused condition is True.
	Paused bool
	// Deployed: the library's Deployed condition is True.
	Deployed bool
	// ReleaseFailed: the library's ReleaseFailed condition is True, with
	// its message.
	ReleaseFailed        bool
	ReleaseFailedMessage string
	// Revision is the deployed revision and AppliedAt when it was
	// installed or upgraded (zero when unknown).
	Revision  int
	AppliedAt time.Time
}

// Settle is how long after an install or upgrade the objects of the new
// revision are not judged: the runtime's cache may still hold copies from
// before Helm wrote them (a Deployment of the previous revision, fully
// available), and would declare the new revision ready before any of its
// objects reported a status. Within Settle the release is Progressing.
const Settle = time.Second

// Judge returns the Ready verdict of a release: Paused and failed releases
// are judged by their conditions alone; a revision applied less than
// Settle before now is Progressing; otherwise objects() decides.
func Judge(r Release, now time.Time, objects func() Verdict) Verdict {
	switch {
	case r.Paused:
		return Verdict{Reason: ReasonPaused, Message: "reconciliation is paused; readiness is not judged"}
	case r.ReleaseFailed:
		return Verdict{Reason: ReasonReleaseFailed, Message: r.ReleaseFailedMessage}
	case !r.Deployed:
		return Verdict{Reason: ReasonProgressing, Message: "the release is not installed yet"}
	case !r.AppliedAt.IsZero() && now.Sub(r.AppliedAt) < Settle:
		return Verdict{Reason: ReasonProgressing, Message: fmt.Sprintf("revision %d applied; waiting for its objects to report status", r.Revision)}
	}
	return objects()
}

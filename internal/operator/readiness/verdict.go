package readiness

import (
	"fmt"
	"sort"
	"strings"

	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Reasons of the Ready condition. Users read them in `kubectl get`, and
// scripts match on them: they are part of the API.
const (
	// ReasonReady: every object of the deployed revision is Current.
	ReasonReady = "ObjectsReady"
	// ReasonProgressing: an object is not ready yet and nothing says it
	// failed (a rollout in progress, an image still being pulled, a claim
	// waiting for a volume, the objects of a revision just applied).
	ReasonProgressing = "Progressing"
	// ReasonFailed: kstatus reads an object as Failed (a Deployment past
	// its progress deadline, a crash-looping Pod, a failed Job).
	ReasonFailed = "Failed"
	// ReasonMissingReference: a workload's Pods read a Secret, ConfigMap
	// or key that does not exist; the message names it. Ready turns True
	// once it exists (and the Pods start).
	ReasonMissingReference = "MissingReference"
	// ReasonReleaseFailed: the last install or upgrade failed, so the
	// objects, whatever their state, are not what the spec asks for.
	ReasonReleaseFailed = "ReleaseFailed"
	// ReasonPaused: the resource is paused; nothing is judged.
	ReasonPaused = "Paused"
)

// Ref names an object of a release.
type Ref struct {
	Group, Kind, Namespace, Name string
}

// String is "Kind name", as the message names an object (the namespace is
// the resource's own in nearly every case and would only add noise).
func (r Ref) String() string { return r.Kind + " " + r.Name }

// Observed is one object of a release and its Health.
type Observed struct {
	Ref
	Health
	// Detail, when set, says why in more words than kstatus: the Pods'
	// reasons (see DescribePods).
	Detail string
}

// Verdict is the Ready condition's status, reason and message.
type Verdict struct {
	Ready   bool
	Reason  string
	Message string
	// WaitingForPods: an object of the release is waiting for Pods (see
	// Health); what they say may change without any object changing, so
	// the release is worth judging again later. Not part of the condition.
	WaitingForPods bool
	// Tested: the release's chart tests passed (set by the runtime when
	// it runs them). Not part of the condition.
	Tested bool
	// Details are what the Pods of its workloads said (Observed.Detail),
	// each also in Message.
	Details []string
}

// MaxMessage bounds the message: a release with many broken objects names
// the first ones and counts the rest, so a status never grows with it.
const MaxMessage = 1024

// Evaluate judges a release by the Health of its objects: ready when every
// object is Current; Failed when any is Failed; MissingReference when a
// workload waits for a Secret or ConfigMap; Progressing otherwise. The
// message names every object that is not Current, Failed ones first, each
// as "Kind name: why", joined by "; ".
func Evaluate(objs []Observed) Verdict {
	var failed, waiting []Observed
	pods, missing := false, false
	for _, o := range objs {
		pods = pods || o.WaitingForPods
		missing = missing || o.MissingReferences
		switch o.Status {
		case kstatus.CurrentStatus:
		case kstatus.FailedStatus:
			failed = append(failed, o)
		default:
			waiting = append(waiting, o)
		}
	}
	if len(failed) == 0 && len(waiting) == 0 {
		return Verdict{Ready: true, Reason: ReasonReady, Message: fmt.Sprintf("all %d objects of the release are ready", len(objs))}
	}
	reason := ReasonProgressing
	switch {
	case len(failed) > 0:
		reason = ReasonFailed
	case missing:
		reason = ReasonMissingReference
	}
	byRef := func(s []Observed) {
		sort.Slice(s, func(i, j int) bool { return s[i].String() < s[j].String() })
	}
	byRef(failed)
	byRef(waiting)
	parts := make([]string, 0, len(failed)+len(waiting))
	var details []string
	for _, o := range append(failed, waiting...) {
		parts = append(parts, describe(o))
		if o.Detail != "" {
			details = append(details, o.Detail)
		}
	}
	return Verdict{Reason: reason, Message: joinBounded(parts, MaxMessage), WaitingForPods: pods, Details: details}
}

// describe is "Kind name: why".
func describe(o Observed) string {
	why := o.Message
	if o.Status == kstatus.NotFoundStatus {
		why = "not found"
	}
	if why == "" {
		why = string(o.Status)
	}
	if o.Detail != "" {
		why += "; " + o.Detail
	}
	return o.String() + ": " + why
}

// joinBounded joins parts with "; ", stopping before max bytes and saying
// how many parts were left out.
func joinBounded(parts []string, max int) string {
	var b strings.Builder
	for i, p := range parts {
		rest := len(parts) - i
		sep := ""
		if i > 0 {
			sep = "; "
		}
		if i > 0 && b.Len()+len(sep)+len(p) > max {
			fmt.Fprintf(&b, "; and %d more", rest)
			break
		}
		b.WriteString(sep)
		b.WriteString(p)
	}
	return b.String()
}

package readycontroller

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/readiness"
	hrelease "github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// When a change breaks a release.
//
// Every revision has a deadline to become Ready: its kind's
// remediation.readyTimeout after it was applied (the time Helm recorded,
// so that the deadline survives a restart), or the resource's
// platform.acme.com/ready-timeout. The readiness controller judges the
// release at the deadline; when it is not Ready then:
//
//   - an upgrade whose revision before it became Ready is rolled back to
//     that revision (strategy rollback, the default): the controller
//     writes its decision to status.remediation and wakes the kind's
//     reconciler, whose action path rolls back (actionpath/remediate.go)
//     and holds the spec back until it changes or the retry annotation
//     takes a new value;
//   - a first install, an upgrade whose previous revision was not Ready
//     either, a rollback that is not Ready in time, and any release of
//     strategy none are reported and left as they are.
//
// Either way Stalled=True (kstatus' convention) says what happened until
// the spec changes, and status.history keeps the last revisions: chart
// version, digest, when applied, whether they became Ready, and what
// remediated them.

// Condition and reasons of a remediation.
const (
	ConditionStalled = "Stalled"
	// ReasonRolledBack: the revision was rolled back to the last Ready one.
	ReasonRolledBack = actionpath.ReasonRolledBack
	// ReasonNotRemediated: the revision missed its deadline and was left
	// as it is.
	ReasonNotRemediated = "NotRemediated"
	// ReasonRollbackNotReady: the rollback missed its deadline too.
	ReasonRollbackNotReady = "RollbackNotReady"
	// ReasonUninstalled: a first install was uninstalled.
	ReasonUninstalled = actionpath.ReasonUninstalled
)

// StatusChartVersion is the field of status that holds the chart version
// of the release's current revision.
const StatusChartVersion = "chartVersion"

// historyLength is how many revisions status.history keeps.
const historyLength = 5

// revisionInfo is what the post-release hook learns of the revision it
// saw applied, for status.history.
type revisionInfo struct {
	revision     int
	chartVersion string
	digest       string
	appliedAt    time.Time
	// rollbackTo is the revision a rollback revision restored; 0 for
	// installs and upgrades.
	rollbackTo int
	// tests counts the chart's test hooks; testsRan says Helm recorded a
	// run of each, testsFailed names those that failed.
	tests       int
	testsRan    bool
	testsFailed []string
}

// revisionInfoOf reads rel.
func revisionInfoOf(rel release.Release, appliedAt time.Time) revisionInfo {
	info := revisionInfo{revision: rel.Version, appliedAt: appliedAt, digest: rel.Labels[hrelease.DigestLabel]}
	if rel.Info != nil && !rel.Info.LastDeployed.IsZero() {
		// The time Helm recorded: a process that sees the revision for
		// the first time after a restart counts from it too.
		info.appliedAt = rel.Info.LastDeployed.Time
	}
	info.tests, info.testsRan, info.testsFailed = actionpath.TestHooks(&rel)
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		info.chartVersion = rel.Chart.Metadata.Version
	}
	if rel.Info != nil {
		_, _ = fmt.Sscanf(rel.Info.Description, "Rollback to %d", &info.rollbackTo)
	}
	return info
}

// NewRemediationMetric counts the remediations of each kind by action.
func NewRemediationMetric() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_operator_remediations_total",
		Help: "Revisions that did not become Ready within their deadline, by kind and by what was done: rollback, or none (reported Stalled and left as they were).",
	}, []string{"kind", "action"})
}

// HistoryEntry is one revision of status.history.
type HistoryEntry struct {
	Revision     int    `json:"revision"`
	ChartVersion string `json:"chartVersion,omitempty"`
	// Digest is the first characters of the release's digest of chart and
	// values (never a value itself).
	Digest    string `json:"digest,omitempty"`
	AppliedAt string `json:"appliedAt,omitempty"`
	// Ready: the revision became Ready; ReadyAt when.
	Ready   bool   `json:"ready"`
	ReadyAt string `json:"readyAt,omitempty"`
	// Test is the outcome of the chart's tests: passed or failed.
	Test string `json:"test,omitempty"`
	// Remediation says what remediated the revision, or which it restored.
	Remediation string `json:"remediation,omitempty"`
}

// ReadHistory reads status.history, newest first.
func ReadHistory(st map[string]any) []HistoryEntry {
	raw, _ := st["history"].([]any)
	out := make([]HistoryEntry, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var h HistoryEntry
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &h); err == nil && h.Revision > 0 {
			out = append(out, h)
		}
	}
	return out
}

// historyValue is h's status form.
func historyValue(h []HistoryEntry) []any {
	out := make([]any, 0, len(h))
	for i := range h {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&h[i])
		if err == nil {
			out = append(out, m)
		}
	}
	return out
}

// shortDigest is the part of a digest history shows.
func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// withRemediation returns st (a status withReady built) with history and
// remediation: those of known (the status this process last read or
// wrote) where st has none (the library's writes drop fields it does not
// know), the history entry of the current revision added or marked Ready,
// and Stalled dropped once the spec it was about changed. computed is a
// copy of the history and remediation it returns, for the entry to keep
// (readyEntry.computed): the write of st may lose a conflict.
func withRemediation(st, known map[string]any, e *readyEntry, v readiness.Verdict, obj client.Object, now time.Time) (status, computed map[string]any) {
	for _, k := range []string{"history", actionpath.StatusRemediation, StatusChartVersion} {
		if _, ok := st[k]; !ok && known[k] != nil {
			st[k] = runtime.DeepCopyJSONValue(known[k])
		}
	}
	// Entries of known that st lacks are kept: a status written from an
	// older copy must not drop a revision recorded since.
	// So are those this process computed last, whose write may have lost
	// a conflict.
	history := mergeHistory(mergeHistory(ReadHistory(st), ReadHistory(known)), ReadHistory(e.computed))
	rec, hasRec := remediationOf(st)
	if c, ok := remediationOf(e.computed); ok && hasRec && rec.RolledBackAs == 0 && c.RolledBackAs > 0 &&
		c.Revision == rec.Revision && c.Generation == rec.Generation && c.At == rec.At {
		rec.RolledBackAs = c.RolledBackAs
		st[actionpath.StatusRemediation] = rec.Map()
	}
	if e.rev.revision > 0 && e.rev.revision == e.release.Revision && e.rev.chartVersion != "" {
		// The chart version the release runs (kubectl get's Chart column,
		// and what a rollout counts).
		st[StatusChartVersion] = e.rev.chartVersion
	}
	if e.rev.revision > 0 && e.rev.revision == e.release.Revision {
		i := sort.Search(len(history), func(i int) bool { return history[i].Revision <= e.rev.revision })
		appliedAt := ""
		if !e.rev.appliedAt.IsZero() {
			appliedAt = e.rev.appliedAt.UTC().Format(time.RFC3339)
		}
		if i < len(history) && history[i].Revision == e.rev.revision && history[i].AppliedAt != appliedAt {
			// The number of an uninstalled release, installed anew.
			history = history[:i]
		}
		if i == len(history) || history[i].Revision != e.rev.revision {
			h := HistoryEntry{Revision: e.rev.revision, ChartVersion: e.rev.chartVersion, Digest: shortDigest(e.rev.digest)}
			if !e.rev.appliedAt.IsZero() {
				h.AppliedAt = e.rev.appliedAt.UTC().Format(time.RFC3339)
			}
			if e.rev.rollbackTo > 0 {
				h.Remediation = fmt.Sprintf("rollback to revision %d", e.rev.rollbackTo)
			}
			history = append(history[:i], append([]HistoryEntry{h}, history[i:]...)...)
		}
		// A revision rolled back or uninstalled for not becoming Ready
		// is not judged again: what is judged after its rollback, before
		// this process saw the rollback, is the rollback's objects. One
		// left as it was (a first install, remediation off) is still the
		// release's objects, and Ready late is Ready: a later broken
		// upgrade rolls back to it.
		remediated := hasRec && rec.Revision == e.rev.revision && rec.SameSpec(obj) && rec.Action != actionpath.RemediationNone
		if v.Ready && !history[i].Ready && !remediated {
			history[i].Ready = true
			history[i].ReadyAt = now.UTC().Format(time.RFC3339)
			if e.rev.tests > 0 && e.rev.testsRan || v.Tested {
				history[i].Test = "passed"
			}
		}
		if v.Reason == actionpath.ReasonTestFailed {
			history[i].Test = "failed"
		}
	}
	if hasRec {
		for i := range history {
			if history[i].Revision == rec.Revision && history[i].Remediation == "" {
				history[i].Remediation = remediationSummary(rec)
			}
		}
		if rec.Action == actionpath.RemediationRollback && rec.RolledBackAs == 0 && e.rev.rollbackTo == rec.To && e.release.Revision > rec.Revision {
			rec.RolledBackAs = e.release.Revision
			st[actionpath.StatusRemediation] = rec.Map()
		}
		stale := rec.Generation != e.generation || rec.Retry != obj.GetAnnotations()[watchconfig.RetryAnnotation] ||
			(rec.Action == actionpath.RemediationNone && v.Ready && e.release.Revision == rec.Revision)
		if stale {
			st["conditions"] = withoutCondition(st["conditions"], ConditionStalled)
		}
	}
	if len(history) > historyLength {
		history = history[:historyLength]
	}
	if len(history) > 0 {
		st["history"] = historyValue(history)
	}
	computed = map[string]any{}
	for _, k := range []string{"history", actionpath.StatusRemediation, StatusChartVersion} {
		if st[k] != nil {
			computed[k] = runtime.DeepCopyJSONValue(st[k])
		}
	}
	return st, computed
}

// mergeHistory returns a with the entries of b whose revision it lacks,
// newest first; for a revision both hold, the entry that says more wins
// (Ready, a test outcome, a remediation), and a's when they say as much
// or were applied at different times (a number reused after an
// uninstall: a is the newer).
func mergeHistory(a, b []HistoryEntry) []HistoryEntry {
	byRev := make(map[int]HistoryEntry, len(a)+len(b))
	for _, h := range a {
		byRev[h.Revision] = h
	}
	for _, h := range b {
		cur, ok := byRev[h.Revision]
		switch {
		case !ok:
			byRev[h.Revision] = h
		case cur.AppliedAt != h.AppliedAt:
		default:
			if h.Ready && !cur.Ready {
				cur.Ready, cur.ReadyAt = true, h.ReadyAt
			}
			if cur.Test == "" {
				cur.Test = h.Test
			}
			if cur.Remediation == "" {
				cur.Remediation = h.Remediation
			}
			byRev[h.Revision] = cur
		}
	}
	out := make([]HistoryEntry, 0, len(byRev))
	for _, h := range byRev {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision > out[j].Revision })
	return out
}

// remediationOf reads status.remediation of st.
func remediationOf(st map[string]any) (actionpath.Remediation, bool) {
	m, ok := st[actionpath.StatusRemediation].(map[string]any)
	if !ok {
		return actionpath.Remediation{}, false
	}
	return actionpath.RemediationFrom(m)
}

// remediationSummary is what history says of a remediated revision.
func remediationSummary(r actionpath.Remediation) string {
	switch r.Action {
	case actionpath.RemediationRollback:
		return fmt.Sprintf("not Ready in time; rolled back to revision %d", r.To)
	case actionpath.RemediationUninstall:
		return "not Ready in time; uninstalled"
	}
	return "not Ready in time; left as it was"
}

// withoutCondition drops the condition of type typ from conds.
func withoutCondition(conds any, typ string) []any {
	in, _ := conds.([]any)
	out := make([]any, 0, len(in))
	for _, c := range in {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			continue
		}
		out = append(out, c)
	}
	return out
}

// setCondition sets the condition typ of st to True with reason and
// message.
func setCondition(st map[string]any, typ, reason, message string, generation int64, now time.Time) {
	c := map[string]any{
		"type": typ, "status": string(metav1.ConditionTrue), "reason": reason, "message": message,
		"lastTransitionTime": now.UTC().Format(time.RFC3339), "observedGeneration": generation,
	}
	conds := withoutCondition(st["conditions"], typ)
	st["conditions"] = append(conds, c)
}

// decision is what the readiness controller decided for a release that
// missed its deadline.
type decision struct {
	rec actionpath.Remediation
	// wake: the kind's reconciler must run the rollback.
	wake bool
	// event is the Warning Event of a release left as it was.
	event string
	// fresh: decided now, not asked for again.
	fresh bool
}

// remediate judges e's release against its deadline. It returns how long
// until the deadline (0 when passed or not applicable), and, when the
// deadline passed and nothing was decided for the revision yet, the
// decision, which st (the status to write) already carries.
func remediate(st map[string]any, e *readyEntry, v readiness.Verdict, obj client.Object, policy watchconfig.Remediation, now time.Time) (time.Duration, *decision) {
	r := e.release
	if rec, ok := remediationOf(st); ok && v.Ready && rec.Action == actionpath.RemediationRollback && rec.RetriesLeft > 0 &&
		rec.SameSpec(obj) && rec.RolledBackAs != 0 && rec.RolledBackAs == r.Revision && !r.Paused {
		// The rollback is Ready and the spec has a retry left: the
		// reconciler upgrades to it again.
		return 0, &decision{rec: rec, wake: true}
	}
	if v.Ready || r.Paused || r.ReleaseFailed || e.rev.appliedAt.IsZero() || r.Revision == 0 || e.rev.revision != r.Revision {
		return 0, nil
	}
	if obj.GetGeneration() != e.generation {
		return 0, nil // the spec changed: its upgrade, with a deadline of its own, comes next
	}
	deadline := e.rev.appliedAt.Add(policy.ReadyTimeout)
	if now.Before(deadline) && v.Reason != actionpath.ReasonTestFailed {
		return deadline.Sub(now), nil
	}
	why := fmt.Sprintf("revision %d did not become Ready within %s (%s)", r.Revision, policy.ReadyTimeout, strings.TrimSuffix(v.Message, "."))
	if v.Reason == actionpath.ReasonTestFailed {
		why = fmt.Sprintf("revision %d failed its tests (%s)", r.Revision, strings.TrimSuffix(v.Message, "."))
	}
	if rec, ok := remediationOf(st); ok {
		switch {
		case rec.Revision == r.Revision && rec.RolledBackAs == 0 && rec.Holds(obj):
			// Decided, not done (the operator stopped in between): ask
			// for it again.
			return 0, &decision{rec: rec, wake: true}
		case rec.Revision == r.Revision && rec.SameSpec(obj):
			return 0, nil // decided already
		case e.rev.rollbackTo > 0 && rec.Action == actionpath.RemediationRollback && rec.SameSpec(obj) && rec.RetriesLeft > 0:
			// A rollback that is to be retried and is not Ready: no
			// retry from a revision that does not work.
			rec.RetriesLeft = 0
			st[actionpath.StatusRemediation] = rec.Map()
			msg := fmt.Sprintf("%s; it is the rollback of revision %d, which did not become Ready either, and is left as it is", why, rec.Revision)
			setCondition(st, ConditionStalled, ReasonRollbackNotReady, msg, e.generation, now)
			return 0, &decision{event: msg}
		case e.rev.rollbackTo > 0 && rec.Holds(obj):
			// The rollback is not Ready in time either: said once, and
			// the spec stays held back.
			msg := fmt.Sprintf("%s; it is the rollback of revision %d, which did not become Ready either, and is left as it is", why, rec.Revision)
			if c := findCondition(st, ConditionStalled); c != nil && c["reason"] == ReasonRollbackNotReady {
				return 0, nil
			}
			setCondition(st, ConditionStalled, ReasonRollbackNotReady, msg, e.generation, now)
			return 0, &decision{event: msg}
		}
	}
	rec := actionpath.Remediation{
		Revision: r.Revision, Generation: e.generation, Retry: obj.GetAnnotations()[watchconfig.RetryAnnotation],
		Action: actionpath.RemediationNone, At: now.UTC().Format(time.RFC3339),
	}
	var prev *HistoryEntry
	for _, h := range ReadHistory(st) {
		if h.Revision < r.Revision {
			prev = &h
			break
		}
	}
	// A retry of a spec rolled back before is tried once its rollback was
	// Ready: it goes back to that rollback.
	var retried *actionpath.Remediation
	if old, ok := remediationOf(st); ok && old.Action == actionpath.RemediationRollback && old.SameSpec(obj) &&
		old.RolledBackAs > 0 && old.RolledBackAs < r.Revision {
		retried = &old
	}
	d := &decision{fresh: true}
	switch {
	case retried != nil && policy.Strategy != watchconfig.RemediateNone:
		rec.Action, rec.To, rec.Message = actionpath.RemediationRollback, retried.RolledBackAs, why
		rec.Attempt, rec.RetriesLeft = retried.Attempt+1, max(retried.RetriesLeft-1, 0)
		d.wake = true
	case e.rev.rollbackTo > 0:
		rec.Message = why + fmt.Sprintf("; it is a rollback to revision %d, and is left as it is", e.rev.rollbackTo)
	case policy.Strategy == watchconfig.RemediateNone:
		rec.Message = why + fmt.Sprintf("; remediation is off (%s: none), so it is left as it is", watchconfig.RemediationAnnotation)
	case prev == nil && policy.UninstallInstalls:
		rec.Action, rec.Message = actionpath.RemediationUninstall, why
		d.wake = true
	case prev == nil:
		rec.Message = why + "; a first install is left as it is"
	case !prev.Ready:
		rec.Message = why + fmt.Sprintf("; revision %d before it was not Ready either, so there is nothing to roll back to", prev.Revision)
	default:
		rec.Action, rec.To, rec.Message = actionpath.RemediationRollback, prev.Revision, why
		rec.Attempt, rec.RetriesLeft = 1, policy.Retries
		d.wake = true
	}
	d.rec = rec
	st[actionpath.StatusRemediation] = rec.Map()
	switch {
	case rec.Action == actionpath.RemediationRollback && rec.RetriesLeft > 0:
		// Not stalled: the spec is tried again once the rollback is Ready.
	case rec.Action == actionpath.RemediationRollback:
		setCondition(st, ConditionStalled, ReasonRolledBack, fmt.Sprintf("%s; rolled back to revision %d%s. This spec is not applied again until it changes or the annotation %s takes a new value",
			why, rec.To, attempts(rec), watchconfig.RetryAnnotation), e.generation, now)
	case rec.Action == actionpath.RemediationUninstall:
		setCondition(st, ConditionStalled, ReasonUninstalled, fmt.Sprintf("%s; uninstalled. This spec is not installed again until it changes or the annotation %s takes a new value",
			why, watchconfig.RetryAnnotation), e.generation, now)
	default:
		setCondition(st, ConditionStalled, ReasonNotRemediated, rec.Message, e.generation, now)
		d.event = rec.Message
	}
	return 0, d
}

// attempts says how often a spec was rolled back, when more than once.
func attempts(r actionpath.Remediation) string {
	if r.Attempt > 1 {
		return fmt.Sprintf(" (rolled back %d times)", r.Attempt)
	}
	return ""
}

// testVerdict is v with the chart's tests of e's revision, when the kind
// or obj asks for them and the chart has some: a release whose objects
// are ready is not Ready until its tests passed (Testing while they are
// to run, which the second result asks for; TestFailed when one failed).
func (t *Tracker) testVerdict(v readiness.Verdict, e *readyEntry, obj client.Object, policy watchconfig.Remediation) (readiness.Verdict, bool) {
	if !policy.Test || !v.Ready || e.rev.tests == 0 || e.rev.revision != e.release.Revision {
		return v, false
	}
	if res, ok := t.testResults.Get(t.releaseKey(obj), e.rev.revision); ok {
		if res.Passed {
			v.Tested = true
			return v, false
		}
		return readiness.Verdict{Reason: actionpath.ReasonTestFailed, Message: res.Message}, false
	}
	if e.rev.testsRan {
		if len(e.rev.testsFailed) == 0 {
			v.Tested = true
			return v, false
		}
		return readiness.Verdict{Reason: actionpath.ReasonTestFailed, Message: fmt.Sprintf("test %s of revision %d failed", strings.Join(e.rev.testsFailed, ", "), e.rev.revision)}, false
	}
	return readiness.Verdict{Reason: actionpath.ReasonTesting, Message: fmt.Sprintf("every object of revision %d is ready; its chart's %d test(s) run", e.rev.revision, e.rev.tests)}, true
}

// judgeAgain asks the readiness controller to judge obj again (a chart
// test of it ended).
func (t *Tracker) JudgeAgain(obj client.Object) {
	select {
	case t.wake <- event.TypedGenericEvent[*unstructured.Unstructured]{Object: keyOnly(t.gvk, client.ObjectKeyFromObject(obj))}:
	default:
	}
}

// announce records the Event and the metric of a decision written (the
// rollback's own Event comes from the action path when it is done).
func (t *Tracker) announce(obj client.Object, d *decision) {
	if d.fresh && t.remediations != nil {
		t.remediations.WithLabelValues(t.gvk.Kind, d.rec.Action).Inc()
	}
	if d.event != "" {
		t.recorder.Event(obj, corev1.EventTypeWarning, ReasonNotRemediated, d.event)
	}
}

// policyOf is obj's remediation: the kind's, with obj's annotations.
func (t *Tracker) policyOf(obj client.Object) watchconfig.Remediation {
	p, _ := t.remediation.For(obj.GetAnnotations()) // the webhook refuses bad annotations; the kind's apply
	return p
}

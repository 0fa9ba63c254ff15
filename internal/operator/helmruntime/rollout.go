package helmruntime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	platformv1alpha1 "github.com/acme/platform-operator/extensions/api/platform/v1alpha1"
	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/managersetup"
	"github.com/acme/platform-operator/internal/operator/readycontroller"
	"github.com/acme/platform-operator/internal/operator/rollout"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// The rollout controller of a kind: when the kind's default chart version
// is not the one some of its releases run, it moves them to it in the
// waves of the kind's policy (package rollout), recording progress on a
// ChartRollout named for the kind and version. It runs on the leader,
// reads the kind's resources from the cache (their status says which
// chart version each release runs and whether it is Ready, as the
// readiness controller wrote), opens the kind's rollout.Gate wave by wave
// and wakes the reconcilers of the releases each wave admits. Each shard
// moves its own resources, on a ChartRollout of its own.

// Reasons of the rollout's Events.
const (
	ReasonRolloutStarted   = "RolloutStarted"
	ReasonWaveStarted      = "WaveStarted"
	ReasonRolloutHalted    = "RolloutHalted"
	ReasonRolloutResumed   = "RolloutResumed"
	ReasonRolloutPaused    = "RolloutPaused"
	ReasonRolloutComplete  = "RolloutComplete"
	ReasonRolloutSupersede = "RolloutSuperseded"
)

// Intervals of the controller's passes: while a rollout runs, and
// otherwise. A pass reads the cache only.
const (
	rolloutActivePass = time.Second
	rolloutIdlePass   = 15 * time.Second
	// rolloutUnknownGrace is how long a resource whose status names no
	// chart version yet is waited for before the rollout goes without it.
	rolloutUnknownGrace = time.Minute
)

// rolloutMetrics are the rollout's gauges, per kind and version.
type rolloutMetrics struct {
	releases *prometheus.GaugeVec // state: moved, failed, pending, pinned
	wave     *prometheus.GaugeVec
	halted   *prometheus.GaugeVec
}

func newRolloutMetrics() rolloutMetrics {
	return rolloutMetrics{
		releases: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "platform_operator_chart_rollout_releases",
			Help: "Releases of a chart rollout by state: moved (at the version and Ready), failed, pending, pinned.",
		}, []string{"kind", "version", "state"}),
		wave: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "platform_operator_chart_rollout_wave",
			Help: "The running (or last) wave of a chart rollout, from 1.",
		}, []string{"kind", "version"}),
		halted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "platform_operator_chart_rollout_halted",
			Help: "1 while a chart rollout is halted.",
		}, []string{"kind", "version"}),
	}
}

// rolloutController is the rollout controller of one kind.
type rolloutController struct {
	k        *kindRuntime
	c        client.Client
	cache    client.Reader
	recorder record.EventRecorder
	log      logr.Logger
	metrics  rolloutMetrics
	selector labels.Selector
	started  time.Time
	now      func() time.Time
	// read is the status the current pass read; latest is what this
	// process's last write returned, and staleRV the resource version it
	// replaced.
	read    *platformv1alpha1.ChartRolloutStatus
	latest  *platformv1alpha1.ChartRollout
	staleRV string
	// wake asks the reconciler of a resource to reconcile it.
	wake func(ctx context.Context, key types.NamespacedName)
}

// rolloutName is the ChartRollout of kind, version and shard.
func rolloutName(kind, version string, shard labels.Selector) string {
	name := strings.ToLower(kind) + "-" + strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(version), "-"), "-.")
	if shard != nil && !shard.Empty() {
		name += "-shard-" + managersetup.ShardID(shard)
	}
	return name
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// rolloutFor returns the name of the ChartRollout that moves the
// resources of gvk to version, and that rollout (nil when there is none
// yet). The name is rolloutName's, unless a rollout of a kind of the same
// name in another group holds that name. Then (and for as long as this
// kind's rollout lives) it is that name with -group-<digest of the group>
// appended. ChartRollouts are cluster-scoped, and one kind must never run
// the waves of another's.
func rolloutFor(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind, version string, shard labels.Selector) (string, *platformv1alpha1.ChartRollout, error) {
	base := rolloutName(gvk.Kind, version, shard)
	sum := sha256.Sum256([]byte(gvk.Group))
	alt := base + "-group-" + hex.EncodeToString(sum[:5])
	ours := func(cr *platformv1alpha1.ChartRollout) bool {
		return cr.Spec.Group == gvk.Group && cr.Spec.Kind == gvk.Kind
	}
	cr := &platformv1alpha1.ChartRollout{}
	switch err := r.Get(ctx, client.ObjectKey{Name: alt}, cr); {
	case err == nil && ours(cr):
		return alt, cr, nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", nil, err
	}
	cr = &platformv1alpha1.ChartRollout{}
	switch err := r.Get(ctx, client.ObjectKey{Name: base}, cr); {
	case apierrors.IsNotFound(err):
		return base, nil, nil
	case err != nil:
		return "", nil, err
	case ours(cr):
		return base, cr, nil
	}
	// base is another kind's, and the alternative name holds no rollout
	// of this kind (nor, short of a digest collision, of any other).
	return alt, nil, nil
}

// setupRollout adds the kind's rollout controller to mgr. Without the
// ChartRollout API (its CRD not installed) releases move at once, as
// before rollouts, and the log says so.
func (k *kindRuntime) setupRollout(mgr ctrl.Manager) error {
	// Exported from the start, so that an alert on a halt has a series
	// to read before any rollout.
	k.rt.rolloutMetrics.halted.WithLabelValues(k.watch.GVK.Kind, k.watch.Versions.Default).Set(0)
	if _, err := mgr.GetRESTMapper().RESTMapping(platformv1alpha1.GroupVersion.WithKind("ChartRollout").GroupKind(), platformv1alpha1.GroupVersion.Version); err != nil {
		if meta.IsNoMatchError(err) {
			k.gate.AdmitAll()
			if len(k.watch.Versions.Charts) > 1 {
				k.log.Info("Warning: the ChartRollout CRD is not installed; releases move to the default chart version at once", "version", k.watch.Versions.Default)
			}
			return nil
		}
		return fmt.Errorf("look up the ChartRollout API: %w", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&k.watch.Selector)
	if err != nil {
		return err
	}
	rc := &rolloutController{
		k: k, c: mgr.GetClient(), cache: mgr.GetCache(),
		recorder: mgr.GetEventRecorderFor("chartrollout-controller"),
		log:      k.log.WithName("rollout"),
		metrics:  k.rt.rolloutMetrics,
		selector: sel,
		now:      time.Now,
		wake: func(ctx context.Context, key types.NamespacedName) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(k.watch.GVK)
			u.SetNamespace(key.Namespace)
			u.SetName(key.Name)
			select {
			case k.rolloutWake <- event.GenericEvent{Object: u}:
			case <-ctx.Done():
			}
		},
	}
	return mgr.Add(manager.RunnableFunc(rc.run))
}

// run passes until ctx ends; it runs while the manager leads.
func (rc *rolloutController) run(ctx context.Context) error {
	rc.started = rc.now()
	if !rc.cache.(interface {
		WaitForCacheSync(context.Context) bool
	}).WaitForCacheSync(ctx) {
		return nil
	}
	for {
		next, err := rc.pass(ctx)
		if err != nil && ctx.Err() == nil {
			rc.log.Error(err, "Rollout pass failed; trying again")
			next = rolloutActivePass
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
}

// members reads the kind's resources from the cache: those the rollout
// moves (not pinned, not deleting), the number pinned, and whether some
// name no chart version yet.
func (rc *rolloutController) members(ctx context.Context, version string, attemptStart time.Time) (members []rollout.Member, pinned int, unknown bool, err error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(rc.k.watch.GVK.GroupVersion().WithKind(rc.k.watch.GVK.Kind + "List"))
	if err := rc.cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, 0, false, err
	}
	for i := range list.Items {
		u := &list.Items[i]
		if u.GetDeletionTimestamp() != nil || !rc.selector.Matches(labels.Set(u.GetLabels())) {
			continue
		}
		if _, ok := u.GetAnnotations()[rollout.PinAnnotation]; ok {
			pinned++
			continue
		}
		st, _ := u.Object["status"].(map[string]any)
		v, _ := st[readycontroller.StatusChartVersion].(string)
		if v == "" {
			if rc.now().Sub(rc.started) < rolloutUnknownGrace {
				unknown = true
			}
			continue
		}
		members = append(members, rollout.Member{
			Key:      rollout.Key(u.GetNamespace(), u.GetName()),
			UID:      string(u.GetUID()),
			Canary:   u.GetLabels()[rollout.CanaryLabel] == "true",
			Version:  v,
			Ready:    readyNow(u, st),
			Failed:   failedAt(st, version, attemptStart),
			HeldMove: heldMove(u, st),
		})
	}
	return members, pinned, unknown, nil
}

// readyNow reports Ready=True for the resource's current generation.
func readyNow(u *unstructured.Unstructured, st map[string]any) bool {
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		if g, ok := m["observedGeneration"].(int64); ok && g != u.GetGeneration() {
			return false
		}
		return m["status"] == string(metav1.ConditionTrue)
	}
	return false
}

// heldMove is the chart version whose upgrade the resource's remediation
// rolled back and holds back, when that upgrade moved the release to
// another chart version; "" otherwise.
func heldMove(u *unstructured.Unstructured, st map[string]any) string {
	m, _ := st[actionpath.StatusRemediation].(map[string]any)
	rec, ok := actionpath.RemediationFrom(m)
	if !ok || !rec.Holds(u) {
		return ""
	}
	var failed, before string
	for _, h := range readycontroller.ReadHistory(st) {
		switch h.Revision {
		case rec.Revision:
			failed = h.ChartVersion
		case rec.To:
			before = h.ChartVersion
		}
	}
	if failed == "" || failed == before {
		return ""
	}
	return failed
}

// failedAt reports whether a revision of version was remediated since
// start: status.history has an entry of that chart version, applied since
// start, that a remediation names.
func failedAt(st map[string]any, version string, start time.Time) bool {
	for _, h := range readycontroller.ReadHistory(st) {
		if h.ChartVersion != version || h.Remediation == "" || h.AppliedAt == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, h.AppliedAt)
		if err == nil && !at.Before(start.Truncate(time.Second)) && !strings.HasPrefix(h.Remediation, "rollback to") {
			return true
		}
	}
	return false
}

// pass looks at the kind once and returns when to look again.
func (rc *rolloutController) pass(ctx context.Context) (time.Duration, error) {
	target := rc.k.watch.Versions.Default
	name, cr, err := rolloutFor(ctx, rc.c, rc.k.watch.GVK, target, rc.k.rt.opts.Shard())
	if err != nil {
		return 0, err
	}
	exists := cr != nil
	if !exists {
		cr = &platformv1alpha1.ChartRollout{}
	}
	if exists && rc.latest != nil && rc.latest.UID == cr.UID && cr.ResourceVersion == rc.staleRV {
		// The cache has not seen this process's last write yet.
		cr = rc.latest.DeepCopy()
	}
	// What the pass read, to write only a status that changed.
	rc.read = cr.Status.DeepCopy()
	attemptStart := rc.started
	if exists && cr.Status.AttemptStartedAt != nil {
		attemptStart = cr.Status.AttemptStartedAt.Time
	}
	members, pinned, unknown, err := rc.members(ctx, target, attemptStart)
	if err != nil {
		return 0, err
	}
	if !exists {
		behind := false
		for _, m := range members {
			behind = behind || m.Version != target
		}
		switch {
		case behind:
			if err := rc.supersede(ctx, target); err != nil {
				return 0, err
			}
			return rolloutActivePass, rc.start(ctx, name, target)
		case unknown:
			return rolloutActivePass, nil // the first reconciles write the versions
		}
		rc.k.gate.AdmitAll()
		return rolloutIdlePass, nil
	}
	switch cr.Status.Phase {
	case platformv1alpha1.PhaseComplete, platformv1alpha1.PhaseSuperseded:
		rc.k.gate.AdmitAll()
		rc.report(cr, members, pinned, rollout.Verdict{})
		return rolloutIdlePass, rc.writeStatus(ctx, cr, members, pinned)
	}
	return rc.progress(ctx, cr, members, pinned)
}

// start creates the ChartRollout of target: wave 1 of its first attempt.
func (rc *rolloutController) start(ctx context.Context, name, target string) error {
	now := metav1.NewTime(rc.now())
	cr := &platformv1alpha1.ChartRollout{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: platformv1alpha1.ChartRolloutSpec{
			Group: rc.k.watch.GVK.Group, Kind: rc.k.watch.GVK.Kind, Version: target,
		},
	}
	if s := rc.k.rt.opts.Shard(); s != nil && !s.Empty() {
		cr.Spec.Shard = s.String()
	}
	if err := rc.c.Create(ctx, cr); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("create ChartRollout %s: %w", name, err)
	}
	cr.Status = platformv1alpha1.ChartRolloutStatus{
		Phase: platformv1alpha1.PhaseProgressing, Wave: 1, Attempt: 1, AttemptStartedAt: &now,
		History: []platformv1alpha1.WaveStatus{{Wave: 1, StartedAt: &now}},
	}
	steps := rc.k.watch.Rollout.Steps()
	rc.recorder.Eventf(cr, corev1.EventTypeNormal, ReasonRolloutStarted,
		"Moving the %s releases to chart version %s in waves %s", rc.k.watch.GVK.Kind, target, describeSteps(steps))
	rc.log.Info("Chart rollout started", "version", target, "rollout", name, "waves", describeSteps(steps))
	return rc.updateStatus(ctx, cr)
}

func describeSteps(steps []rollout.Step) string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.String()
	}
	return strings.Join(out, " → ")
}

// supersede marks the kind's rollouts of other versions that did not
// complete as superseded.
func (rc *rolloutController) supersede(ctx context.Context, target string) error {
	list := &platformv1alpha1.ChartRolloutList{}
	if err := rc.c.List(ctx, list); err != nil {
		return err
	}
	shard := ""
	if s := rc.k.rt.opts.Shard(); s != nil && !s.Empty() {
		shard = s.String()
	}
	for i := range list.Items {
		cr := &list.Items[i]
		if cr.Spec.Group != rc.k.watch.GVK.Group || cr.Spec.Kind != rc.k.watch.GVK.Kind || cr.Spec.Shard != shard ||
			cr.Spec.Version == target || cr.Status.Phase == platformv1alpha1.PhaseComplete || cr.Status.Phase == platformv1alpha1.PhaseSuperseded {
			continue
		}
		cr.Status.Phase = platformv1alpha1.PhaseSuperseded
		cr.Status.Message = fmt.Sprintf("chart version %s became the default before this rollout completed", target)
		setRolloutConditions(cr, rc.now())
		if err := rc.c.Status().Update(ctx, cr); err != nil {
			return err
		}
		rc.recorder.Event(cr, corev1.EventTypeNormal, ReasonRolloutSupersede, cr.Status.Message)
	}
	return nil
}

// progress runs the waves of a rollout that is not finished.
func (rc *rolloutController) progress(ctx context.Context, cr *platformv1alpha1.ChartRollout, members []rollout.Member, pinned int) (time.Duration, error) {
	target := cr.Spec.Version
	policy := rc.k.watch.Rollout
	now := rc.now()
	switch {
	case cr.Spec.Paused && cr.Status.Phase == platformv1alpha1.PhaseProgressing:
		cr.Status.Phase = platformv1alpha1.PhasePaused
		cr.Status.Message = "paused by spec.paused; set it to false to resume"
		rc.recorder.Event(cr, corev1.EventTypeNormal, ReasonRolloutPaused, cr.Status.Message)
	case !cr.Spec.Paused && cr.Status.Phase == platformv1alpha1.PhaseHalted:
		if err := rc.resume(ctx, cr, members, now); err != nil {
			return 0, err
		}
		// The failed releases are retried: judge them next pass.
		return rolloutActivePass, rc.updateStatus(ctx, cr)
	case !cr.Spec.Paused && cr.Status.Phase == platformv1alpha1.PhasePaused:
		cr.Status.Phase = platformv1alpha1.PhaseProgressing
		restartWave(cr, now)
		rc.recorder.Event(cr, corev1.EventTypeNormal, ReasonRolloutResumed, "Resumed")
	}
	plan := rollout.NewPlan(members, policy.Steps())
	cr.Status.Waves = int32(len(plan.Ends))
	wave := int(cr.Status.Wave) - 1
	if wave >= len(plan.Ends) {
		wave = len(plan.Ends) - 1
		cr.Status.Wave = int32(wave + 1)
	}
	if cr.Status.Phase != platformv1alpha1.PhaseProgressing {
		rc.k.gate.Admit(nil)
		rc.report(cr, members, pinned, rollout.Verdict{})
		return rolloutIdlePass, rc.writeStatus(ctx, cr, members, pinned)
	}
	admitted := plan.Admitted(wave)
	keys := make([]string, len(admitted))
	for i, m := range admitted {
		keys[i] = m.Key
	}
	for _, key := range rc.k.gate.Admit(keys) {
		m := findMember(admitted, key)
		if m == nil || m.Version == target {
			continue
		}
		if m.HeldMove != "" && m.HeldMove != target {
			// Held back after a move to another version that failed:
			// this version is another change.
			if err := rc.retry(ctx, key, target, cr.Status.Attempt); err != nil {
				return 0, err
			}
			continue // the annotation's change reconciles it
		}
		rc.wake(ctx, keyName(key))
	}
	cur := &cr.Status.History[len(cr.Status.History)-1]
	start := cr.Status.AttemptStartedAt.Time
	if cur.StartedAt != nil {
		start = cur.StartedAt.Time
	}
	v := rollout.Judge(plan.Wave(wave), target, policy, rc.k.watch.Remediation.ReadyTimeout, start, now)
	cur.Releases, cur.Moved, cur.Failed = int32(len(plan.Wave(wave))), int32(v.Moved), int32(v.Failed)
	next := rolloutActivePass
	switch {
	case v.Halt:
		cr.Status.Phase = platformv1alpha1.PhaseHalted
		cr.Status.Message = fmt.Sprintf("wave %d: %d of %d releases failed, more than the %s tolerated; no further release moves. Fix the cause, then set spec.paused to false to resume",
			wave+1, v.Failed, len(plan.Wave(wave)), policy.MaxFailures)
		fin := metav1.NewTime(now)
		cur.FinishedAt = &fin
		rc.k.gate.Admit(nil)
		if err := rc.writeStatus(ctx, cr, members, pinned); err != nil {
			return 0, err
		}
		if err := rc.update(ctx, cr, func(obj client.Object) error {
			return rc.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`)))
		}); err != nil {
			return 0, err
		}
		// The patch made a generation the conditions must observe:
		// kubectl wait takes a condition of an older one for stale.
		if err := rc.updateStatus(ctx, cr); err != nil {
			return 0, err
		}
		rc.recorder.Event(cr, corev1.EventTypeWarning, ReasonRolloutHalted, cr.Status.Message)
		rc.log.Info("Chart rollout halted", "version", target, "wave", wave+1, "failed", v.Failed)
		rc.report(cr, members, pinned, v)
		return rolloutIdlePass, nil
	case v.Done && wave == len(plan.Ends)-1:
		cr.Status.Phase = platformv1alpha1.PhaseComplete
		cr.Status.Message = fmt.Sprintf("every release of the kind runs chart version %s", target)
		fin := metav1.NewTime(now)
		cur.FinishedAt = &fin
		rc.k.gate.AdmitAll()
		rc.recorder.Event(cr, corev1.EventTypeNormal, ReasonRolloutComplete, cr.Status.Message)
		rc.log.Info("Chart rollout complete", "version", target)
		next = rolloutIdlePass
	case v.Done:
		if cur.FinishedAt == nil {
			fin := metav1.NewTime(now)
			cur.FinishedAt = &fin
		}
		if now.Sub(cur.FinishedAt.Time) >= policy.Pause {
			started := metav1.NewTime(now)
			cr.Status.Wave++
			cr.Status.History = append(cr.Status.History, platformv1alpha1.WaveStatus{Wave: cr.Status.Wave, StartedAt: &started, Releases: int32(len(plan.Wave(wave + 1)))})
			cr.Status.Message = fmt.Sprintf("wave %d of %d", cr.Status.Wave, len(plan.Ends))
			rc.recorder.Eventf(cr, corev1.EventTypeNormal, ReasonWaveStarted, "Wave %d of %d: %d more releases move to chart version %s",
				cr.Status.Wave, len(plan.Ends), len(plan.Wave(wave+1)), target)
			next = 0
		} else {
			cr.Status.Message = fmt.Sprintf("wave %d done; the next starts after the pause of %s", wave+1, policy.Pause)
		}
	default:
		cr.Status.Message = fmt.Sprintf("wave %d of %d: %d moved, %d failed, %d pending", wave+1, len(plan.Ends), v.Moved, v.Failed, v.Pending)
	}
	rc.report(cr, members, pinned, v)
	return next, rc.writeStatus(ctx, cr, members, pinned)
}

// resume begins a new attempt after a halt: the failed releases of the
// rollout's version are no longer held back by their remediation, and the
// halted wave starts again.
func (rc *rolloutController) resume(ctx context.Context, cr *platformv1alpha1.ChartRollout, members []rollout.Member, now time.Time) error {
	cr.Status.Attempt++
	for _, m := range members {
		if m.Failed || m.HeldMove == cr.Spec.Version {
			if err := rc.retry(ctx, m.Key, cr.Spec.Version, cr.Status.Attempt); err != nil {
				return err
			}
		}
	}
	cr.Status.Phase = platformv1alpha1.PhaseProgressing
	at := metav1.NewTime(now)
	cr.Status.AttemptStartedAt = &at
	restartWave(cr, now)
	cr.Status.Message = fmt.Sprintf("attempt %d: wave %d starts again", cr.Status.Attempt, cr.Status.Wave)
	rc.recorder.Eventf(cr, corev1.EventTypeNormal, ReasonRolloutResumed, "Resumed: attempt %d starts wave %d again", cr.Status.Attempt, cr.Status.Wave)
	rc.log.Info("Chart rollout resumed", "version", cr.Spec.Version, "attempt", cr.Status.Attempt)
	return nil
}

// retry sets the retry annotation of the resource of key to a value of
// the rollout's attempt: its remediation no longer holds back the
// upgrade it rolled back, which the rollout moves it to again.
func (rc *rolloutController) retry(ctx context.Context, key, version string, attempt int32) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rc.k.watch.GVK)
	nn := keyName(key)
	u.SetNamespace(nn.Namespace)
	u.SetName(nn.Name)
	value := fmt.Sprintf("chart-rollout-%s-attempt-%d", version, attempt)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, watchconfig.RetryAnnotation, value)
	if err := rc.c.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("retry %s: %w", key, err)
	}
	return nil
}

// keyName reads a rollout.Key.
func keyName(key string) types.NamespacedName {
	ns, n, ok := strings.Cut(key, "/")
	if !ok {
		return types.NamespacedName{Name: key}
	}
	return types.NamespacedName{Namespace: ns, Name: n}
}

// restartWave starts the current wave again, from now.
func restartWave(cr *platformv1alpha1.ChartRollout, now time.Time) {
	at := metav1.NewTime(now)
	cr.Status.History = append(cr.Status.History, platformv1alpha1.WaveStatus{Wave: cr.Status.Wave, StartedAt: &at})
}

func findMember(ms []rollout.Member, key string) *rollout.Member {
	for i := range ms {
		if ms[i].Key == key {
			return &ms[i]
		}
	}
	return nil
}

// writeStatus counts the members and writes cr's status when it changed.
func (rc *rolloutController) writeStatus(ctx context.Context, cr *platformv1alpha1.ChartRollout, members []rollout.Member, pinned int) error {
	cr.Status.Releases, cr.Status.Pinned, cr.Status.Moved, cr.Status.Failed = int32(len(members)), int32(pinned), 0, 0
	for _, m := range members {
		switch {
		case m.Failed:
			cr.Status.Failed++
		case m.Version == cr.Spec.Version && m.Ready:
			cr.Status.Moved++
		}
	}
	if len(cr.Status.History) > 50 {
		cr.Status.History = cr.Status.History[len(cr.Status.History)-50:]
	}
	setRolloutConditions(cr, rc.now())
	if rc.read != nil && equality.Semantic.DeepEqual(rc.read, &cr.Status) {
		return nil
	}
	return rc.update(ctx, cr, func(obj client.Object) error { return rc.c.Status().Update(ctx, obj) })
}

// updateStatus writes cr's status with its conditions.
func (rc *rolloutController) updateStatus(ctx context.Context, cr *platformv1alpha1.ChartRollout) error {
	setRolloutConditions(cr, rc.now())
	return rc.update(ctx, cr, func(obj client.Object) error { return rc.c.Status().Update(ctx, obj) })
}

// setRolloutConditions says cr's phase as conditions: Complete,
// Progressing and Stalled (halted), with the phase as their reason and
// the status message as their message. A condition's transition time
// moves only when its status changes.
func setRolloutConditions(cr *platformv1alpha1.ChartRollout, now time.Time) {
	phase := cr.Status.Phase
	if phase == "" {
		return
	}
	for _, c := range []struct {
		typ string
		on  bool
	}{
		{platformv1alpha1.ConditionComplete, phase == platformv1alpha1.PhaseComplete},
		{platformv1alpha1.ConditionProgressing, phase == platformv1alpha1.PhaseProgressing},
		{platformv1alpha1.ConditionStalled, phase == platformv1alpha1.PhaseHalted},
	} {
		status := metav1.ConditionFalse
		if c.on {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&cr.Status.Conditions, metav1.Condition{
			Type: c.typ, Status: status, Reason: phase, Message: cr.Status.Message,
			ObservedGeneration: cr.Generation, LastTransitionTime: metav1.NewTime(now),
		})
	}
}

// update writes cr with write and remembers the result, which the cache
// may not hold yet at the next pass.
func (rc *rolloutController) update(ctx context.Context, cr *platformv1alpha1.ChartRollout, write func(client.Object) error) error {
	before := cr.ResourceVersion
	if err := write(cr); err != nil {
		return err
	}
	rc.latest, rc.staleRV = cr.DeepCopy(), before
	return nil
}

// report sets the rollout's gauges.
func (rc *rolloutController) report(cr *platformv1alpha1.ChartRollout, members []rollout.Member, pinned int, _ rollout.Verdict) {
	kind, version := rc.k.watch.GVK.Kind, cr.Spec.Version
	var moved, failed, pending int
	for _, m := range members {
		switch {
		case m.Failed:
			failed++
		case m.Version == version && m.Ready:
			moved++
		default:
			pending++
		}
	}
	rc.metrics.releases.WithLabelValues(kind, version, "moved").Set(float64(moved))
	rc.metrics.releases.WithLabelValues(kind, version, "failed").Set(float64(failed))
	rc.metrics.releases.WithLabelValues(kind, version, "pending").Set(float64(pending))
	rc.metrics.releases.WithLabelValues(kind, version, "pinned").Set(float64(pinned))
	rc.metrics.wave.WithLabelValues(kind, version).Set(float64(cr.Status.Wave))
	halted := 0.0
	if cr.Status.Phase == platformv1alpha1.PhaseHalted {
		halted = 1
	}
	rc.metrics.halted.WithLabelValues(kind, version).Set(halted)
}

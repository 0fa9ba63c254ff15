// Package cronscaler is the controller of CronScaler
// (autoscaling.acme.com/v1alpha1): it keeps a target's replica count at the
// count of the job whose schedule fired most recently, sleeping until the
// next fire in between.
package cronscaler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/extensions/internal/schedule"
	"github.com/acme/platform-operator/internal/operator/managersetup"
	"github.com/acme/platform-operator/internal/operator/releaseidentity"
)

// Reconciler reconciles CronScalers.
type Reconciler struct {
	// Client reads from the manager's cache, which has the field indexes
	// of IndexFields (rivals and HPAs are looked up there).
	client.Client
	// APIReader reads from the API server: the custom resources of Helm
	// releases, and targets the cache does not hold. Nil uses Client.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Clock is the time source of the schedule arithmetic.
	Clock clock.PassiveClock
	// Shard selects the CronScalers this process owns; nil owns all.
	// Another shard's CronScaler is left to that shard's sidecar.
	Shard labels.Selector
	// Writers, when set, hands out the client that scales a target, as
	// the release identity of its namespace (package releaseidentity);
	// nil scales with Client.
	Writers *releaseidentity.Writers
	// burst defers status writes and Events during bursts of fires (see
	// burstWriter); nil writes them in every reconcile.
	burst *burstWriter
}

// target builds the target of cs, scaled as its namespace's identity.
func (r *Reconciler) target(ctx context.Context, cs *autoscalingv1alpha1.CronScaler) (target, error) {
	w := r.Client
	if r.Writers != nil {
		var err error
		if w, _, err = r.Writers.For(ctx, cs.Namespace); err != nil {
			return nil, err
		}
	}
	return targetFor(r.Client, w, cs)
}

// The permissions of this controller (CronScalers and their status and
// finalizers, the /scale subresource of any target, HorizontalPodAutoscalers
// read, the custom resources of Helm releases read for the owner checks,
// Events, its leader election Lease) are granted by config/rbac/role.yaml,
// written by hand for the manager and the sidecar together; the e2e suite
// runs the sidecar as that ServiceAccount, so a missing grant fails there.
// No kubebuilder RBAC markers: nothing generates RBAC from them.

// Reconcile brings one CronScaler's target to the active job's count and
// sleeps until the next fire.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	out := r.sink(req.NamespacedName)
	defer out.close()
	cs := &autoscalingv1alpha1.CronScaler{}
	if err := r.Get(ctx, req.NamespacedName, cs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !managersetup.OwnsShard(r.Shard, cs) {
		return ctrl.Result{}, nil
	}
	if !cs.DeletionTimestamp.IsZero() {
		out.emitDeferred()
		return r.finalize(ctx, cs)
	}
	if err := r.syncFinalizer(ctx, cs); err != nil {
		out.giveBack()
		return ctrl.Result{}, err
	}
	out.startFrom(cs)
	now := r.Clock.Now()
	result, err := r.enforce(ctx, cs, &out.events, now)
	if err := out.commit(ctx, cs, err); err != nil {
		return ctrl.Result{}, err
	}
	return r.sleepFrom(result, now), nil
}

// sleepFrom shortens a requeue computed at now by the time the reconcile
// has taken since: the workqueue starts the delay when Reconcile returns,
// and a reconcile that waited on a busy API server would otherwise wake
// that much after the fire.
func (r *Reconciler) sleepFrom(result ctrl.Result, now time.Time) ctrl.Result {
	if result.RequeueAfter <= 0 {
		return result
	}
	// Never 0, which would mean no requeue: a fire that passed during the
	// reconcile is applied at once.
	result.RequeueAfter = max(result.RequeueAfter-r.Clock.Since(now), time.Millisecond)
	return result
}

// appliedFire tells whether a reconcile applied a fire the status on the
// API server does not record yet.
func appliedFire(before, after *autoscalingv1alpha1.CronScaler) bool {
	b, a := before.Status.AppliedScheduleTime, after.Status.AppliedScheduleTime
	return a != nil && (b == nil || !b.Equal(a))
}

// enforce computes the plan at now, records it in the status and applies it
// to the target unless suspended or held (another owner has the count, or
// the target is missing). It sets the Ready condition and records its
// Events on ev.
func (r *Reconciler) enforce(ctx context.Context, cs *autoscalingv1alpha1.CronScaler, ev record.EventRecorder, now time.Time) (ctrl.Result, error) {
	sched, err := schedule.Compile(specOf(cs))
	if err != nil {
		r.setReady(cs, metav1.ConditionFalse, ReasonInvalidSpec, err.Error())
		ev.Event(cs, corev1.EventTypeWarning, ReasonInvalidSpec, err.Error())
		// Only a spec edit fixes this, and an edit triggers a reconcile.
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	plan := sched.At(now)
	expected := cs.Status.DesiredReplicas
	recordPlan(cs, plan)
	sleep := untilNext(plan, now)

	if cs.Spec.Suspend {
		r.setReady(cs, metav1.ConditionFalse, ReasonSuspended, "spec.suspend is set: the target's replica count is left as it is")
		return ctrl.Result{}, nil
	}
	t, err := r.target(ctx, cs)
	if err != nil {
		return ctrl.Result{}, r.targetFailed(cs, ev, triggerSchedule, err)
	}
	h, err := r.claim(ctx, cs, t)
	if err != nil {
		return ctrl.Result{}, err
	}
	if h != nil {
		r.holdOff(cs, ev, h)
		logr.FromContextOrDiscard(ctx).V(1).Info("Leaving the target alone", "target", t.describe(), "reason", h.reason)
		return ctrl.Result{RequeueAfter: sooner(sleep, h.recheck)}, nil
	}
	if plan.Active < 0 {
		r.setReady(cs, metav1.ConditionTrue, ReasonWaiting, "no job has fired yet; the target is left alone until the first fire")
		return ctrl.Result{RequeueAfter: sleep}, nil
	}
	if err := r.scale(ctx, cs, ev, t, plan, expected, now); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: sleep}, nil
}

// sooner is the sooner of two requeue delays, where 0 is never.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// scale brings the target to the plan's count, recording the original count
// first, and reports it in the Ready condition, Events and metrics.
//
// expected is the count the target should have from the previous reconcile
// (the desired count it recorded), nil when there is none.
func (r *Reconciler) scale(ctx context.Context, cs *autoscalingv1alpha1.CronScaler, ev record.EventRecorder, t target, plan schedule.Plan, expected *int32, now time.Time) error {
	log := logr.FromContextOrDiscard(ctx)
	job := cs.Spec.Jobs[plan.Active]
	newFire := cs.Status.AppliedScheduleTime == nil || !cs.Status.AppliedScheduleTime.Time.Equal(plan.ActiveFire)
	trigger := triggerDrift
	if newFire {
		trigger = triggerSchedule
	}

	current, scaled, err := r.setCount(ctx, cs, t, expected, job.Replicas, newFire)
	if errors.Is(err, errStaleCronScaler) {
		// Not the target's fault: retried (with backoff) on a fresh read.
		return err
	}
	if err != nil {
		return r.targetFailed(cs, ev, trigger, err)
	}
	if scaled {
		scalesTotal.WithLabelValues("success", trigger).Inc()
		stamp := metav1.NewTime(now.UTC().Truncate(time.Second))
		cs.Status.LastScaleTime = &stamp
		reason, what := ReasonScaled, fmt.Sprintf("job %s fired at %s", job.Name, plan.ActiveFire.UTC().Format(time.RFC3339))
		if !newFire {
			reason, what = EventDriftCorrected, fmt.Sprintf("the count was changed outside the CronScaler; job %s is active", job.Name)
		}
		ev.Eventf(cs, corev1.EventTypeNormal, reason, "Scaled %s from %d to %d replicas: %s", t.describe(), current, job.Replicas, what)
		log.Info("Scaled target", "target", t.describe(), "from", current, "to", job.Replicas, "job", job.Name, "trigger", trigger)
	}
	if newFire {
		// The lag runs until the count is in place, so it is read from the
		// clock now, after the write. Fires from before the CronScaler
		// existed are applied but are not lag: nothing was late.
		if plan.ActiveFire.After(cs.CreationTimestamp.Time) {
			scaleLag.Observe(r.Clock.Now().Sub(plan.ActiveFire).Seconds())
		}
		applied := metav1.NewTime(plan.ActiveFire.UTC())
		cs.Status.AppliedScheduleTime = &applied
	}
	r.setReady(cs, metav1.ConditionTrue, ReasonScaled,
		fmt.Sprintf("%s has %d replicas, the count of job %s", t.describe(), job.Replicas, job.Name))
	return nil
}

// setCount brings the target to want and returns the count it had and
// whether it was changed.
//
// At a new fire the target usually still has the count of the previous
// reconcile (expected), so the change is tried first as one request that
// applies only if the count is indeed expected (see
// target.swapReplicas): a burst of fires then costs the API server one
// request each instead of a read and a write. Otherwise, and when the
// target's original count is not recorded yet, the count is read and
// written only when it differs.
func (r *Reconciler) setCount(ctx context.Context, cs *autoscalingv1alpha1.CronScaler, t target, expected *int32, want int32, newFire bool) (int32, bool, error) {
	_, recorded := cs.Annotations[autoscalingv1alpha1.OriginalReplicasAnnotation]
	if newFire && recorded && expected != nil && *expected != want {
		swapped, err := t.swapReplicas(ctx, *expected, want)
		if err != nil {
			return 0, false, err
		}
		if swapped {
			return *expected, true, nil
		}
	}
	current, err := t.replicas(ctx)
	if err != nil {
		return 0, false, err
	}
	// The original count is recorded the first time the target is read,
	// before any change: usually on the CronScaler's first reconcile, so
	// that the burst of work at a fire does not include it.
	if err := r.recordOriginal(ctx, cs, t, current, want); err != nil {
		return 0, false, err
	}
	if current == want {
		return current, false, nil
	}
	if err := t.setReplicas(ctx, want); err != nil {
		return 0, false, err
	}
	return current, true, nil
}

// targetFailed reports a failure to read or scale the target and returns
// the error, so the request is retried with backoff.
func (r *Reconciler) targetFailed(cs *autoscalingv1alpha1.CronScaler, ev record.EventRecorder, trigger string, err error) error {
	reason := ReasonScaleFailed
	switch {
	case errors.Is(err, errTargetNotFound):
		reason = ReasonTargetNotFound
	case errors.Is(err, errTargetNotScalable):
		reason = ReasonTargetNotScalable
	default:
		scalesTotal.WithLabelValues("error", trigger).Inc()
	}
	r.setReady(cs, metav1.ConditionFalse, reason, err.Error())
	ev.Event(cs, corev1.EventTypeWarning, reason, err.Error())
	return err
}

// errStaleCronScaler is a write of recordOriginal refused because the
// CronScaler was read from a cache behind the API server.
var errStaleCronScaler = errors.New("the CronScaler changed since it was read")

// recordOriginal stores the target's count in an annotation on the
// CronScaler the first time it reads it (so before it ever changes it), and
// an HPA's maxReplicas before a job first raises it, so that
// restoreOnDelete can put them back.
func (r *Reconciler) recordOriginal(ctx context.Context, cs *autoscalingv1alpha1.CronScaler, t target, current, desired int32) error {
	add := map[string]string{}
	if _, ok := cs.Annotations[autoscalingv1alpha1.OriginalReplicasAnnotation]; !ok {
		add[autoscalingv1alpha1.OriginalReplicasAnnotation] = strconv.Itoa(int(current))
	}
	if h, ok := t.(*hpaTarget); ok {
		if _, has := cs.Annotations[autoscalingv1alpha1.OriginalMaxReplicasAnnotation]; !has {
			hpa, err := h.get(ctx)
			if err != nil {
				return err
			}
			if hpa.Spec.MaxReplicas < desired {
				add[autoscalingv1alpha1.OriginalMaxReplicasAnnotation] = strconv.Itoa(int(hpa.Spec.MaxReplicas))
			}
		}
	}
	if len(add) == 0 {
		return nil
	}
	// Patch a copy: the response would overwrite the status computed so far.
	obj := cs.DeepCopy()
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	for k, v := range add {
		obj.Annotations[k] = v
	}
	// The lock makes a read from a cache that has not seen the previous
	// reconcile's record fail, instead of recording a count this
	// controller already changed.
	if err := r.Patch(ctx, obj, client.MergeFromWithOptions(cs, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("%w: recording the original replica count: %w", errStaleCronScaler, err)
		}
		return fmt.Errorf("recording the original replica count: %w", err)
	}
	cs.Annotations = obj.Annotations
	cs.ResourceVersion = obj.ResourceVersion
	return nil
}

// syncFinalizer adds the restore finalizer while restoreOnDelete is set and
// removes it when it is not.
func (r *Reconciler) syncFinalizer(ctx context.Context, cs *autoscalingv1alpha1.CronScaler) error {
	want := cs.Spec.RestoreOnDelete
	if want == controllerutil.ContainsFinalizer(cs, autoscalingv1alpha1.RestoreFinalizer) {
		return nil
	}
	before := cs.DeepCopy()
	if want {
		controllerutil.AddFinalizer(cs, autoscalingv1alpha1.RestoreFinalizer)
	} else {
		controllerutil.RemoveFinalizer(cs, autoscalingv1alpha1.RestoreFinalizer)
	}
	if err := r.Patch(ctx, cs, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating the finalizer: %w", err)
	}
	return nil
}

// finalize puts the target's original count back (restoreOnDelete) and
// releases the CronScaler. A target that is gone needs no restoring.
func (r *Reconciler) finalize(ctx context.Context, cs *autoscalingv1alpha1.CronScaler) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(cs, autoscalingv1alpha1.RestoreFinalizer) {
		return ctrl.Result{}, nil
	}
	if cs.Spec.RestoreOnDelete {
		if err := r.restore(ctx, cs); err != nil {
			before := cs.DeepCopy()
			r.setReady(cs, metav1.ConditionFalse, ReasonRestoreFailed, err.Error())
			r.Recorder.Event(cs, corev1.EventTypeWarning, ReasonRestoreFailed, err.Error())
			scalesTotal.WithLabelValues("error", triggerRestore).Inc()
			return ctrl.Result{}, errors.Join(err, r.patchStatus(ctx, before, cs))
		}
	}
	before := cs.DeepCopy()
	controllerutil.RemoveFinalizer(cs, autoscalingv1alpha1.RestoreFinalizer)
	if err := r.Patch(ctx, cs, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

// restore writes the recorded original count back to the target.
func (r *Reconciler) restore(ctx context.Context, cs *autoscalingv1alpha1.CronScaler) error {
	orig, ok, err := annotationInt(cs, autoscalingv1alpha1.OriginalReplicasAnnotation)
	if err != nil || !ok {
		// Never changed the target (or the record is unreadable): nothing to
		// put back.
		return nil
	}
	// A namespace being deleted takes the target with it; the identity
	// that could scale it is going too.
	ns, err := releaseidentity.Namespace(ctx, r.Client, cs.Namespace)
	if err != nil {
		return err
	}
	if ns == nil || ns.DeletionTimestamp != nil {
		return nil
	}
	t, err := r.target(ctx, cs)
	if err != nil {
		return err
	}
	// Restoring is writing: only when this CronScaler owns the count.
	h, err := r.claim(ctx, cs, t)
	if err != nil {
		return err
	}
	if h != nil {
		if h.reason != ReasonTargetNotFound {
			r.Recorder.Eventf(cs, corev1.EventTypeWarning, h.reason, "Not restoring %s to its original %d replicas: %s", t.describe(), orig, h.message)
		}
		return nil
	}
	if h, isHPA := t.(*hpaTarget); isHPA {
		origMax, _, _ := annotationInt(cs, autoscalingv1alpha1.OriginalMaxReplicasAnnotation)
		if _, err := h.setBounds(ctx, orig, origMax); err != nil {
			if errors.Is(err, errTargetNotFound) {
				return nil
			}
			return err
		}
	} else if err := t.setReplicas(ctx, orig); err != nil {
		if errors.Is(err, errTargetNotFound) || errors.Is(err, errTargetNotScalable) {
			return nil
		}
		return err
	}
	scalesTotal.WithLabelValues("success", triggerRestore).Inc()
	r.Recorder.Eventf(cs, corev1.EventTypeNormal, EventRestored, "Restored %s to its original %d replicas", t.describe(), orig)
	return nil
}

// annotationInt reads an integer annotation.
func annotationInt(cs *autoscalingv1alpha1.CronScaler, key string) (int32, bool, error) {
	v, ok := cs.Annotations[key]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false, fmt.Errorf("annotation %s=%q is not an integer", key, v)
	}
	return int32(n), true, nil
}

// setReady sets the Ready condition for the current generation.
func (r *Reconciler) setReady(cs *autoscalingv1alpha1.CronScaler, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&cs.Status.Conditions, metav1.Condition{
		Type: ConditionReady, Status: status, Reason: reason, Message: message,
		ObservedGeneration: cs.Generation,
	})
	cs.Status.ObservedGeneration = cs.Generation
}

// patchStatus writes the status when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, before, cs *autoscalingv1alpha1.CronScaler) error {
	if equality.Semantic.DeepEqual(before.Status, cs.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, cs, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching the status: %w", err)
	}
	return nil
}

// specOf is the part of the spec the schedule arithmetic needs.
func specOf(cs *autoscalingv1alpha1.CronScaler) schedule.Spec {
	s := schedule.Spec{TimeZone: cs.Spec.TimeZone, ExcludeDates: cs.Spec.ExcludeDates}
	for _, j := range cs.Spec.Jobs {
		s.Jobs = append(s.Jobs, schedule.Job{Name: j.Name, Schedule: j.Schedule, Replicas: j.Replicas})
	}
	return s
}

// recordPlan writes the plan's times into the status.
func recordPlan(cs *autoscalingv1alpha1.CronScaler, plan schedule.Plan) {
	cs.Status.ActiveJob = ""
	cs.Status.DesiredReplicas = nil
	if plan.Active >= 0 {
		cs.Status.ActiveJob = cs.Spec.Jobs[plan.Active].Name
		n := plan.Replicas
		cs.Status.DesiredReplicas = &n
	}
	cs.Status.NextScheduleTime = timeOrNil(plan.Next)
	cs.Status.Jobs = make([]autoscalingv1alpha1.JobStatus, len(plan.Jobs))
	for i, j := range plan.Jobs {
		cs.Status.Jobs[i] = autoscalingv1alpha1.JobStatus{
			Name: j.Name, LastScheduleTime: timeOrNil(j.Last), NextScheduleTime: timeOrNil(j.Next),
		}
	}
}

func timeOrNil(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.UTC())
	return &mt
}

// untilNext is how long to sleep until the plan may change; 0 (no requeue)
// when no job fires again. A few milliseconds are added so that the wake-up
// is at or after the fire time, never just before it.
func untilNext(plan schedule.Plan, now time.Time) time.Duration {
	if plan.Next.IsZero() {
		return 0
	}
	return plan.Next.Sub(now) + 5*time.Millisecond
}

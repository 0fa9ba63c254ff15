package tenant

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/acme/platform-operator/internal/operator/managersetup"
)

// namespacePoll re-checks a namespace that is still being deleted, in case a
// watch event is missed.
const namespacePoll = 10 * time.Second

// FinalizerReconciler keeps the tenant finalizer on every NamespaceTenant.
// While the tenant lives it sends the created event once its namespace
// exists; when the tenant is deleted it holds it until its namespace is
// gone and the deleted event is delivered, unless an admin sets the skip
// annotation.
type FinalizerReconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Notifier delivers lifecycle events; nil sends none.
	Notifier *Notifier
	Clock    clock.PassiveClock
	// Backoff spaces the retries of failed deliveries.
	Backoff Backoff
	// Shard selects the tenants this process owns; nil owns all. Another
	// shard's tenant is left to that shard's sidecar.
	Shard labels.Selector

	mu       sync.Mutex
	failures map[string]int // consecutive failed deliveries per event id
}

// SetupWithManager registers the controller: NamespaceTenants, and the
// Namespaces they own (so that a namespace's deletion releases its tenant
// at once).
func (r *FinalizerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenant-finalizer").
		For(NewObject()).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(ownerTenant)).
		Complete(r)
}

// ownerTenant maps a Namespace to the NamespaceTenant that owns it.
func ownerTenant(_ context.Context, obj client.Object) []reconcile.Request {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == GVK.Kind && ref.APIVersion == GVK.GroupVersion().String() {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
		}
	}
	return nil
}

// Reconcile handles deletion first, then makes sure the finalizer is there,
// then announces the namespace. A conflict (the Helm runtime changed the
// tenant at the same time) is not an error: the change that won brings the
// tenant back.
func (r *FinalizerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		logf.FromContext(ctx).V(1).Info("Tenant changed meanwhile; retrying on its next version", "reason", err.Error())
		return ctrl.Result{}, nil
	}
	return res, err
}

func (r *FinalizerReconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := NewObject()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !managersetup.OwnsShard(r.Shard, obj) {
		return ctrl.Result{}, nil
	}
	t := Tenant{obj}

	if !t.GetDeletionTimestamp().IsZero() {
		return r.finalize(ctx, t)
	}
	if added, err := r.ensureFinalizer(ctx, t); err != nil || added {
		return ctrl.Result{}, err
	}
	return r.announceCreated(ctx, t)
}

// ensureFinalizer adds the finalizer; added reports that it did (the update
// brings the tenant back for the next step).
func (r *FinalizerReconciler) ensureFinalizer(ctx context.Context, t Tenant) (added bool, err error) {
	if controllerutil.ContainsFinalizer(t, Finalizer) {
		return false, nil
	}
	if err := r.patch(ctx, t, func(u *unstructured.Unstructured) { controllerutil.AddFinalizer(u, Finalizer) }); err != nil {
		return false, fmt.Errorf("add finalizer: %w", err)
	}
	r.Recorder.Eventf(t, corev1.EventTypeNormal, ReasonFinalizerAdded,
		"Added finalizer %s: on deletion the tenant is kept until namespace %s is gone%s",
		Finalizer, t.NamespaceName(), r.webhookNote())
	return true, nil
}

func (r *FinalizerReconciler) webhookNote() string {
	if r.Notifier == nil {
		return ""
	}
	return " and the lifecycle webhook has been told"
}

// announceCreated sends the created event once the tenant's namespace
// exists, and records the delivery in an annotation.
func (r *FinalizerReconciler) announceCreated(ctx context.Context, t Tenant) (ctrl.Result, error) {
	if r.Notifier == nil || t.GetAnnotations()[CreatedEventAnnotation] != "" {
		return ctrl.Result{}, nil
	}
	ns, err := r.ownedNamespace(ctx, t)
	if err != nil || ns == nil {
		return ctrl.Result{}, err
	}
	ev := NewEvent(EventCreated, t, ns.CreationTimestamp.Time)
	if res, delivered := r.deliver(ctx, t, ev); !delivered {
		return res, nil
	}
	now := r.Clock.Now().UTC().Format(time.RFC3339)
	if err := r.patch(ctx, t, func(u *unstructured.Unstructured) {
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[CreatedEventAnnotation] = now
		u.SetAnnotations(a)
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("record created event delivery: %w", err)
	}
	return ctrl.Result{}, nil
}

// finalize runs the deletion steps: honour the skip annotation, wait for
// the namespace to be gone, deliver the deleted event, release the tenant.
func (r *FinalizerReconciler) finalize(ctx context.Context, t Tenant) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	if !controllerutil.ContainsFinalizer(t, Finalizer) {
		return ctrl.Result{}, nil
	}
	if t.SkipFinalizer() {
		r.Recorder.Eventf(t, corev1.EventTypeWarning, ReasonFinalizerSkipped,
			"Annotation %s=true: finalizer removed without waiting for namespace %s or notifying the webhook",
			SkipFinalizerAnnotation, t.NamespaceName())
		log.Info("Finalizer skipped by annotation", "namespace", t.NamespaceName())
		return ctrl.Result{}, r.removeFinalizer(ctx, t)
	}

	ns, err := r.ownedNamespace(ctx, t)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ns != nil {
		r.Recorder.Eventf(t, corev1.EventTypeNormal, ReasonWaitingForNamespace,
			"Waiting for namespace %s to be deleted (phase %s)", ns.Name, ns.Status.Phase)
		return ctrl.Result{RequeueAfter: namespacePoll}, nil
	}

	if r.Notifier != nil {
		ev := NewEvent(EventDeleted, t, t.GetDeletionTimestamp().Time)
		if res, delivered := r.deliver(ctx, t, ev); !delivered {
			return res, nil
		}
	}
	if err := r.removeFinalizer(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(t, corev1.EventTypeNormal, ReasonFinalized,
		"Namespace %s is gone; finalizer removed", t.NamespaceName())
	return ctrl.Result{}, nil
}

// ownedNamespace returns the tenant's namespace while it exists and belongs
// to this tenant (its owner reference carries the tenant's UID), else nil.
// A namespace of another owner (a conflicting tenant, or one that existed
// before) is never waited for.
func (r *FinalizerReconciler) ownedNamespace(ctx context.Context, t Tenant) (*corev1.Namespace, error) {
	name := t.NamespaceName()
	if name == "" {
		return nil, nil
	}
	var ns corev1.Namespace
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get namespace %s: %w", name, err)
	}
	for _, ref := range ns.OwnerReferences {
		if ref.UID == t.GetUID() {
			return &ns, nil
		}
	}
	return nil, nil
}

// deliver sends ev. On failure it records a Warning Event and returns the
// result that retries after the backoff delay.
func (r *FinalizerReconciler) deliver(ctx context.Context, t Tenant, ev Event) (ctrl.Result, bool) {
	log := logf.FromContext(ctx)
	err := r.Notifier.Notify(ctx, ev)
	if err == nil {
		r.resetFailures(ev.ID)
		r.Recorder.Eventf(t, corev1.EventTypeNormal, ReasonNotified,
			"Delivered the %s event (id %s) to the lifecycle webhook", ev.Type, ev.ID)
		log.Info("Webhook delivered", "event", ev.Type, "eventID", ev.ID)
		return ctrl.Result{}, true
	}
	failures := r.countFailure(ev.ID)
	delay := r.Backoff.Delay(failures)
	r.Recorder.Eventf(t, corev1.EventTypeWarning, ReasonNotifyFailed,
		"Delivering the %s event failed (attempt %d), retrying in %s: %v", ev.Type, failures, delay, err)
	log.Info("Webhook delivery failed", "event", ev.Type, "eventID", ev.ID, "attempt", failures, "retryIn", delay, "error", err.Error())
	return ctrl.Result{RequeueAfter: delay}, false
}

func (r *FinalizerReconciler) countFailure(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures == nil {
		r.failures = map[string]int{}
	}
	r.failures[id]++
	return r.failures[id]
}

func (r *FinalizerReconciler) resetFailures(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, id)
}

func (r *FinalizerReconciler) removeFinalizer(ctx context.Context, t Tenant) error {
	if err := r.patch(ctx, t, func(u *unstructured.Unstructured) { controllerutil.RemoveFinalizer(u, Finalizer) }); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	r.mu.Lock()
	for _, typ := range []EventType{EventCreated, EventDeleted} {
		delete(r.failures, EventID(string(t.GetUID()), typ))
	}
	r.mu.Unlock()
	return nil
}

// patch applies mutate to the tenant's metadata as a merge patch guarded by
// the resourceVersion, so that a concurrent change (the Helm runtime adds
// and removes its own finalizer) makes it fail and retry rather than
// overwrite the finalizer list. It never touches .status.
func (r *FinalizerReconciler) patch(ctx context.Context, t Tenant, mutate func(*unstructured.Unstructured)) error {
	before := t.DeepCopy()
	mutate(t.Unstructured)
	err := r.Client.Patch(ctx, t.Unstructured, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

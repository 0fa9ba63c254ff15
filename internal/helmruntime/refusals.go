package helmruntime

import (
	"context"
	"fmt"
	"sync"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// refusals remembers the last refusal of the ownership layer per resource,
// so that the status the library writes carries the refusal's reason
// (ReleaseNameConflict, InvalidReleaseName) instead of its generic
// InstallError and ReconcileError: the library sets reasons of its own and
// takes only the message from an action's error. An entry lives until the
// resource's next action goes ahead (or its deletion).
type refusals struct {
	mu sync.Mutex
	m  map[types.UID]refusal
}

type refusal struct{ reason, message string }

func newRefusals() *refusals { return &refusals{m: map[types.UID]refusal{}} }

func (r *refusals) refused(uid types.UID, reason, message string) {
	r.mu.Lock()
	r.m[uid] = refusal{reason: reason, message: message}
	r.mu.Unlock()
}

func (r *refusals) forget(uid types.UID) {
	r.mu.Lock()
	delete(r.m, uid)
	r.mu.Unlock()
}

// refusalReasonsClient is the reconciler's client: the status it writes
// gets the reason of the ownership layer's refusal on the conditions that
// report it.
type refusalReasonsClient struct {
	client.Client
	refusals *refusals
}

func withRefusalReasons(c client.Client, r *refusals) client.Client {
	return &refusalReasonsClient{Client: c, refusals: r}
}

func (c *refusalReasonsClient) Status() client.SubResourceWriter {
	return &refusalReasonsWriter{SubResourceWriter: c.Client.Status(), refusals: c.refusals}
}

type refusalReasonsWriter struct {
	client.SubResourceWriter
	refusals *refusals
}

// Update writes obj's status with refusal reasons.
func (w *refusalReasonsWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.refusals.apply(obj)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

// apply sets the refusal's reason on the True ReleaseFailed and
// Irreconcilable conditions of obj whose message is the refusal's.
func (r *refusals) apply(obj client.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	r.mu.Lock()
	ref, ok := r.m[obj.GetUID()]
	r.mu.Unlock()
	if !ok {
		return
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["status"] != string(corev1.ConditionTrue) || m["message"] != ref.message {
			continue
		}
		if m["type"] == "ReleaseFailed" || m["type"] == "Irreconcilable" {
			m["reason"] = ref.reason
		}
	}
	_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
}

// releaseDeletionWatch reconciles a resource of kind gvk again when a
// release of its name is deleted from its release namespace: a resource
// refused because another owner held the name then installs its own.
// Revisions of this kind's own releases (pruned history, uninstalls) wake
// nothing: a release of this kind can only belong to the resource of its
// name, which needs no wake-up for it.
func releaseDeletionWatch(c cache.Cache, gvk schema.GroupVersionKind, clusterScoped bool, releaseNamespace string) reconciler.ControllerSetupFunc {
	toRequest := func(_ context.Context, obj client.Object) []reconcile.Request {
		name := obj.GetLabels()["name"]
		if name == "" {
			return nil
		}
		if ref := metav1.GetControllerOf(obj); ref != nil && ref.Kind == gvk.Kind && ref.APIVersion == gvk.GroupVersion().String() {
			return nil
		}
		if !clusterScoped {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
		}
		if obj.GetNamespace() != releaseNamespace {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	}
	deletedRelease := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc: func(e event.DeleteEvent) bool {
			s, ok := e.Object.(*corev1.Secret)
			return ok && s.Type == helmReleaseSecretType && s.Labels["owner"] == "helm"
		},
	}
	return func(ctrl reconciler.ControllerSetup) error {
		if err := ctrl.Watch(source.Kind[client.Object](c, &corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(toRequest), deletedRelease)); err != nil {
			return fmt.Errorf("watch deleted releases for %s: %w", gvk.Kind, err)
		}
		return nil
	}
}

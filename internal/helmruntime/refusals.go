package helmruntime

import (
	"context"
	"fmt"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/acme/platform-operator/internal/actionpath"
)

// refusalReasons is the status edit that gives the conditions reporting a
// refusal of the ownership layer that refusal's reason (statusclient.go).
func refusalReasons(r *actionpath.Refusals) statusEdit {
	return func(_ context.Context, obj client.Object) func() {
		r.Apply(obj)
		return nil
	}
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

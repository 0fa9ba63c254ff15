package helmruntime

import (
	"context"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PauseAnnotation pauses a resource while its value is "true": nothing is
// installed, upgraded or repaired, Paused is True (reason
// PauseReconcileAnnotationTrue) and Ready Unknown (reason Paused). Any
// other value, or none, resumes it, and the change of the annotation asks
// for a reconcile at once (package cachefilter). A paused resource that is
// deleted is still uninstalled.
const PauseAnnotation = "helm.sdk.operatorframework.io/pause-reconcile"

// pauseHandler is the library's pause handler of PauseAnnotation, except
// that a resource being deleted is never paused: the library asks the
// handler before it uninstalls, and a paused resource would keep its
// uninstall finalizer, and so never go.
func pauseHandler() reconciler.PauseReconcileHandlerFunc {
	annotated := reconciler.PauseReconcileIfAnnotationTrue(PauseAnnotation)
	return func(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
		if obj.GetDeletionTimestamp() != nil {
			return false, nil
		}
		return annotated(ctx, obj)
	}
}

package helmruntime

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
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

	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/cachefilter"
)

// refusalReasons is the status edit that gives the conditions reporting a
// refusal of the action path that refusal's reason (statusclient.go).
func refusalReasons(_ context.Context, obj client.Object) func() {
	actionpath.ApplyRefusal(obj)
	return nil
}

// refusalsAtInfo returns l logging terminal errors at info, without a
// stack trace. controller-runtime logs the error of every reconcile that
// fails at error, with a stack trace, and does not retry a terminal one.
// The runtime's reconciles fail with a terminal error only for a refusal
// of the action path, which that path has reported already, as a Warning
// Event and in the resource's conditions, and which waits for the spec to
// change: a stack trace tells nothing about it, and an error line each
// time a refused resource is reconciled again would bury the errors that
// need a look.
func refusalsAtInfo(l logr.Logger) logr.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l
	}
	// One more frame between the caller and the sink: this one.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return logr.New(refusalSink{sink})
}

// refusalSink logs terminal errors at info.
type refusalSink struct {
	logr.LogSink
}

func (s refusalSink) Error(err error, msg string, keysAndValues ...any) {
	if errors.Is(err, reconcile.TerminalError(nil)) {
		s.Info(0, msg, append(keysAndValues, "error", err.Error(), "terminal", true)...)
		return
	}
	s.LogSink.Error(err, msg, keysAndValues...)
}

func (s refusalSink) WithValues(keysAndValues ...any) logr.LogSink {
	return refusalSink{s.LogSink.WithValues(keysAndValues...)}
}

func (s refusalSink) WithName(name string) logr.LogSink {
	return refusalSink{s.LogSink.WithName(name)}
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
			return ok && s.Type == cachefilter.HelmReleaseSecretType && s.Labels["owner"] == "helm"
		},
	}
	return func(ctrl reconciler.ControllerSetup) error {
		if err := ctrl.Watch(source.Kind[client.Object](c, &corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(toRequest), deletedRelease)); err != nil {
			return fmt.Errorf("watch deleted releases for %s: %w", gvk.Kind, err)
		}
		return nil
	}
}

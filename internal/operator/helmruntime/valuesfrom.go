package helmruntime

import (
	"context"
	"fmt"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/acme/platform-operator/internal/operator/release"
)

// valuesFromIndex indexes a kind's resources by the Secrets and
// ConfigMaps their spec.valuesFrom names (release.ValuesReference.ObjectKey).
const valuesFromIndex = "platform.acme.com/values-from"

// valuesFromWatch makes a change of a Secret or ConfigMap reconcile the
// resources of the kind whose spec.valuesFrom names it, so that a changed
// key upgrades their releases (a new revision, once: the next reconciles
// compute the same values). Missing objects count too: creating the
// Secret a resource waits for reconciles it.
//
// Memory: both kinds are watched as metadata only (the data of no Secret
// is cached for this), and the translator reads the named objects from
// the API server (values.go). The resources themselves are in the
// manager's cache already; the index maps a name to them.
func (k *kindRuntime) valuesFromWatch(mgr ctrl.Manager) (reconciler.Option, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.watch.GVK)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), u, valuesFromIndex, func(o client.Object) []string {
		obj, ok := o.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		spec, _ := obj.Object["spec"].(map[string]interface{})
		return release.ValuesFromKeys(spec)
	}); err != nil {
		return nil, fmt.Errorf("index %s by valuesFrom: %w", k.watch.GVK.Kind, err)
	}
	referrers := func(kind string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(k.watch.GVK.GroupVersion().WithKind(k.watch.GVK.Kind + "List"))
			// The cache, not the client: the manager's client reads
			// unstructured objects from the API server, which knows no index.
			if err := mgr.GetCache().List(ctx, list, client.InNamespace(o.GetNamespace()),
				client.MatchingFields{valuesFromIndex: kind + "/" + o.GetName()}); err != nil {
				k.log.Error(err, "List the resources that take values from an object", "namespace", o.GetNamespace(), "object", kind+"/"+o.GetName())
				return nil
			}
			reqs := make([]reconcile.Request, 0, len(list.Items))
			for i := range list.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
			return reqs
		})
	}
	return reconciler.WithControllerSetupFunc(func(c reconciler.ControllerSetup) error {
		for _, kind := range []string{release.SourceSecret, release.SourceConfigMap} {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
			if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(m), referrers(kind), predicate.ResourceVersionChangedPredicate{})); err != nil {
				return fmt.Errorf("watch %ss for valuesFrom: %w", kind, err)
			}
		}
		return nil
	}), nil
}

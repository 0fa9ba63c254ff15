package helmruntime

import (
	"context"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The library reconciles a custom resource on every update the watch of
// its kind reports, and offers no predicate for that watch. Each install
// and each upgrade then cost a second reconcile: the reconcile writes the
// resource (its finalizer, its status), and the write comes back as an
// update. That reconcile reads the resource and the release, renders the
// chart and compares, and finds nothing to do: about four requests and a
// render for each release, and with thousands of resources created at
// once a queue of them that delays the first reconcile of the others.
//
// The runtime hands the library a manager whose cache gives the watch of
// the kind an informer that passes on an update only when it can ask for
// work (specChanged). Every other watch, the runtime's own included, sees
// the manager's cache as it is.

// specChanged tells whether an update of a custom resource can ask for a
// reconcile:
//   - its generation changed: the spec was edited, or the resource is
//     being deleted (the API server bumps the generation when it sets the
//     deletion timestamp; the timestamp is compared too);
//   - its labels changed: the kind's selector, and shards, match on them;
//   - its annotations changed: the library's pause and install, upgrade
//     and uninstall annotations live there;
//   - it lost a finalizer: the uninstall finalizer, taken away while the
//     resource lives, must be put back.
//
// The informer's periodic resync (the same object twice) passes too. A
// write of the status, or of a finalizer the reconcile adds, asks for
// nothing: it is the reconcile's own doing, or (for status) the runtime
// rewrites it at the next reconcile.
func specChanged(old, updated client.Object) bool {
	if old.GetResourceVersion() == updated.GetResourceVersion() {
		return true // the informer's periodic resync: a safety net, kept
	}
	if old.GetGeneration() != updated.GetGeneration() {
		return true
	}
	if !old.GetDeletionTimestamp().Equal(updated.GetDeletionTimestamp()) {
		return true
	}
	if !mapsEqual(old.GetLabels(), updated.GetLabels()) || !mapsEqual(old.GetAnnotations(), updated.GetAnnotations()) {
		return true
	}
	kept := make(map[string]bool, len(updated.GetFinalizers()))
	for _, f := range updated.GetFinalizers() {
		kept[f] = true
	}
	for _, f := range old.GetFinalizers() {
		if !kept[f] {
			return true
		}
	}
	return false
}

// mapsEqual compares label or annotation maps; nil equals empty.
func mapsEqual(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// primaryEventsManager is the manager the library's reconciler of kind gvk
// is set up with (see the top of this file).
type primaryEventsManager struct {
	ctrl.Manager
	cache cache.Cache
}

func withPrimaryEventFilter(mgr ctrl.Manager, gvk schema.GroupVersionKind) ctrl.Manager {
	return &primaryEventsManager{Manager: mgr, cache: &primaryEventsCache{Cache: mgr.GetCache(), gvk: gvk}}
}

func (m *primaryEventsManager) GetCache() cache.Cache { return m.cache }

// primaryEventsCache is the manager's cache, whose informer of kind gvk
// filters updates.
type primaryEventsCache struct {
	cache.Cache
	gvk schema.GroupVersionKind
}

func (c *primaryEventsCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil || obj.GetObjectKind().GroupVersionKind() != c.gvk {
		return i, err
	}
	return &specChangeInformer{Informer: i}, nil
}

// specChangeInformer adds event handlers that see an update only when
// specChanged says it can ask for work.
type specChangeInformer struct {
	cache.Informer
}

func (i *specChangeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(specChangeHandler{h})
}

func (i *specChangeInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, period time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithResyncPeriod(specChangeHandler{h}, period)
}

func (i *specChangeInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithOptions(specChangeHandler{h}, opts)
}

type specChangeHandler struct {
	toolscache.ResourceEventHandler
}

func (h specChangeHandler) OnUpdate(oldObj, newObj any) {
	o, okOld := oldObj.(client.Object)
	n, okNew := newObj.(client.Object)
	if okOld && okNew && !specChanged(o, n) {
		return
	}
	h.ResourceEventHandler.OnUpdate(oldObj, newObj)
}

package cachefilter

import (
	"context"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/helmconfig"
)

// The library reconciles a custom resource on every update the watch of
// its kind reports, and on every event of a Secret the resource controls,
// and offers no predicate for either watch. Each install and each upgrade
// then cost a second reconcile: the reconcile writes the resource (its
// finalizer, its status) and the release record (a Secret the resource
// controls, created pending and updated when the action ends), and the
// writes come back as events. That reconcile reads the resource and the
// release, renders the chart and compares, and finds nothing to do: about
// four requests and a render for each release, and with thousands of
// resources created at once a queue of them that delays the first
// reconcile of the others.
//
// The runtime hands the library a manager whose cache gives the library's
// watches informers that filter events:
//   - of the kind: an update passes only when it can ask for work
//     (specChanged);
//   - of Secrets: Helm's own writes of a release record do not pass: its
//     creation, and an update that moves its status label (pending to
//     deployed or failed, deployed to superseded). Helm writes records so
//     only in the actions the reconciles run. Any other edit of a record,
//     its deletion, and every event of other Secrets pass;
//   - of every other kind (the release's objects, which the library's
//     dependent watches follow): an update that reports a write of the
//     kind's own upgrade or rollback does not pass (helmconfig.Updates).
//     Helm patches the objects whose rendering changed, and each patch
//     came back as a reconcile that read the resource, the release and
//     every object of it to find nothing to repair. An update of a
//     Secret the chart renders is judged the same way.
//
// Every other watch, the runtime's own included, sees the manager's cache
// as it is.

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

func WithPrimaryEventFilter(mgr ctrl.Manager, gvk schema.GroupVersionKind, ownWrites *helmconfig.Updates) ctrl.Manager {
	return &primaryEventsManager{Manager: mgr, cache: &primaryEventsCache{Cache: mgr.GetCache(), gvk: gvk, ownWrites: ownWrites}}
}

func (m *primaryEventsManager) GetCache() cache.Cache { return m.cache }

// primaryEventsCache is the manager's cache, whose informers of kind gvk
// and of Secrets filter events.
type primaryEventsCache struct {
	cache.Cache
	gvk       schema.GroupVersionKind
	ownWrites *helmconfig.Updates
}

var secretGVK = corev1.SchemeGroupVersion.WithKind("Secret")

func (c *primaryEventsCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return i, err
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if _, typed := obj.(*corev1.Secret); typed {
		gvk = secretGVK
	}
	switch gvk {
	case c.gvk:
		return &filteringInformer{Informer: i, wrap: func(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
			return specChangeHandler{h}
		}}, nil
	case secretGVK:
		return &filteringInformer{Informer: i, wrap: func(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
			return releaseWriteHandler{ownWriteHandler{h, c.ownWrites, gvk.GroupKind()}}
		}}, nil
	}
	return &filteringInformer{Informer: i, wrap: func(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
		return ownWriteHandler{h, c.ownWrites, gvk.GroupKind()}
	}}, nil
}

// filteringInformer wraps each event handler added to it.
type filteringInformer struct {
	cache.Informer
	wrap func(toolscache.ResourceEventHandler) toolscache.ResourceEventHandler
}

func (i *filteringInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(i.wrap(h))
}

func (i *filteringInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, period time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithResyncPeriod(i.wrap(h), period)
}

func (i *filteringInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithOptions(i.wrap(h), opts)
}

// specChangeHandler passes an update only when specChanged says it can
// ask for work.
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

// releaseWriteHandler drops Helm's own writes of release records: their
// creation, and updates that move their status label.
type releaseWriteHandler struct {
	toolscache.ResourceEventHandler
}

func (h releaseWriteHandler) OnAdd(obj any, isInInitialList bool) {
	if IsReleaseRecord(obj) {
		return
	}
	h.ResourceEventHandler.OnAdd(obj, isInInitialList)
}

func (h releaseWriteHandler) OnUpdate(oldObj, newObj any) {
	o, okOld := oldObj.(client.Object)
	n, okNew := newObj.(client.Object)
	if okOld && okNew && IsReleaseRecord(n) && o.GetLabels()["status"] != n.GetLabels()["status"] {
		return
	}
	h.ResourceEventHandler.OnUpdate(oldObj, newObj)
}

// ownWriteHandler passes an update of an object of kind gk unless it
// reports a write the kind's own actions recorded; one that comes while
// the object is being written waits for the write to end.
type ownWriteHandler struct {
	toolscache.ResourceEventHandler
	writes *helmconfig.Updates
	gk     schema.GroupKind
}

func (h ownWriteHandler) OnUpdate(oldObj, newObj any) {
	n, ok := newObj.(client.Object)
	if !ok {
		h.ResourceEventHandler.OnUpdate(oldObj, newObj)
		return
	}
	if o, ok := oldObj.(client.Object); ok && o.GetResourceVersion() == n.GetResourceVersion() {
		h.ResourceEventHandler.OnUpdate(oldObj, newObj) // a resync
		return
	}
	key := helmconfig.ObjectKey{GroupKind: h.gk, Namespace: n.GetNamespace(), Name: n.GetName()}
	h.writes.Check(key, n.GetResourceVersion(), func() { h.ResourceEventHandler.OnUpdate(oldObj, newObj) })
}

// IsReleaseRecord tells a Helm release record by its metadata, which the
// cache keeps of every Secret (typed, or unstructured for the dependent
// watches of charts that render Secrets).
func IsReleaseRecord(obj any) bool {
	o, ok := obj.(client.Object)
	return ok && o.GetLabels()["owner"] == "helm" && strings.HasPrefix(o.GetName(), "sh.helm.release.v1.")
}

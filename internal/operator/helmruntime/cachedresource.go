package helmruntime

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/cachefilter"
)

// The library starts every reconcile by reading its resource, and writes
// the resource's status back from that copy (a whole status, with the
// version read as the precondition). The manager's client reads
// unstructured objects from the API server: one request per install and
// per upgrade. cachedResource answers that read from the cache instead,
// with the status the cache trims put back from cachefilter.Statuses.
//
// The copy is as fresh as the cache: every reconcile is asked for by an
// event the cache has already applied, so the copy is at least as new as
// what asked. A copy older than the resource (a write of this process
// whose event is still on its way) cannot overwrite anything: the status
// write names the version read and the API server refuses it, and the
// reconcile is retried. A resource the cache does not hold, whose whole
// status is not kept for the version it holds, or whose last write by this
// process the cache has not seen yet (notingWrites), is read from the API
// server as before.

// cachedResource is a client.Client whose reads of the custom resources of
// gvk come from the cache with their whole status.
type cachedResource struct {
	client.Client
	cache    client.Reader
	statuses *cachefilter.Statuses
	gvk      schema.GroupVersionKind
}

func newCachedResource(c client.Client, cached client.Reader, statuses *cachefilter.Statuses, gvk schema.GroupVersionKind) client.Client {
	if statuses == nil {
		return c
	}
	return &cachedResource{Client: c, cache: cached, statuses: statuses, gvk: gvk}
}

func (c *cachedResource) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != c.gvk || len(opts) > 0 {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	cached := &unstructured.Unstructured{}
	cached.SetGroupVersionKind(c.gvk)
	if err := c.cache.Get(ctx, key, cached); err != nil {
		return c.Client.Get(ctx, key, obj)
	}
	if c.statuses.Restore(cached) {
		u.Object = cached.Object
		return nil
	}
	if err := c.Client.Get(ctx, key, obj); err != nil {
		return err
	}
	c.statuses.Settled(c.gvk, key, u.GetResourceVersion())
	return nil
}

// notingWrites is a client.Client that tells statuses the version of each
// write of a custom resource of gvk (cachefilter.Statuses.Wrote). Every
// client of the kind's runtime that writes its resources is one.
type notingWrites struct {
	client.Client
	statuses *cachefilter.Statuses
	gvk      schema.GroupVersionKind
}

func newNotingWrites(c client.Client, statuses *cachefilter.Statuses, gvk schema.GroupVersionKind) client.Client {
	if statuses == nil {
		return c
	}
	return &notingWrites{Client: c, statuses: statuses, gvk: gvk}
}

// wrote notes obj's version after a write of it returned err.
func (c *notingWrites) wrote(obj client.Object, err error) error {
	if err == nil && obj.GetObjectKind().GroupVersionKind() == c.gvk {
		c.statuses.Wrote(c.gvk, client.ObjectKeyFromObject(obj), obj.GetResourceVersion())
	}
	return err
}

func (c *notingWrites) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.wrote(obj, c.Client.Update(ctx, obj, opts...))
}

func (c *notingWrites) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.wrote(obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *notingWrites) Status() client.SubResourceWriter {
	return &notingStatusWrites{SubResourceWriter: c.Client.Status(), c: c}
}

type notingStatusWrites struct {
	client.SubResourceWriter
	c *notingWrites
}

func (w *notingStatusWrites) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return w.c.wrote(obj, w.SubResourceWriter.Update(ctx, obj, opts...))
}

func (w *notingStatusWrites) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return w.c.wrote(obj, w.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}

// forgetDeleted drops the kept status of each resource of gvk the cache
// sees deleted.
func forgetDeleted(ctx context.Context, informers cache.Informers, statuses *cachefilter.Statuses, gvk schema.GroupVersionKind) error {
	if statuses == nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	inf, err := informers.GetInformer(ctx, u)
	if err != nil {
		return fmt.Errorf("informer of %s: %w", gvk, err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(client.Object); ok {
				statuses.Forget(gvk, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
			}
		},
	})
	return err
}

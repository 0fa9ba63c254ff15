package helmruntime

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The cache holds only the shard's custom resources (cachefilter.CacheOptions), but
// the library's read of the custom resource of a request goes to the API
// server when the cache cannot answer it (cachedresource.go), and the API
// server holds every shard's. A request for another shard's resource still comes:
// the dependent watches are on kinds, so an event of an object another
// shard's release rendered maps to that shard's resource. shardFilter
// makes such a read report the resource as not found, so the library
// stops there ("nothing to do") and never acts on it.

// shardFilter is a client.Client whose reads of a custom resource of
// resource gr that the shard sel does not match report it not found.
type shardFilter struct {
	client.Client
	sel labels.Selector
	gr  schema.GroupResource
}

// newShardFilter wraps c for the custom resources of gr; c itself when
// the process is the only shard.
func newShardFilter(c client.Client, sel labels.Selector, gr schema.GroupResource) client.Client {
	if sel == nil || sel.Empty() {
		return c
	}
	return &shardFilter{Client: c, sel: sel, gr: gr}
}

func (c *shardFilter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if !c.sel.Matches(labels.Set(obj.GetLabels())) {
		return apierrors.NewNotFound(c.gr, key.Name)
	}
	return nil
}

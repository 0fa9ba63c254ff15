// Sharding: several operator Deployments split the custom
// resources between them: each runs with a label selector (--shard-selector)
// and owns the resources it matches, and only those. See docs/sharding.md.
//
// A shard's Helm runtime caches only the custom resources its selector
// matches, so a resource whose label moves out of it disappears from its
// cache (the API server's watch reports it deleted) and is never reconciled
// there again; its release and rendered objects stay where they are. The
// shard it moved into sees it created, reconciles it, finds its release
// (same kind, namespace, name and UID: the release owner check admits it)
// and carries on from the release's last revision, without a reinstall.

package managersetup

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// ShardLabel is the label the shipped sharding example and the docs select
// shards by. Any label works: the selector is the user's.
const ShardLabel = "platform.acme.com/shard"

// ParseShard parses the value of --shard-selector, a label selector in kubectl's
// syntax ("platform.acme.com/shard=b", "platform.acme.com/shard notin (b,c)").
// Empty selects everything: the process is the only shard.
func ParseShard(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--shard-selector %q: %w", s, err)
	}
	return sel, nil
}

// ShardLeaseID is the leader election Lease of the shard sel with the base
// Lease name id: id itself for the only shard, else id with a digest of the
// selector, so that two shards never share a Lease (and one of them never
// waits for the other's to end).
func ShardLeaseID(id string, sel labels.Selector) string {
	if sel == nil || sel.Empty() {
		return id
	}
	return id + "-shard-" + ShardID(sel)
}

// ShardID names the shard sel in labels: a digest of the selector, empty for
// the only shard.
func ShardID(sel labels.Selector) string {
	if sel == nil || sel.Empty() {
		return ""
	}
	sum := sha256.Sum256([]byte(sel.String()))
	return hex.EncodeToString(sum[:5])
}

// OwnsShard reports whether the shard sel owns obj.
func OwnsShard(sel labels.Selector, obj client.Object) bool {
	return sel == nil || sel.Matches(labels.Set(obj.GetLabels()))
}

// ShardMoved passes the updates of an object that moved into or out of the
// shard sel: its labels changed which shard owns it.
func ShardMoved(sel labels.Selector) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return OwnsShard(sel, e.ObjectOld) != OwnsShard(sel, e.ObjectNew)
		},
	}
}

package managersetup

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func labelled(l map[string]string) client.Object {
	cm := &corev1.ConfigMap{}
	cm.Labels = l
	return cm
}

func TestParse(t *testing.T) {
	for _, s := range []string{"", ShardLabel + "=b", ShardLabel + " notin (b,c)", "!" + ShardLabel} {
		if _, err := ParseShard(s); err != nil {
			t.Errorf("ParseShard(%q): %v", s, err)
		}
	}
	_, err := ParseShard("shard==(")
	if err == nil || !strings.Contains(err.Error(), "--shard-selector") {
		t.Errorf("Parse of a bad selector: got %v, want an error naming the flag", err)
	}
}

func TestLeaseID(t *testing.T) {
	const id = "platform-operator-helm.acme.com"
	if got := ShardLeaseID(id, labels.Everything()); got != id {
		t.Errorf("the only shard: got %q, want %q", got, id)
	}
	a, _ := ParseShard(ShardLabel + "=a")
	b, _ := ParseShard(ShardLabel + "=b")
	la, lb := ShardLeaseID(id, a), ShardLeaseID(id, b)
	if la == lb || !strings.HasPrefix(la, id+"-shard-") || !strings.HasPrefix(lb, id+"-shard-") {
		t.Errorf("shards a and b: Leases %q and %q, want two distinct %s-shard-<digest>", la, lb, id)
	}
	// The same selector written two ways is one shard, with one Lease.
	x, _ := ParseShard("tier=gold," + ShardLabel + "=a")
	y, _ := ParseShard(ShardLabel + "=a, tier=gold")
	if ShardLeaseID(id, x) != ShardLeaseID(id, y) {
		t.Errorf("one selector written two ways has two Leases: %q, %q", ShardLeaseID(id, x), ShardLeaseID(id, y))
	}
}

func TestOwnsAndMoved(t *testing.T) {
	b, _ := ParseShard(ShardLabel + "=b")
	inA, inB, none := labelled(map[string]string{ShardLabel: "a"}), labelled(map[string]string{ShardLabel: "b"}), labelled(nil)
	if OwnsShard(b, inA) || !OwnsShard(b, inB) || OwnsShard(b, none) {
		t.Error("shard b must own exactly the objects labelled b")
	}
	if !OwnsShard(nil, none) || !OwnsShard(labels.Everything(), inA) {
		t.Error("the only shard owns everything")
	}
	moved := ShardMoved(b)
	for _, c := range []struct {
		old, new client.Object
		want     bool
	}{{inA, inB, true}, {inB, none, true}, {inA, none, false}, {inB, inB, false}} {
		if got := moved.Update(event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
			t.Errorf("ShardMoved(%v -> %v) = %v, want %v", c.old.GetLabels(), c.new.GetLabels(), got, c.want)
		}
	}
	if moved.Create(event.CreateEvent{Object: inB}) {
		t.Error("ShardMoved passes creations")
	}
}

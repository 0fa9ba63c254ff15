package shard

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
	for _, s := range []string{"", Label + "=b", Label + " notin (b,c)", "!" + Label} {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
	_, err := Parse("shard==(")
	if err == nil || !strings.Contains(err.Error(), "--shard-selector") {
		t.Errorf("Parse of a bad selector: got %v, want an error naming the flag", err)
	}
}

func TestLeaseID(t *testing.T) {
	const id = "platform-operator-helm.acme.com"
	if got := LeaseID(id, labels.Everything()); got != id {
		t.Errorf("the only shard: got %q, want %q", got, id)
	}
	a, _ := Parse(Label + "=a")
	b, _ := Parse(Label + "=b")
	la, lb := LeaseID(id, a), LeaseID(id, b)
	if la == lb || !strings.HasPrefix(la, id+"-shard-") || !strings.HasPrefix(lb, id+"-shard-") {
		t.Errorf("shards a and b: Leases %q and %q, want two distinct %s-shard-<digest>", la, lb, id)
	}
	// The same selector written two ways is one shard, with one Lease.
	x, _ := Parse("tier=gold," + Label + "=a")
	y, _ := Parse(Label + "=a, tier=gold")
	if LeaseID(id, x) != LeaseID(id, y) {
		t.Errorf("one selector written two ways has two Leases: %q, %q", LeaseID(id, x), LeaseID(id, y))
	}
}

func TestOwnsAndMoved(t *testing.T) {
	b, _ := Parse(Label + "=b")
	inA, inB, none := labelled(map[string]string{Label: "a"}), labelled(map[string]string{Label: "b"}), labelled(nil)
	if Owns(b, inA) || !Owns(b, inB) || Owns(b, none) {
		t.Error("shard b must own exactly the objects labelled b")
	}
	if !Owns(nil, none) || !Owns(labels.Everything(), inA) {
		t.Error("the only shard owns everything")
	}
	moved := Moved(b)
	for _, c := range []struct {
		old, new client.Object
		want     bool
	}{{inA, inB, true}, {inB, none, true}, {inA, none, false}, {inB, inB, false}} {
		if got := moved.Update(event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
			t.Errorf("Moved(%v -> %v) = %v, want %v", c.old.GetLabels(), c.new.GetLabels(), got, c.want)
		}
	}
	if moved.Create(event.CreateEvent{Object: inB}) {
		t.Error("Moved passes creations")
	}
}

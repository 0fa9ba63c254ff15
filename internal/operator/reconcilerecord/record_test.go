package reconcilerecord

import (
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOneRecordPerObject(t *testing.T) {
	a, b := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	Of(a).Refuse("ObjectConflict", "clash")
	if r, ok := Of(a).Refusal(); !ok || r.Reason != "ObjectConflict" || r.Message != "clash" {
		t.Fatalf("refusal of a = %+v, %v; want the one recorded", r, ok)
	}
	if _, ok := Of(b).Refusal(); ok {
		t.Fatal("b shares a's record")
	}
	Of(a).Proceed()
	if _, ok := Of(a).Refusal(); ok {
		t.Fatal("the refusal outlived an action that went ahead")
	}

	Of(a).SetEvents([]Event{{Reason: "ValueGenerated", Message: "m"}})
	if got := Of(a).TakeEvents(); len(got) != 1 {
		t.Fatalf("events = %v; want one", got)
	}
	if got := Of(a).TakeEvents(); len(got) != 0 {
		t.Fatalf("events taken twice: %v", got)
	}
	if _, read, _ := Of(b).Release(); read {
		t.Fatal("a release read that never happened")
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}

func TestTypedObjectsHaveNoRecord(t *testing.T) {
	r := Of(&corev1.ConfigMap{})
	if r != nil {
		t.Fatal("a typed object got a record")
	}
	// A nil record keeps nothing and does not fail.
	r.Refuse("r", "m")
	if _, ok := r.Refusal(); ok {
		t.Fatal("a nil record kept a refusal")
	}
}

// The record goes with the object: the next reconcile's object starts a
// new one, and no entry is left behind.
func TestRecordGoesWithItsObject(t *testing.T) {
	before := live()
	func() {
		for range 100 {
			Of(&unstructured.Unstructured{}).Refuse("r", "m")
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for live() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d records outlive their objects", live()-before)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

package helmconfig

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var web = ObjectKey{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Namespace: "shop", Name: "web"}

// check returns whether Check delivered the event by the time it returned.
func check(r *OwnWrites, k ObjectKey, version string) (delivered *bool) {
	d := false
	r.Check(k, version, func() { d = true })
	return &d
}

func TestRecordedWriteIsDroppedOnce(t *testing.T) {
	r := &OwnWrites{}
	r.Begin([]ObjectKey{web})(map[ObjectKey]string{web: "5"})
	if *check(r, web, "5") {
		t.Error("the recorded write was delivered")
	}
	if !*check(r, web, "5") {
		t.Error("a second event of the same version was dropped too; a record is used once")
	}
	if !*check(r, web, "6") {
		t.Error("a version nobody recorded was dropped")
	}
}

func TestEventsDuringAWriteWaitForIt(t *testing.T) {
	r := &OwnWrites{}
	endA := r.Begin([]ObjectKey{web})
	endB := r.Begin([]ObjectKey{web}) // two actions that may write the object
	own, other := check(r, web, "7"), check(r, web, "8")
	if *own || *other {
		t.Fatal("an event was delivered while the object was being written")
	}
	endA(map[ObjectKey]string{web: "7"})
	if *own || *other {
		t.Fatal("events were settled while another action still writes the object")
	}
	endB(nil)
	if *own {
		t.Error("the recorded write was delivered")
	}
	if !*other {
		t.Error("an edit made during the write was not delivered after it")
	}
	endB(map[ObjectKey]string{web: "9"}) // a second call changes nothing
	if !*check(r, web, "9") {
		t.Error("a second call of end recorded a write")
	}
}

func TestRecordsExpire(t *testing.T) {
	now := time.Unix(1000, 0)
	r := &OwnWrites{now: func() time.Time { return now }}
	r.Begin([]ObjectKey{web})(map[ObjectKey]string{web: "5"})
	now = now.Add(recordTTL + time.Second)
	if !*check(r, web, "5") {
		t.Error("an expired record still dropped its event")
	}
	r.Begin(nil)(map[ObjectKey]string{web: "6"}) // sweeps
	if len(r.written) != 1 {
		t.Errorf("records after a sweep: %v, want only the new one", r.written)
	}
}

func TestNilRegistryPassesEverything(t *testing.T) {
	var r *OwnWrites
	r.Begin([]ObjectKey{web})(map[ObjectKey]string{web: "5"})
	if !*check(r, web, "5") {
		t.Error("a nil registry dropped an event")
	}
}

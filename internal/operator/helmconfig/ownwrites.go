// Own writes: this tells the runtime's watches which changes of a
// release's objects are the runtime's own: the writes Helm makes in an
// upgrade come back as watch events, and the library's dependent watches
// would reconcile the owner once more for each, to find nothing to do.
//
// The action path registers the objects an action may write before it
// writes them (Begin) and records the resourceVersion of each write when
// it is done (the function Begin returns). A watch asks Check for every
// update event: an event of an object being written waits until the write
// is recorded, then it is dropped if it reports exactly the recorded
// version, and passed on otherwise. Everything else passes at once: an
// edit by anyone else has a version the runtime did not write.

package helmconfig

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectKey names an object; the group and kind, not the version, so that a
// write through one version and a watch of another meet.
type ObjectKey struct {
	schema.GroupKind
	Namespace, Name string
}

// recordTTL is how long a recorded write waits for its event. Events come
// within moments; a write of an object no watch of the kind sees is
// forgotten after this.
const recordTTL = 2 * time.Minute

// OwnWrites holds the writes in flight and the recorded ones of one kind's
// actions. The zero value is ready to use; a nil OwnWrites records nothing
// and passes every event.
type OwnWrites struct {
	mu        sync.Mutex
	inFlight  map[ObjectKey]*flight
	written   map[ObjectKey]record
	lastSweep time.Time
	now       func() time.Time
}

type flight struct {
	actions int      // actions that may write the object
	parked  []parked // events that came meanwhile
}

type parked struct {
	version string
	deliver func()
}

type record struct {
	version string
	at      time.Time
}

func (r *OwnWrites) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// Begin registers that an action may write the objects keys. The returned
// function ends that: it records, for each object the action wrote, the
// resourceVersion the write left (written), and settles the events parked
// meanwhile. It must be called exactly once, also when the action failed
// (with what it did write).
func (r *OwnWrites) Begin(keys []ObjectKey) (end func(written map[ObjectKey]string)) {
	if r == nil {
		return func(map[ObjectKey]string) {}
	}
	r.mu.Lock()
	if r.inFlight == nil {
		r.inFlight = map[ObjectKey]*flight{}
	}
	for _, k := range keys {
		f := r.inFlight[k]
		if f == nil {
			f = &flight{}
			r.inFlight[k] = f
		}
		f.actions++
	}
	r.mu.Unlock()
	var once sync.Once
	return func(written map[ObjectKey]string) {
		once.Do(func() { r.end(keys, written) })
	}
}

func (r *OwnWrites) end(keys []ObjectKey, written map[ObjectKey]string) {
	var deliver []func()
	r.mu.Lock()
	now := r.clock()
	if r.written == nil {
		r.written = map[ObjectKey]record{}
	}
	if now.Sub(r.lastSweep) > recordTTL/4 {
		for k, rec := range r.written {
			if now.Sub(rec.at) > recordTTL {
				delete(r.written, k)
			}
		}
		r.lastSweep = now
	}
	for k, v := range written {
		if v != "" {
			r.written[k] = record{version: v, at: now}
		}
	}
	for _, k := range keys {
		f := r.inFlight[k]
		if f == nil {
			continue
		}
		if f.actions--; f.actions > 0 {
			continue
		}
		delete(r.inFlight, k)
		for _, p := range f.parked {
			if !r.takeLocked(k, p.version) {
				deliver = append(deliver, p.deliver)
			}
		}
	}
	r.mu.Unlock()
	for _, d := range deliver {
		d()
	}
}

// takeLocked reports whether version is the recorded write of k, and
// forgets the record if so.
func (r *OwnWrites) takeLocked(k ObjectKey, version string) bool {
	rec, ok := r.written[k]
	if !ok || rec.version != version || r.clock().Sub(rec.at) > recordTTL {
		return false
	}
	delete(r.written, k)
	return true
}

// Check decides about an update event of object k at version: deliver is
// called, now or when the object's writes in flight end, unless the event
// reports a write the runtime recorded.
func (r *OwnWrites) Check(k ObjectKey, version string, deliver func()) {
	if r == nil {
		deliver()
		return
	}
	r.mu.Lock()
	if f := r.inFlight[k]; f != nil {
		f.parked = append(f.parked, parked{version: version, deliver: deliver})
		r.mu.Unlock()
		return
	}
	own := r.takeLocked(k, version)
	r.mu.Unlock()
	if !own {
		deliver()
	}
}

// Package reconcilerecord is the one record a reconcile of a custom
// resource carries from step to step: what the action path refused and
// why, the release it read, and the Events that wait for the release to
// keep the values they describe.
//
// The library's reconciler gives every step of one reconcile the same
// object: the values translator and the action client getter get it with
// the reconcile's context, the post hooks get it alone, and the status
// write gets it back. A post hook has no context, so the object is what
// the steps share: Of returns the record attached to it. The record lives
// as long as the object does, that is, one reconcile: the next reconcile
// reads the resource into a new object and starts a new record, and
// nothing has to remember to drop the old one.
package reconcilerecord

import (
	"runtime"
	"sync"
	"weak"

	hrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Record is what one reconcile has learned so far. Its methods are safe on
// a nil Record, which keeps nothing.
type Record struct {
	mu      sync.Mutex
	refusal *Refusal
	stored  *storedRead
	events  []Event
	values  map[string]any
	images  []string
}

// Refusal is a refusal of the action path: the reason the conditions that
// report it carry instead of the library's generic one, and its message,
// by which they are found.
type Refusal struct {
	Reason, Message string
}

// Event is a Normal Event recorded once the release keeps what it says.
type Event struct {
	Reason, Message string
}

// storedRead is the outcome of the reconcile's read of its release.
type storedRead struct {
	rel *hrelease.Release
	err error
}

var (
	mu      sync.Mutex
	records = map[weak.Pointer[unstructured.Unstructured]]*Record{}
)

// Of returns the record of the reconcile that obj is the object of,
// creating it on first use. It returns nil for an object that is not
// *unstructured.Unstructured, as the library's are.
func Of(obj client.Object) *Record {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil {
		return nil
	}
	key := weak.Make(u)
	mu.Lock()
	defer mu.Unlock()
	if r, ok := records[key]; ok {
		return r
	}
	r := &Record{}
	records[key] = r
	runtime.AddCleanup(u, forget, key)
	return r
}

// forget drops the record of an object that is gone.
func forget(key weak.Pointer[unstructured.Unstructured]) {
	mu.Lock()
	delete(records, key)
	mu.Unlock()
}

// live counts the records of objects not yet collected (for tests).
func live() int {
	mu.Lock()
	defer mu.Unlock()
	return len(records)
}

// Refuse records a refusal; a later one replaces it.
func (r *Record) Refuse(reason, message string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.refusal = &Refusal{Reason: reason, Message: message}
	r.mu.Unlock()
}

// Proceed drops the refusal: an action went ahead after it.
func (r *Record) Proceed() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.refusal = nil
	r.mu.Unlock()
}

// Refusal returns the refusal this reconcile ended with, if any.
func (r *Record) Refusal() (Refusal, bool) {
	if r == nil {
		return Refusal{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refusal == nil {
		return Refusal{}, false
	}
	return *r.refusal, true
}

// ReadRelease records what the reconcile's read of its release returned:
// the release, or the error (driver.ErrReleaseNotFound when there is none
// this resource owns).
func (r *Record) ReadRelease(rel *hrelease.Release, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.stored = &storedRead{rel: rel, err: err}
	r.mu.Unlock()
}

// Release returns what the reconcile's read of its release returned; read
// is false when it has not read it.
func (r *Record) Release() (rel *hrelease.Release, read bool, err error) {
	if r == nil {
		return nil, false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stored == nil {
		return nil, false, nil
	}
	return r.stored.rel, true, r.stored.err
}

// SetEvents replaces the Events waiting for the release.
func (r *Record) SetEvents(events []Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.events = events
	r.mu.Unlock()
}

// TakeEvents returns the Events waiting for the release and forgets them.
func (r *Record) TakeEvents() []Event {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	events := r.events
	r.events = nil
	return events
}

// SetValues records the values the reconcile translated from the spec,
// before the library merges them with the defaults of the kind's chart:
// a release rendered with another version of the chart merges them with
// that version's defaults instead.
// defaultedImages are the paths of the image blocks that took the
// operator's default image.
func (r *Record) SetValues(vals map[string]any, defaultedImages []string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.values, r.images = vals, defaultedImages
	r.mu.Unlock()
}

// Values returns what SetValues recorded; nil when nothing was.
func (r *Record) Values() (vals map[string]any, defaultedImages []string) {
	if r == nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.values, r.images
}

package cachefilter

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Statuses keeps, for every watched custom resource the cache holds, the
// whole status of the version the cache holds, compressed.
//
// The cache trims a custom resource's status (trimStatus): the status
// carries the release's manifest, a few KiB per resource. The library
// reads the resource at the start of every reconcile and writes its status
// back from that copy, so it read the resource from the API server: one
// request per install and per upgrade. With the status kept here, that read
// is answered by the cached resource with its status put back (the
// helmruntime's cached resource client), as long as the status kept is of
// the resourceVersion the cache holds; otherwise the read goes to the API
// server as before. Compressed, a status costs about a fifth of its JSON.
//
// A write of this process tells what the cache has not seen yet: until the
// cache holds the version written (Wrote), the resource is read from the
// API server. A reconcile this process asks for right after its own write
// (a remediation the readiness controller decided, say) reads what was
// written, not the version before it.
type Statuses struct {
	// encoder compresses for keep, which the informers' goroutines call
	// one event at a time: one compressor (about 800 KiB of state) serves
	// them all.
	encoder statusEncoder

	mu   sync.Mutex
	kept map[statusKey]keptStatus
	// awaited is the version of this process's last write of a resource,
	// until the cache holds it.
	awaited map[statusKey]string
}

type statusKey struct {
	gvk schema.GroupVersionKind
	types.NamespacedName
}

// keptStatus is the status of one version of a resource: its JSON,
// compressed; nil for a resource without status.
type keptStatus struct {
	uid             types.UID
	resourceVersion string
	status          []byte
}

// NewStatuses returns an empty store; CacheOptions fills it.
func NewStatuses() *Statuses {
	return &Statuses{kept: map[statusKey]keptStatus{}, awaited: map[statusKey]string{}}
}

// keep records u's status, before the cache trims it. A version already
// kept is not encoded again: client-go may hand the transform an object it
// already transformed (a resync), whose status is the trimmed one.
func (s *Statuses) keep(u *unstructured.Unstructured) {
	if s == nil || u.GetResourceVersion() == "" {
		return
	}
	key := keyOf(u)
	s.mu.Lock()
	k, ok := s.kept[key]
	s.mu.Unlock()
	if ok && k.uid == u.GetUID() && k.resourceVersion == u.GetResourceVersion() {
		return
	}
	k = keptStatus{uid: u.GetUID(), resourceVersion: u.GetResourceVersion()}
	if st, ok := u.Object["status"]; ok {
		encoded, err := s.encoder.encode(st)
		if err != nil {
			s.Forget(key.gvk, key.NamespacedName)
			return
		}
		k.status = encoded
	}
	s.mu.Lock()
	s.kept[key] = k
	if s.awaited[key] == k.resourceVersion {
		delete(s.awaited, key)
	}
	s.mu.Unlock()
}

// Wrote records that this process wrote version resourceVersion of a
// resource: until the cache holds it, Restore answers no read of the
// resource.
func (s *Statuses) Wrote(gvk schema.GroupVersionKind, key types.NamespacedName, resourceVersion string) {
	if s == nil || resourceVersion == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := statusKey{gvk, key}
	if s.kept[k].resourceVersion == resourceVersion {
		return // the cache got there first
	}
	s.awaited[k] = resourceVersion
}

// Settled records that a read from the API server found the version the
// cache holds: a write awaited but never seen (the watch was restarted and
// the cache listed a later version) is awaited no longer.
func (s *Statuses) Settled(gvk schema.GroupVersionKind, key types.NamespacedName, resourceVersion string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := statusKey{gvk, key}
	if s.kept[k].resourceVersion == resourceVersion {
		delete(s.awaited, k)
	}
}

// Forget drops what is kept of a resource (it was deleted).
func (s *Statuses) Forget(gvk schema.GroupVersionKind, key types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.kept, statusKey{gvk, key})
	delete(s.awaited, statusKey{gvk, key})
	s.mu.Unlock()
}

// Restore puts back into u, a resource read from the cache, the whole
// status of its version. It reports false, leaving u as it is, when the
// status of that version is not kept (the cache has moved on since, or not
// yet got to it, or the resource was never seen whole), or when the cache
// has not yet seen a write of this process.
func (s *Statuses) Restore(u *unstructured.Unstructured) bool {
	if s == nil {
		return false
	}
	key := keyOf(u)
	s.mu.Lock()
	k, ok := s.kept[key]
	_, awaited := s.awaited[key]
	s.mu.Unlock()
	if !ok || awaited || k.uid != u.GetUID() || k.resourceVersion != u.GetResourceVersion() {
		return false
	}
	if k.status == nil {
		delete(u.Object, "status")
		return true
	}
	var st map[string]any
	if err := decompressJSON(k.status, &st); err != nil {
		return false
	}
	u.Object["status"] = st
	return true
}

// keyOf is where u's status is kept.
func keyOf(u *unstructured.Unstructured) statusKey {
	return statusKey{u.GroupVersionKind(), types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}}
}

// statusEncoder compresses statuses with one compressor.
type statusEncoder struct {
	mu  sync.Mutex
	w   *flate.Writer
	buf bytes.Buffer
}

// encode returns v as compressed JSON.
func (e *statusEncoder) encode(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buf.Reset()
	if e.w == nil {
		if e.w, err = flate.NewWriter(&e.buf, flate.BestSpeed); err != nil {
			return nil, err
		}
	} else {
		e.w.Reset(&e.buf)
	}
	if _, err := e.w.Write(raw); err != nil {
		return nil, err
	}
	if err := e.w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// A decompressor holds about 40 KiB: reads reuse them.
var decompressors = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

func decompressJSON(data []byte, v any) error {
	r := decompressors.Get().(io.ReadCloser)
	defer decompressors.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(data), nil); err != nil {
		return err
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	// Integers come back as int64, as in an object read from the API
	// server.
	return utiljson.Unmarshal(raw, v)
}

package cachefilter

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The cache holds tens of thousands of objects whose metadata repeats the
// same few strings: the keys of every map, the labels Helm and the chart
// set, the namespace, the owner's kind and API version, the release name
// on each of a release's objects. A decoder allocates each of them anew
// for every object and every event, and at N=10,000 those copies were a
// tenth of the runtime's live heap; the collector marks each of them on
// every cycle (docs/benchmarks.md, "The cache's strings shared").
//
// compactObject replaces them with one shared copy from a table of the
// strings seen recently. The table is bounded: when it is full it starts
// again empty, so strings seen once (a release name among thousands) cost
// nothing for long, and those every object repeats are back in it after
// the next few objects. Values that are unique to an object (its uid and
// resourceVersion) are not looked up at all.

// Bounds of the table: strings longer than internMaxLen are kept as
// decoded (a message, a digest: rarely repeated, and long strings are
// few), and the table holds at most internMaxEntries.
const (
	internMaxLen     = 128
	internMaxEntries = 1 << 14
)

// interner is a bounded table of shared strings, safe for the informers'
// goroutines to use at once.
type interner struct {
	mu sync.Mutex
	m  map[string]string
}

// cacheStrings is the table the cache's transform shares.
var cacheStrings = &interner{}

// str returns the table's copy of s, adding s when it is missing.
func (t *interner) str(s string) string {
	if len(s) > internMaxLen || s == "" {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m[s]; ok {
		return v
	}
	if t.m == nil || len(t.m) >= internMaxEntries {
		t.m = make(map[string]string, 1024)
	}
	t.m[s] = s
	return s
}

// uniqueFields are the metadata fields whose values no two objects share.
var uniqueFields = map[string]bool{"uid": true, "resourceVersion": true, "creationTimestamp": true}

// compactJSON returns v (a value of an unstructured object) rebuilt with
// the table's strings. key is the field v is the value of.
func (t *interner) compactJSON(key string, v any) any {
	switch x := v.(type) {
	case string:
		if uniqueFields[key] {
			return x
		}
		return t.str(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[t.str(k)] = t.compactJSON(k, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = t.compactJSON("", e)
		}
		return out
	}
	return v
}

// compactStrings returns m with the table's strings, or m itself when
// empty.
func (t *interner) compactStrings(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[t.str(k)] = t.str(v)
	}
	return out
}

// compactObject shares the strings of obj's metadata (and, for an
// unstructured object, of all of it) through the table. Idempotent: an
// object compacted before comes out equal.
func (t *interner) compactObject(obj any) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object = t.compactJSON("", u.Object).(map[string]any)
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetNamespace(t.str(m.GetNamespace()))
	m.SetLabels(t.compactStrings(m.GetLabels()))
	m.SetAnnotations(t.compactStrings(m.GetAnnotations()))
	refs := m.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind, refs[i].Name = t.str(refs[i].APIVersion), t.str(refs[i].Kind), t.str(refs[i].Name)
	}
	if len(refs) > 0 {
		m.SetOwnerReferences(refs)
	}
	fin := m.GetFinalizers()
	for i := range fin {
		fin[i] = t.str(fin[i])
	}
}

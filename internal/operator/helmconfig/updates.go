// Updates: what Helm's updates of one kind's release objects (an
// upgrade's, a rollback's) are doing, kept in one registry, which two
// parties consult.
//
// Their watch events. The writes Helm makes in an upgrade come back as
// watch events, and the library's dependent watches would reconcile the
// owner once more for each, to find nothing to do. An update registers the
// objects it may write before it writes them (Begin) and records the
// resourceVersion of each write when it is done (the function Begin
// returns). A watch asks Check for every update event: an event of an
// object being written waits until the write is recorded, then it is
// dropped if it reports exactly the recorded version, and passed on
// otherwise. Everything else passes at once: an edit by anyone else has a
// version the runtime did not write.
//
// Their reads. Helm's update reads each object up to three times in a
// row: whether it exists, its live state for the patch, and, when the
// patch is empty, again to refresh what it holds. The three reads are
// moments apart, and nothing Helm does with them needs more than one: the
// patch carries no resourceVersion, so a read from a moment before is as
// good as one from now. While an update runs, a read of one of its objects
// is answered from the object's last read in that update, until a write
// of the object; everything else goes to the API server (Transport).
//
// Their reads of objects as the runtime left them. An upgrade's read of
// an object's live state feeds Helm's three-way patch, and most objects of
// an upgrade are as the runtime's own last write left them. For each
// object, Updates keeps the content digest (manifest.ContentDigest) of
// the manifest object that write sent and of the object the API server
// returned (Left). When the update's original manifest object is the one
// sent, and the cache holds the object with the digest returned, the live
// object is that write's result: every field the manifest sets has the
// manifest's value (the patch that wrote it set every field that differed),
// and what else it holds (the server's defaults, others' fields) Helm's
// patch leaves alone either way. The update's first read of it is then
// answered, to the operator itself once it has read that collection
// (below), with the original manifest object under the cached metadata
// (UpdateTarget.Current): Helm's patch from it changes exactly the fields the new manifest changes, and an
// object the new manifest does not change is not patched. A cache that
// lags a write by someone else is a read a moment older, which Helm's
// patch (no resourceVersion) allows anyway; any other object, one edited
// since, one the runtime has not written since it started, is read from
// the API server, and so is every object read as a release's
// ServiceAccount, whose rights may have been taken away since its last
// read: the API server says so, and the upgrade is refused, as Helm's is.
//
// Their existence checks. Before an install creates a release's objects,
// and before an upgrade creates the ones its new revision adds, Helm reads
// each to find out whether it exists already (and then whether the release
// may adopt it). When the runtime's cache watches the object's kind and
// holds no such object, the answer is "not found" without a request
// (NoteAbsent): the cache has seen every object of the kind that existed
// when it last heard from the API server. If it lags an object created
// moments ago, Helm's create of that object is refused (AlreadyExists) and
// the action fails and is retried, by which time the cache holds the object
// and the read goes to the API server: nothing is overwritten or adopted on
// the cache's word: the failed action's clean-up (which deletes the
// release's objects by name) does not delete that object (create). The answer is given only to a user (the operator, or a
// release's ServiceAccount) whose reads of that resource in that namespace
// the API server has answered before: one who may not read it is refused
// by the API server before Helm writes a record, as without the cache.

package helmconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ObjectKey names an object; the group and kind, not the version, so that a
// write through one version and a watch of another meet.
type ObjectKey struct {
	schema.GroupKind
	Namespace, Name string
}

// UpdateTarget is an object an update may write: its key, and the URL
// path its reads are sent to ("" to answer none of them from memory).
// Current, when set, is the object's live state as the runtime's last
// write left it (package comment), the answer to the update's first read
// of it.
type UpdateTarget struct {
	Key     ObjectKey
	Path    string
	Current []byte
}

// Left is what the runtime's last write of an object left: the content
// digests (manifest.ContentDigest) of the manifest object it sent and
// of the object the API server returned.
type Left struct {
	Sent, Live string
}

// recordTTL is how long a recorded write waits for its event. Events come
// within moments; a write of an object no watch of the kind sees is
// forgotten after this.
const recordTTL = 2 * time.Minute

// Updates holds the updates in flight of one kind's release objects and
// the versions they left. The zero value is ready to use; a nil Updates
// records nothing, passes every event and answers no read.
type Updates struct {
	mu        sync.Mutex
	inFlight  map[ObjectKey]*inUpdate // objects an update may be writing now
	byPath    map[string]*inUpdate    // the same objects, by URL path
	written   map[ObjectKey]record
	lastSweep time.Time
	now       func() time.Time
	// absent are the URL paths of objects the cache did not hold when a
	// manifest naming them was built, until when their next read is
	// answered "not found".
	absent map[string]time.Time
	// mayRead are the users (the Impersonate-User header, "" for the
	// operator's own rights) and collections (the URL path of a resource
	// in a namespace) of which a read reached the API server and was not
	// refused: an object the cache does not hold is answered "not found"
	// only to a user who may read its collection.
	mayRead map[string]bool
	// answered are the paths of objects whose existence check was
	// answered "not found" from the cache, and kept those of them the API
	// server then refused to create because they exist: not the release's
	// to delete (create). Each until when it counts.
	answered, kept map[string]time.Time
	// left is what the runtime's last write of each object left.
	left map[ObjectKey]Left
}

// keepTTL is how long an answered existence check, and an object kept
// from deletion, count: longer than an action and its clean-up.
const keepTTL = 2 * time.Minute

// absentTTL is how long after a manifest was built its objects' absence
// from the cache answers a read: Helm reads them right after it builds
// them, a later read goes to the API server.
const absentTTL = 10 * time.Second

// inUpdate is one object while updates that may write it run.
type inUpdate struct {
	path    string
	updates int      // updates in flight that may write the object
	parked  []parked // watch events that came meanwhile
	writes  int      // writes of the object seen, so that a read that raced one is not kept
	read    *recordedRead
	// current answers the first read (UpdateTarget.Current), nil when
	// there is none, or more than one update in flight offered one.
	current []byte
}

type parked struct {
	version string
	deliver func()
}

type record struct {
	version string
	at      time.Time
}

type recordedRead struct {
	// as is the user the read was sent as (the Impersonate-User header,
	// "" for the operator itself): a read is answered only to the same
	// user, so one release's identity never sees what another could read.
	as     string
	header http.Header
	body   []byte
}

func (u *Updates) clock() time.Time {
	if u.now != nil {
		return u.now()
	}
	return time.Now()
}

// Begin registers that an update may write targets. The returned function
// ends that: it records, for each object the update wrote, the
// resourceVersion the write left (written), and settles the events parked
// meanwhile. It must be called exactly once, also when the update failed
// (with what it did write).
func (u *Updates) Begin(targets []UpdateTarget) (end func(written map[ObjectKey]string)) {
	if u == nil {
		return func(map[ObjectKey]string) {}
	}
	u.mu.Lock()
	if u.inFlight == nil {
		u.inFlight, u.byPath = map[ObjectKey]*inUpdate{}, map[string]*inUpdate{}
	}
	for _, t := range targets {
		o := u.inFlight[t.Key]
		if o == nil {
			o = &inUpdate{path: t.Path, current: t.Current}
			u.inFlight[t.Key] = o
			if t.Path != "" {
				u.byPath[t.Path] = o
			}
		} else {
			o.current = nil // two updates: neither knows what the other leaves
		}
		o.updates++
	}
	u.mu.Unlock()
	var once sync.Once
	return func(written map[ObjectKey]string) {
		once.Do(func() { u.end(targets, written) })
	}
}

func (u *Updates) end(targets []UpdateTarget, written map[ObjectKey]string) {
	var deliver []func()
	u.mu.Lock()
	now := u.clock()
	if u.written == nil {
		u.written = map[ObjectKey]record{}
	}
	if now.Sub(u.lastSweep) > recordTTL/4 {
		for k, rec := range u.written {
			if now.Sub(rec.at) > recordTTL {
				delete(u.written, k)
			}
		}
		u.lastSweep = now
	}
	for k, v := range written {
		if v != "" {
			u.written[k] = record{version: v, at: now}
		}
	}
	for _, t := range targets {
		o := u.inFlight[t.Key]
		if o == nil {
			continue
		}
		if o.updates--; o.updates > 0 {
			continue
		}
		delete(u.inFlight, t.Key)
		if o.path != "" {
			delete(u.byPath, o.path)
		}
		for _, p := range o.parked {
			if !u.takeLocked(t.Key, p.version) {
				deliver = append(deliver, p.deliver)
			}
		}
	}
	u.mu.Unlock()
	for _, d := range deliver {
		d()
	}
}

// takeLocked reports whether version is the recorded write of k, and
// forgets the record if so.
func (u *Updates) takeLocked(k ObjectKey, version string) bool {
	rec, ok := u.written[k]
	if !ok || rec.version != version || u.clock().Sub(rec.at) > recordTTL {
		return false
	}
	delete(u.written, k)
	return true
}

// Check decides about an update event of object k at version: deliver is
// called, now or when the updates in flight of the object end, unless the
// event reports a write the runtime recorded.
func (u *Updates) Check(k ObjectKey, version string, deliver func()) {
	if u == nil {
		deliver()
		return
	}
	u.mu.Lock()
	if o := u.inFlight[k]; o != nil {
		o.parked = append(o.parked, parked{version: version, deliver: deliver})
		u.mu.Unlock()
		return
	}
	own := u.takeLocked(k, version)
	u.mu.Unlock()
	if !own {
		deliver()
	}
}

// SetLeft records what the runtime's write of object k left.
func (u *Updates) SetLeft(k ObjectKey, l Left) {
	if u == nil {
		return
	}
	u.mu.Lock()
	if u.left == nil {
		u.left = map[ObjectKey]Left{}
	}
	u.left[k] = l
	u.mu.Unlock()
}

// LeftBy returns what the runtime's last write of object k left, if it
// has written it since it started.
func (u *Updates) LeftBy(k ObjectKey) (Left, bool) {
	if u == nil {
		return Left{}, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	l, ok := u.left[k]
	return l, ok
}

// ForgetLeft forgets what the runtime's writes of objects keys left: they
// were deleted, or a write's result is not known.
func (u *Updates) ForgetLeft(keys ...ObjectKey) {
	if u == nil {
		return
	}
	u.mu.Lock()
	for _, k := range keys {
		delete(u.left, k)
	}
	u.mu.Unlock()
}

// NoteAbsent notes that the cache holds none of the objects at paths: the
// next plain read of each within absentTTL is answered "not found".
func (u *Updates) NoteAbsent(paths []string) {
	if u == nil || len(paths) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock()
	if u.absent == nil {
		u.absent = map[string]time.Time{}
	}
	for p, until := range u.absent {
		if now.After(until) {
			delete(u.absent, p)
		}
	}
	for _, p := range paths {
		u.absent[p] = now.Add(absentTTL)
	}
}

// takeAbsentLocked reports whether a read of path is answered "not
// found", and forgets the note either way once it is asked.
func (u *Updates) takeAbsentLocked(path string) bool {
	until, ok := u.absent[path]
	if !ok {
		return false
	}
	delete(u.absent, path)
	return !u.clock().After(until)
}

// notFound is the API server's answer to a read of an object that does
// not exist, for the object at path.
func notFound(req *http.Request) *http.Response {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	name, resource := parts[len(parts)-1], ""
	if len(parts) >= 2 {
		resource = parts[len(parts)-2]
	}
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
		Message: fmt.Sprintf("%s %q not found", resource, name),
		Details: &metav1.StatusDetails{Name: name, Kind: resource},
	})
	return &http.Response{
		Status: "404 Not Found", StatusCode: http.StatusNotFound,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}
}

// existenceReadsAnswered counts the existence checks answered from the
// cache (NoteAbsent), also counted in rest_client_requests_total.
var existenceReadsAnswered = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "helmruntime_existence_reads_answered_total",
	Help: "Helm's reads of whether an object exists, before creating it, answered \"not found\" from the runtime's cache without a request to the API server (counted in rest_client_requests_total all the same).",
})

// readsAnswered counts the reads Updates answered without the API server.
// client-go's rest_client_requests_total counts them as requests (it
// counts above the transport), so the requests that reached the API
// server are that counter less this one.
var readsAnswered = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "helmruntime_update_reads_answered_total",
	Help: "Reads of a release's objects within one of Helm's updates answered from the update's earlier read of the object, without a request to the API server (counted in rest_client_requests_total all the same).",
})

// currentReadsAnswered counts the reads answered with an object as the
// runtime's last write left it (UpdateTarget.Current).
var currentReadsAnswered = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "helmruntime_update_reads_as_left_total",
	Help: "Reads of a release's object within one of Helm's updates answered with the object as the runtime's last write of it left it, which the cache showed unchanged since, without a request to the API server (counted in rest_client_requests_total all the same).",
})

func init() {
	ctrlmetrics.Registry.MustRegister(readsAnswered, existenceReadsAnswered, currentReadsAnswered)
}

// objectPath is the URL path of the object info names.
func objectPath(info *resource.Info) string {
	m := info.Mapping
	p := "/apis/" + m.Resource.Group + "/" + m.Resource.Version
	if m.Resource.Group == "" {
		p = "/api/" + m.Resource.Version
	}
	if m.Scope != nil && m.Scope.Name() == meta.RESTScopeNameNamespace {
		p += "/namespaces/" + info.Namespace
	}
	return p + "/" + m.Resource.Resource + "/" + info.Name
}

// impersonateUserHeader is the header client-go's impersonation sets
// above the wrappers of a REST configuration (rest.Config.Wrap), so they
// see it.
const impersonateUserHeader = "Impersonate-User"

// Transport returns next with the reads of objects being updated answered
// from memory; it wraps a REST configuration's transports (rest.Config.Wrap).
func (u *Updates) Transport(next http.RoundTripper) http.RoundTripper {
	if u == nil {
		return next
	}
	return &updateReads{u: u, next: next}
}

type updateReads struct {
	u    *Updates
	next http.RoundTripper
}

func (t *updateReads) RoundTrip(req *http.Request) (*http.Response, error) {
	u := t.u
	switch {
	case req.Method == http.MethodPost:
		return t.create(req)
	case req.Method == http.MethodDelete:
		u.mu.Lock()
		kept := u.keptLocked(req.URL.Path)
		delete(u.absent, req.URL.Path)
		u.mu.Unlock()
		if kept {
			return notFound(req), nil
		}
		return t.roundTrip(req)
	case req.Method != http.MethodGet || req.URL.RawQuery != "":
		u.mu.Lock()
		delete(u.absent, req.URL.Path)
		u.mu.Unlock()
		return t.roundTrip(req)
	}
	// A plain read of one object. The API server authorizes a read before
	// it looks for the object: its 200 or 404 says that this user may read
	// the objects of that resource in that namespace. Only then is an
	// object the cache does not hold answered "not found" for the user; a
	// user who may not read them is refused by the API server, as before,
	// before Helm writes anything.
	scope := req.Header.Get(impersonateUserHeader) + "\x00" + path.Dir(req.URL.Path)
	u.mu.Lock()
	if absent := u.takeAbsentLocked(req.URL.Path); absent && u.mayRead[scope] {
		if u.answered == nil {
			u.answered = map[string]time.Time{}
		}
		u.answered[req.URL.Path] = u.clock().Add(keepTTL)
		u.mu.Unlock()
		existenceReadsAnswered.Inc()
		return notFound(req), nil
	}
	u.mu.Unlock()
	resp, err := t.read(req, scope)
	if err == nil && (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound) {
		u.mu.Lock()
		if u.mayRead == nil {
			u.mayRead = map[string]bool{}
		}
		u.mayRead[scope] = true
		u.mu.Unlock()
	}
	return resp, err
}

// create sends a create. When the API server refuses it because the
// object exists, and the cache had answered that it did not (the cache
// lagged an object someone created moments before), the object is kept:
// the failed action's clean-up (the uninstall of a failed install, the
// rollback of a failed upgrade) deletes the release's objects by name, and
// its delete of this one, which the release never owned, is answered "not
// found" without a request for keepTTL.
func (t *updateReads) create(req *http.Request) (*http.Response, error) {
	t.u.mu.Lock()
	delete(t.u.absent, req.URL.Path)
	t.u.mu.Unlock()
	resp, err := t.roundTrip(req)
	if err != nil || resp.StatusCode != http.StatusConflict {
		return resp, err
	}
	body, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	st := metav1.Status{}
	if json.Unmarshal(body, &st) != nil || st.Reason != metav1.StatusReasonAlreadyExists || st.Details == nil || st.Details.Name == "" {
		return resp, nil
	}
	objPath := strings.TrimSuffix(req.URL.Path, "/") + "/" + st.Details.Name
	u := t.u
	u.mu.Lock()
	if until, ok := u.answered[objPath]; ok && !u.clock().After(until) {
		if u.kept == nil {
			u.kept = map[string]time.Time{}
		}
		u.kept[objPath] = u.clock().Add(keepTTL)
	}
	u.mu.Unlock()
	return resp, nil
}

// keptLocked reports whether the object at path is kept from deletion
// (create), forgetting expired notes.
func (u *Updates) keptLocked(path string) bool {
	now := u.clock()
	for p, until := range u.answered {
		if now.After(until) {
			delete(u.answered, p)
		}
	}
	until, ok := u.kept[path]
	if !ok {
		return false
	}
	if now.After(until) {
		delete(u.kept, path)
		return false
	}
	return true
}

// roundTrip sends a request that is not a plain read (see read).
func (t *updateReads) roundTrip(req *http.Request) (*http.Response, error) {
	u := t.u
	u.mu.Lock()
	if o := u.byPath[req.URL.Path]; o != nil && req.Method != http.MethodGet {
		o.read = nil // a write (whatever its query): later reads go to the server
		o.current = nil
		o.writes++
	}
	u.mu.Unlock()
	return t.next.RoundTrip(req)
}

// read sends, or answers, a plain read of one object by a user in scope
// (RoundTrip): an object being updated is answered with the update's
// earlier read of it, or, to the operator itself (no impersonation) once
// the API server has let it read that collection, with its state as the
// runtime left it (UpdateTarget.Current).
func (t *updateReads) read(req *http.Request, scope string) (*http.Response, error) {
	u := t.u
	u.mu.Lock()
	o := u.byPath[req.URL.Path]
	if o == nil {
		u.mu.Unlock()
		return t.next.RoundTrip(req)
	}
	as := req.Header.Get(impersonateUserHeader)
	if r := o.read; r != nil && r.as == as {
		u.mu.Unlock()
		readsAnswered.Inc()
		return r.response(req), nil
	}
	if o.current != nil && as == "" && u.mayRead[scope] {
		r := &recordedRead{as: as, header: http.Header{"Content-Type": []string{"application/json"}}, body: o.current}
		o.read, o.current = r, nil
		u.mu.Unlock()
		currentReadsAnswered.Inc()
		return r.response(req), nil
	}
	writes := o.writes
	u.mu.Unlock()
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	if cur := u.byPath[req.URL.Path]; cur == o && o.writes == writes {
		o.read = &recordedRead{as: as, header: resp.Header.Clone(), body: body}
		o.current = nil
	}
	u.mu.Unlock()
	return resp, nil
}

// response is the recorded read, as the answer to req.
func (r *recordedRead) response(req *http.Request) *http.Response {
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: r.header.Clone(), Body: io.NopCloser(bytes.NewReader(r.body)),
		ContentLength: int64(len(r.body)), Request: req,
	}
}

// readBody reads resp's body and puts it back, for the caller to pass on.
func readBody(resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

package helmconfig

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/resource"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// readsAnswered counts the reads updateReads answered without the API
// server. client-go's rest_client_requests_total counts them as requests
// (it counts above the transport), so the requests that reached the API
// server are that counter less this one.
var readsAnswered = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "helmruntime_update_reads_answered_total",
	Help: "Reads of a release's objects within one of Helm's updates answered from the update's earlier read of the object, without a request to the API server (counted in rest_client_requests_total all the same).",
})

func init() { ctrlmetrics.Registry.MustRegister(readsAnswered) }

// updateReads answers the repeated reads of an object within one of
// Helm's updates from the first.
//
// Helm's update of a release's objects reads each object up to three times
// in a row: whether it exists, its live state for the patch, and, when the
// patch is empty, again to refresh what it holds. The three reads are
// moments apart, and nothing Helm does with them needs more than one:
// the patch carries no resourceVersion, so a read from a moment before is
// as good as one from now. While an update runs (begin, end), a read of one
// of its objects is answered from the object's last read in that update,
// until a write of the object; everything else goes to the API server.
type updateReads struct {
	next http.RoundTripper

	mu      sync.Mutex
	objects map[string]*objectReads // by URL path
}

type objectReads struct {
	updates int // updates in flight that cover the object
	writes  int // writes of the object seen, so that a read that raced one is not kept
	read    *recordedRead
}

type recordedRead struct {
	// as is the user the read was sent as (the Impersonate-User header,
	// "" for the operator itself): a read is answered only to the same
	// user, so one release's identity never sees what another could read.
	as     string
	header http.Header
	body   []byte
}

func (u *updateReads) wrap(rt http.RoundTripper) http.RoundTripper {
	u.next = rt
	return u
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

// begin starts an update of the objects at paths; end ends it.
func (u *updateReads) begin(paths []string) (end func()) {
	u.mu.Lock()
	if u.objects == nil {
		u.objects = map[string]*objectReads{}
	}
	for _, p := range paths {
		o := u.objects[p]
		if o == nil {
			o = &objectReads{}
			u.objects[p] = o
		}
		o.updates++
	}
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		for _, p := range paths {
			if o := u.objects[p]; o != nil {
				if o.updates--; o.updates <= 0 {
					delete(u.objects, p)
				}
			}
		}
		u.mu.Unlock()
	}
}

// impersonateUserHeader is the header client-go's impersonation sets
// below the wrappers of a REST configuration (rest.Config.Wrap).
const impersonateUserHeader = "Impersonate-User"

func (u *updateReads) RoundTrip(req *http.Request) (*http.Response, error) {
	u.mu.Lock()
	o := u.objects[req.URL.Path]
	if o == nil {
		u.mu.Unlock()
		return u.next.RoundTrip(req)
	}
	if req.Method != http.MethodGet {
		o.read = nil // a write (whatever its query): later reads go to the server
		o.writes++
		u.mu.Unlock()
		return u.next.RoundTrip(req)
	}
	if req.URL.RawQuery != "" { // a read with options: not Helm's plain read
		u.mu.Unlock()
		return u.next.RoundTrip(req)
	}
	as := req.Header.Get(impersonateUserHeader)
	if r := o.read; r != nil && r.as == as {
		u.mu.Unlock()
		readsAnswered.Inc()
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: r.header.Clone(), Body: io.NopCloser(bytes.NewReader(r.body)),
			ContentLength: int64(len(r.body)), Request: req,
		}, nil
	}
	writes := o.writes
	u.mu.Unlock()
	resp, err := u.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	u.mu.Lock()
	if cur := u.objects[req.URL.Path]; cur == o && o.writes == writes {
		o.read = &recordedRead{as: as, header: resp.Header.Clone(), body: body}
	}
	u.mu.Unlock()
	return resp, nil
}

package helmconfig

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
)

var web = ObjectKey{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Namespace: "shop", Name: "web"}

// through is a client whose requests pass updates' transport to srv.
type through struct {
	t   *testing.T
	srv *httptest.Server
	c   *http.Client
}

func newThrough(t *testing.T, updates *Updates, srv *httptest.Server) through {
	return through{t: t, srv: srv, c: &http.Client{Transport: updates.Transport(http.DefaultTransport)}}
}

// send sends a request with an empty body, as the user as ("" for none),
// and returns the answer's status code and body.
func (th through) send(method, path, as string) (int, string) {
	th.t.Helper()
	req, _ := http.NewRequest(method, th.srv.URL+path, strings.NewReader(""))
	if as != "" {
		req.Header.Set(impersonateUserHeader, as)
	}
	resp, err := th.c.Do(req)
	if err != nil {
		th.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// body sends a request as send does and returns the answer's body.
func (th through) body(method, path, as string) string {
	th.t.Helper()
	_, b := th.send(method, path, as)
	return b
}

// check returns whether Check delivered the event by the time it returned.
func check(r *Updates, k ObjectKey, version string) (delivered *bool) {
	d := false
	r.Check(k, version, func() { d = true })
	return &d
}

func TestRecordedWriteIsDroppedOnce(t *testing.T) {
	r := &Updates{}
	r.Begin([]UpdateTarget{{Key: web}})(map[ObjectKey]string{web: "5"})
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
	r := &Updates{}
	endA := r.Begin([]UpdateTarget{{Key: web}})
	endB := r.Begin([]UpdateTarget{{Key: web}}) // two actions that may write the object
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
	r := &Updates{now: func() time.Time { return now }}
	r.Begin([]UpdateTarget{{Key: web}})(map[ObjectKey]string{web: "5"})
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
	var r *Updates
	r.Begin([]UpdateTarget{{Key: web}})(map[ObjectKey]string{web: "5"})
	if !*check(r, web, "5") {
		t.Error("a nil registry dropped an event")
	}
}

func TestObjectPath(t *testing.T) {
	for _, c := range []struct {
		info *resource.Info
		want string
	}{
		{&resource.Info{Namespace: "shop", Name: "webPath", Mapping: &meta.RESTMapping{
			Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Scope: meta.RESTScopeNamespace,
		}}, "/apis/apps/v1/namespaces/shop/deployments/webPath"},
		{&resource.Info{Namespace: "shop", Name: "webPath", Mapping: &meta.RESTMapping{
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Scope: meta.RESTScopeNamespace,
		}}, "/api/v1/namespaces/shop/configmaps/webPath"},
		{&resource.Info{Name: "team-a", Mapping: &meta.RESTMapping{
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Scope: meta.RESTScopeRoot,
		}}, "/api/v1/namespaces/team-a"},
	} {
		if got := objectPath(c.info); got != c.want {
			t.Errorf("objectPath = %q, want %q", got, c.want)
		}
	}
}

func TestUpdatesReadEachObjectOncePerUpdate(t *testing.T) {
	var gets, version atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		} else {
			version.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"v":`+string(rune('0'+version.Load()))+`}`)
	}))
	defer srv.Close()
	updates := &Updates{}
	th := newThrough(t, updates, srv)
	do := func(method, path string) string { t.Helper(); return th.body(method, path, "") }
	const webPath = "/apis/apps/v1/namespaces/shop/deployments/webPath"

	do(http.MethodGet, webPath)
	do(http.MethodGet, webPath)
	if gets.Load() != 2 {
		t.Fatalf("outside an update: %d reads reached the server, want 2", gets.Load())
	}

	end := updates.Begin([]UpdateTarget{{Key: web, Path: webPath}})
	first, second := do(http.MethodGet, webPath), do(http.MethodGet, webPath)
	if gets.Load() != 3 || first != second {
		t.Errorf("in an update: %d reads reached the server (want 3), answers %q and %q", gets.Load(), first, second)
	}
	do(http.MethodGet, "/api/v1/namespaces/shop/configmaps/other")
	if gets.Load() != 4 {
		t.Errorf("a read of an object outside the update was answered from memory")
	}
	do(http.MethodPatch, webPath+"?fieldManager=helm")
	if after := do(http.MethodGet, webPath); gets.Load() != 5 || after == first {
		t.Errorf("after a write: %d reads reached the server (want 5), answer %q", gets.Load(), after)
	}
	end(nil)
	do(http.MethodGet, webPath)
	if gets.Load() != 6 {
		t.Errorf("after the update: %d reads reached the server, want 6", gets.Load())
	}
	if len(updates.inFlight) != 0 || len(updates.byPath) != 0 {
		t.Errorf("objects held after the update: %v %v", updates.inFlight, updates.byPath)
	}
}

// TestUpdatesAnswerTheSameUserOnly: a read sent as one user (a
// release's ServiceAccount) is not answered to another from memory.
func TestUpdatesAnswerTheSameUserOnly(t *testing.T) {
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	updates := &Updates{}
	th := newThrough(t, updates, srv)
	const webPath = "/apis/apps/v1/namespaces/shop/deployments/webPath"
	get := func(as string) { t.Helper(); th.send(http.MethodGet, webPath, as) }
	end := updates.Begin([]UpdateTarget{{Key: web, Path: webPath}})
	defer end(nil)
	get("system:serviceaccount:shop:deployer")
	get("system:serviceaccount:shop:deployer")
	if gets.Load() != 1 {
		t.Fatalf("the same user: %d reads reached the server, want 1", gets.Load())
	}
	get("")
	get("system:serviceaccount:shop:other")
	if gets.Load() != 3 {
		t.Errorf("other users: %d reads reached the server, want 3", gets.Load())
	}
}

// TestAbsentObjectsAreReadAsNotFoundOnce: the first plain read of an
// object the cache did not hold when its manifest was built is answered
// "not found" without a request, as the API server answers; any later
// read, a read after a write, and a read after absentTTL reach the server.
func TestAbsentObjectsAreReadAsNotFoundOnce(t *testing.T) {
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	updates := &Updates{now: func() time.Time { return now }}
	th := newThrough(t, updates, srv)
	do := func(method, path string) { t.Helper(); th.send(method, path, "") }
	const webPath = "/apis/apps/v1/namespaces/shop/deployments/web"
	const dbPath = "/apis/apps/v1/namespaces/shop/statefulsets/db"

	// Nothing is answered to a user before the API server answered one of
	// its reads of the same resource in the same namespace.
	updates.NoteAbsent([]string{webPath})
	do(http.MethodGet, webPath)
	if gets.Load() != 1 {
		t.Fatalf("a read was answered before the user was seen to read deployments")
	}
	do(http.MethodGet, "/apis/apps/v1/namespaces/shop/statefulsets/other")
	gets.Store(0)

	updates.NoteAbsent([]string{webPath, dbPath})
	th.send(http.MethodGet, webPath, "system:serviceaccount:shop:deployer")
	if gets.Load() != 1 {
		t.Fatalf("a read as another user was answered from the note")
	}
	gets.Store(0)
	updates.NoteAbsent([]string{webPath})
	code, b := th.send(http.MethodGet, webPath, "")
	if code != http.StatusNotFound || gets.Load() != 0 {
		t.Fatalf("first read: status %d, %d reads reached the server; want 404 and none", code, gets.Load())
	}
	err := apierrors.FromObject(decodeStatus(t, []byte(b)))
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `deployments "web" not found`) {
		t.Errorf("the answer reads as %v, want the API server's not found", err)
	}
	do(http.MethodGet, webPath)
	if gets.Load() != 1 {
		t.Errorf("a second read was answered from the note")
	}

	do(http.MethodPost, dbPath)
	do(http.MethodGet, dbPath)
	if gets.Load() != 2 {
		t.Errorf("a read after a write was answered from the note")
	}

	updates.NoteAbsent([]string{webPath})
	now = now.Add(absentTTL + time.Second)
	do(http.MethodGet, webPath)
	if gets.Load() != 3 {
		t.Errorf("a read after absentTTL was answered from the note")
	}
}

func decodeStatus(t *testing.T, b []byte) *metav1.Status {
	t.Helper()
	st := &metav1.Status{}
	if err := json.Unmarshal(b, st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAnObjectTheCacheMissedIsNotDeleted: when the cache said an object
// did not exist and the API server then refuses its create because it
// does, the failed action's clean-up does not delete it; other deletes
// reach the API server.
func TestAnObjectTheCacheMissedIsNotDeleted(t *testing.T) {
	var deletes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case http.MethodDelete:
			deletes.Add(1)
			_, _ = io.WriteString(w, `{}`)
		case http.MethodPost:
			w.WriteHeader(http.StatusConflict)
			b, _ := json.Marshal(apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, "taken").ErrStatus)
			_, _ = w.Write(b)
		default:
			_, _ = io.WriteString(w, `{}`)
		}
	}))
	defer srv.Close()
	updates := &Updates{}
	th := newThrough(t, updates, srv)
	do := func(method, path string) int { t.Helper(); code, _ := th.send(method, path, ""); return code }
	const collection = "/api/v1/namespaces/shop/configmaps"
	do(http.MethodGet, collection+"/seen") // the operator may read ConfigMaps there

	updates.NoteAbsent([]string{collection + "/taken"})
	if code := do(http.MethodGet, collection+"/taken"); code != http.StatusNotFound {
		t.Fatalf("existence check: %d, want 404 from the cache", code)
	}
	if code := do(http.MethodPost, collection); code != http.StatusConflict {
		t.Fatalf("create: %d, want the API server's 409", code)
	}
	if code := do(http.MethodDelete, collection+"/taken"); code != http.StatusNotFound || deletes.Load() != 0 {
		t.Errorf("the clean-up's delete: %d, %d deletes reached the server; want 404 and none", code, deletes.Load())
	}
	do(http.MethodDelete, collection+"/other")
	if deletes.Load() != 1 {
		t.Errorf("a delete of another object did not reach the server")
	}
}

// TestUpdatesAnswerTheFirstReadAsLeft: an update's first read of an object
// it was given as the runtime left it (UpdateTarget.Current) is answered
// with that, to the operator once the API server has let it read the
// collection, and later reads with the same answer until a write; a user
// not seen to read there, a release's ServiceAccount, an object not
// given, and a read after a write reach the server.
func TestUpdatesAnswerTheFirstReadAsLeft(t *testing.T) {
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"from":"server"}`)
	}))
	defer srv.Close()
	updates := &Updates{}
	do := newThrough(t, updates, srv).body
	const (
		webPath   = "/apis/apps/v1/namespaces/shop/deployments/web"
		apiPath   = "/apis/apps/v1/namespaces/shop/deployments/api"
		left      = `{"from":"left"}`
		other     = "system:serviceaccount:shop:other"
		apiServer = `{"from":"server"}`
	)
	api := ObjectKey{GroupKind: web.GroupKind, Namespace: "shop", Name: "api"}

	end := updates.Begin([]UpdateTarget{{Key: web, Path: webPath, Current: []byte(left)}})
	if got := do(http.MethodGet, webPath, ""); got != apiServer || gets.Load() != 1 {
		t.Fatalf("before the user was seen to read deployments: answer %s, %d reads reached the server", got, gets.Load())
	}
	end(nil)

	do(http.MethodGet, apiPath, "") // the operator may read deployments in shop
	gets.Store(0)
	end = updates.Begin([]UpdateTarget{{Key: web, Path: webPath, Current: []byte(left)}, {Key: api, Path: apiPath}})
	if first, second := do(http.MethodGet, webPath, ""), do(http.MethodGet, webPath, ""); first != left || second != left || gets.Load() != 0 {
		t.Errorf("reads of an object as left: answers %s and %s, %d reads reached the server; want it answered twice, none", first, second, gets.Load())
	}
	if got := do(http.MethodGet, apiPath, ""); got != apiServer || gets.Load() != 1 {
		t.Errorf("an object without its state as left was answered %s", got)
	}
	do(http.MethodPatch, webPath, "")
	if got := do(http.MethodGet, webPath, ""); got != apiServer || gets.Load() != 2 {
		t.Errorf("a read after a write was answered %s", got)
	}
	end(nil)

	end = updates.Begin([]UpdateTarget{{Key: web, Path: webPath, Current: []byte(left)}})
	if got := do(http.MethodGet, webPath, other); got != apiServer || gets.Load() != 3 {
		t.Errorf("a user not seen to read deployments was answered %s", got)
	}
	end(nil)

	// A release's ServiceAccount, even one seen to read deployments, is
	// read for from the API server: its rights may have been taken away.
	end = updates.Begin([]UpdateTarget{{Key: web, Path: webPath, Current: []byte(left)}})
	if got := do(http.MethodGet, webPath, other); got != apiServer || gets.Load() != 4 {
		t.Errorf("a release's ServiceAccount was answered %s", got)
	}
	end(nil)
	gets.Store(3)

	// Two updates of one object in flight: neither's state as left holds.
	end1 := updates.Begin([]UpdateTarget{{Key: web, Path: webPath, Current: []byte(left)}})
	end2 := updates.Begin([]UpdateTarget{{Key: web, Path: webPath, Current: []byte(left)}})
	if got := do(http.MethodGet, webPath, ""); got != apiServer || gets.Load() != 4 {
		t.Errorf("with two updates in flight the read was answered %s", got)
	}
	end1(nil)
	end2(nil)
}

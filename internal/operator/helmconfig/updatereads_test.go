package helmconfig

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
)

func TestObjectPath(t *testing.T) {
	for _, c := range []struct {
		info *resource.Info
		want string
	}{
		{&resource.Info{Namespace: "shop", Name: "web", Mapping: &meta.RESTMapping{
			Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Scope: meta.RESTScopeNamespace,
		}}, "/apis/apps/v1/namespaces/shop/deployments/web"},
		{&resource.Info{Namespace: "shop", Name: "web", Mapping: &meta.RESTMapping{
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Scope: meta.RESTScopeNamespace,
		}}, "/api/v1/namespaces/shop/configmaps/web"},
		{&resource.Info{Name: "team-a", Mapping: &meta.RESTMapping{
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Scope: meta.RESTScopeRoot,
		}}, "/api/v1/namespaces/team-a"},
	} {
		if got := objectPath(c.info); got != c.want {
			t.Errorf("objectPath = %q, want %q", got, c.want)
		}
	}
}

func TestUpdateReadsReadEachObjectOncePerUpdate(t *testing.T) {
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
	reads := &updateReads{}
	client := &http.Client{Transport: reads.wrap(http.DefaultTransport)}
	do := func(method, path string) string {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(""))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	const web = "/apis/apps/v1/namespaces/shop/deployments/web"

	do(http.MethodGet, web)
	do(http.MethodGet, web)
	if gets.Load() != 2 {
		t.Fatalf("outside an update: %d reads reached the server, want 2", gets.Load())
	}

	end := reads.begin([]string{web})
	first, second := do(http.MethodGet, web), do(http.MethodGet, web)
	if gets.Load() != 3 || first != second {
		t.Errorf("in an update: %d reads reached the server (want 3), answers %q and %q", gets.Load(), first, second)
	}
	do(http.MethodGet, "/api/v1/namespaces/shop/configmaps/other")
	if gets.Load() != 4 {
		t.Errorf("a read of an object outside the update was answered from memory")
	}
	do(http.MethodPatch, web+"?fieldManager=helm")
	if after := do(http.MethodGet, web); gets.Load() != 5 || after == first {
		t.Errorf("after a write: %d reads reached the server (want 5), answer %q", gets.Load(), after)
	}
	end()
	do(http.MethodGet, web)
	if gets.Load() != 6 {
		t.Errorf("after the update: %d reads reached the server, want 6", gets.Load())
	}
	if len(reads.objects) != 0 {
		t.Errorf("objects held after the update: %v", reads.objects)
	}
}

// TestUpdateReadsAnswerTheSameUserOnly: a read sent as one user (a
// release's ServiceAccount) is not answered to another from memory.
func TestUpdateReadsAnswerTheSameUserOnly(t *testing.T) {
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	reads := &updateReads{}
	client := &http.Client{Transport: reads.wrap(http.DefaultTransport)}
	const web = "/apis/apps/v1/namespaces/shop/deployments/web"
	get := func(as string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+web, nil)
		if as != "" {
			req.Header.Set(impersonateUserHeader, as)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	end := reads.begin([]string{web})
	defer end()
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

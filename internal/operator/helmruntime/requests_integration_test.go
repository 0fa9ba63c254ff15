package helmruntime

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

// requestLog records the requests the suite's runtime sends to the API
// server, by the namespace in their path, so that a test of its own
// namespace can tell what one action cost: every request of a reconcile
// (the resource, its status, the release's records, the chart's objects,
// Events) names the resource's namespace, while watches and discovery
// are cluster-wide and not recorded.
type requestLog struct {
	next http.RoundTripper

	mu   sync.Mutex
	byNS map[string][]string // "VERB resource"
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	l.next = rt
	return l
}

func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	if ns, what, ok := describeRequest(req); ok {
		l.mu.Lock()
		if l.byNS == nil {
			l.byNS = map[string][]string{}
		}
		l.byNS[ns] = append(l.byNS[ns], what)
		l.mu.Unlock()
	}
	return l.next.RoundTrip(req)
}

// since returns the requests recorded for ns after the first from.
func (l *requestLog) since(ns string, from int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.byNS[ns][from:])
}

func (l *requestLog) count(ns string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byNS[ns])
}

// describeRequest names a namespaced request as "VERB resource" (list and
// watch told apart from get, a subresource after a slash), with its
// namespace.
func describeRequest(req *http.Request) (ns, what string, ok bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	i := slices.Index(parts, "namespaces")
	if i < 0 || i+2 >= len(parts) { // cluster-scoped, or a namespace itself
		return "", "", false
	}
	ns, rest := parts[i+1], parts[i+2:]
	verb := map[string]string{
		http.MethodGet: "get", http.MethodPost: "create", http.MethodPut: "update",
		http.MethodPatch: "patch", http.MethodDelete: "delete",
	}[req.Method]
	resource := rest[0]
	switch {
	case len(rest) == 1 && verb == "get" && req.URL.Query().Get("watch") == "true":
		verb = "watch"
	case len(rest) == 1 && verb == "get":
		verb = "list"
	case len(rest) == 3:
		resource += "/" + rest[2]
	}
	return ns, verb + " " + resource, true
}

// itemise counts requests by kind, most frequent first.
func itemise(requests []string) string {
	n := map[string]int{}
	for _, r := range requests {
		n[r]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if n[a] != n[b] {
			return n[b] - n[a]
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %3d  %s\n", n[k], k)
	}
	fmt.Fprintf(&b, "  %3d  in all", len(requests))
	return b.String()
}

// What an install and an upgrade of a Widget may cost at most (see
// TestRequestsPerAction).
const (
	maxRequestsPerInstall = 7
	maxRequestsPerUpgrade = 6
)

// TestRequestsPerAction counts the requests the runtime sends to the API
// server for one install and for one upgrade of a Widget (a ConfigMap and
// a Deployment), until the resource has settled, and itemises them in the
// test's log (go test -v -run TestRequestsPerAction). The bounds are what
// the runtime needs today: a change that adds a request to either action
// fails here, and one that saves requests lowers them.
func TestRequestsPerAction(t *testing.T) {
	k8s := requireEnv(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	// Not the first release of the kind in the namespace: from the first
	// on, the runtime watches the kinds of objects its chart renders and
	// has seen that it may read them there, and answers Helm's check that
	// an object to create does not exist yet from its cache.
	warm := helmtest.CR("Widget", ns, "warm", map[string]any{"greeting": "hi"}, nil)
	g.Expect(k8s.Create(ctx, warm)).To(Succeed())
	expectDeployed(t, k8s, warm)
	waitSettled(t, k8s, warm)
	start := suite.requests.count(ns)

	cr := helmtest.CR("Widget", ns, "counted", map[string]any{"greeting": "hi"}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	waitSettled(t, k8s, cr)
	install := suite.requests.since(ns, start)
	t.Logf("an install, 2 objects:\n%s", itemise(install))

	from := suite.requests.count(ns)
	cur, err := getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cur.Object, "hello", "spec", "greeting")).To(Succeed())
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		secrets, err := releaseSecrets(ctx, k8s, ns, cr.GetName())
		g.Expect(err).NotTo(HaveOccurred())
		deployed := 0
		for _, s := range secrets {
			if s.Labels["version"] == "2" && s.Labels["status"] == "deployed" {
				deployed++
			}
		}
		g.Expect(deployed).To(Equal(1))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	waitSettled(t, k8s, cr)
	upgrade := suite.requests.since(ns, from)
	t.Logf("an upgrade that changes 1 object:\n%s", itemise(upgrade))

	// The release's records are read by name, not by a list of the
	// namespace's Secrets, whose cost grows with the releases there.
	g.Expect(install).NotTo(ContainElement("list secrets"), "requests for an install:\n%s", itemise(install))
	g.Expect(upgrade).NotTo(ContainElement("list secrets"), "requests for an upgrade:\n%s", itemise(upgrade))
	// The upgrade's read of the record the install left is answered by
	// what the install's write returned: the cache shows it unchanged.
	g.Expect(upgrade).NotTo(ContainElement("get secrets"), "requests for an upgrade:\n%s", itemise(upgrade))
	// The library's read of its resource is answered from the cache.
	g.Expect(install).NotTo(ContainElement("get widgets"), "requests for an install:\n%s", itemise(install))
	g.Expect(upgrade).NotTo(ContainElement("get widgets"), "requests for an upgrade:\n%s", itemise(upgrade))
	// Whether the objects to create exist is answered from the cache, and
	// so is the upgrade's read of the objects as the install left them.
	for _, read := range []string{"get configmaps", "get deployments"} {
		g.Expect(install).NotTo(ContainElement(read), "requests for an install:\n%s", itemise(install))
		g.Expect(upgrade).NotTo(ContainElement(read), "requests for an upgrade:\n%s", itemise(upgrade))
	}
	g.Expect(len(install)).To(BeNumerically("<=", maxRequestsPerInstall), "requests for an install:\n%s", itemise(install))
	g.Expect(len(upgrade)).To(BeNumerically("<=", maxRequestsPerUpgrade), "requests for an upgrade:\n%s", itemise(upgrade))
}

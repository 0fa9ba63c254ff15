package helmruntime

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart/loader"
	hrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

// countingTransport counts requests by path, and by method and path.
type countingTransport struct {
	next     http.RoundTripper
	mu       sync.Mutex
	n        map[string]int
	byMethod map[string]int
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[req.URL.Path]++
	c.byMethod[req.Method+" "+req.URL.Path]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// countMethod returns the number of requests of method to exactly path.
func (c *countingTransport) countMethod(method, path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byMethod[method+" "+path]
}

// count returns the number of requests whose path starts with prefix, or
// is path when exact.
func (c *countingTransport) count(path string, exact bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for p, n := range c.n {
		if p == path || !exact && strings.HasPrefix(p, path) {
			total += n
		}
	}
	return total
}

// TestActionsSpareTheAPIServer installs, dry-runs and upgrades a release
// through the runtime's action clients and checks that none of them
// fetches the API server's OpenAPI documents (see serverSideValidation),
// while the server still refuses an invalid object, and that they share
// one discovery of the server's capabilities (see capabilitiesCache), and
// that a reconcile lists the release's records once (see rememberRelease).
func TestActionsSpareTheAPIServer(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	requests := &countingTransport{n: map[string]int{}, byMethod: map[string]int{}}
	cfg := rest.CopyConfig(suite.cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		requests.next = rt
		return requests
	})
	httpClient, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	acg, err := newTestKind("ConfigMap").libraryPath(cfg, mapper, "release memo")
	g.Expect(err).NotTo(HaveOccurred())

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	g.Expect(k8s.Create(ctx, owner)).To(Succeed())
	owner.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	ch, err := loader.Load("testdata/charts/app")
	g.Expect(err).NotTo(HaveOccurred())

	// The library's reconciler gets a new action client for every reconcile.
	ac := func() helmclient.ActionInterface {
		ac, err := acg.ActionClientFor(ctx, owner)
		g.Expect(err).NotTo(HaveOccurred())
		return ac
	}
	_, err = ac().Install("rel", ns, ch, map[string]interface{}{"greeting": "hi"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac().Upgrade("rel", ns, ch, map[string]interface{}{"greeting": "hello"}, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := ac().Upgrade("rel", ns, ch, map[string]interface{}{"greeting": "hello"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(2))
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rel-config"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello"))
	g.Expect(requests.count("/openapi", false)).To(BeZero(), "requests for OpenAPI documents")
	// One discovery by the REST mapper (lazily, in the first action), and
	// one the three actions shared.
	g.Expect(requests.count("/apis", true)).To(Equal(2), "discoveries of the API groups")

	t.Log("one reconcile's reads, dry-run and upgrade list the release's records once")
	secrets := "/api/v1/namespaces/" + ns + "/secrets"
	lists := requests.countMethod(http.MethodGet, secrets)
	rec := ac()
	_, err = rec.Get("rel")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = rec.Upgrade("rel", ns, ch, map[string]interface{}{"greeting": "hallo"}, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err = rec.Upgrade("rel", ns, ch, map[string]interface{}{"greeting": "hallo"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(3))
	g.Expect(requests.countMethod(http.MethodGet, secrets)-lists).To(Equal(1), "lists of release records")
	rel, err = ac().Get("rel") // a new reconcile reads what the upgrade stored
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(3))
	g.Expect(rel.Info.Status).To(Equal(hrelease.StatusDeployed))

	t.Log("the API server still refuses what is invalid")
	_, err = ac().Upgrade("rel", ns, ch, map[string]interface{}{"greeting": "hi", "replicas": -1})
	g.Expect(err).To(MatchError(ContainSubstring("spec.replicas")))

	_, err = ac().Uninstall("rel")
	g.Expect(err).NotTo(HaveOccurred())
}

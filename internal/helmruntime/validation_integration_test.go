package helmruntime

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// countingTransport counts the requests whose path starts with prefix.
type countingTransport struct {
	next   http.RoundTripper
	prefix string
	n      atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasPrefix(req.URL.Path, c.prefix) {
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}

// TestActionsLeaveValidationToServer installs, dry-runs and upgrades a
// release through the runtime's action clients and checks that none of
// them fetches the API server's OpenAPI documents (see
// serverSideValidation), while the server still refuses an invalid object.
func TestActionsLeaveValidationToServer(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	openAPI := &countingTransport{prefix: "/openapi"}
	cfg := rest.CopyConfig(suite.cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		openAPI.next = rt
		return openAPI
	})
	httpClient, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	acg, err := newActionClientGetter(cfg, mapper, ReleaseNamespaceMapper(false, ""))
	g.Expect(err).NotTo(HaveOccurred())

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	g.Expect(k8s.Create(ctx, owner)).To(Succeed())
	owner.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	ch, err := loader.Load("testdata/charts/app")
	g.Expect(err).NotTo(HaveOccurred())

	ac, err := acg.ActionClientFor(ctx, owner)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.Install("rel", ns, ch, map[string]interface{}{"greeting": "hi"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.Upgrade("rel", ns, ch, map[string]interface{}{"greeting": "hello"}, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := ac.Upgrade("rel", ns, ch, map[string]interface{}{"greeting": "hello"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(2))
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rel-config"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello"))
	g.Expect(openAPI.n.Load()).To(BeZero(), "requests for OpenAPI documents")

	t.Log("the API server still refuses what is invalid")
	_, err = ac.Upgrade("rel", ns, ch, map[string]interface{}{"greeting": "hi", "replicas": -1})
	g.Expect(err).To(MatchError(ContainSubstring("spec.replicas")))

	_, err = ac.Uninstall("rel")
	g.Expect(err).NotTo(HaveOccurred())
}

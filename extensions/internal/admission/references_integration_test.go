package admission

import (
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// warnings collects the admission warnings the API server sends back.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.text
	w.text = nil
	return out
}

// TestWebhookWarnsAboutMissingReferences: a WebApp whose Pods would read
// a Secret or key that does not exist is admitted with a warning naming
// it (kubectl prints it); once the Secret and key exist, no warning. The
// release's own database Secret, rendered with it, is never warned about.
func TestWebhookWarnsAboutMissingReferences(t *testing.T) {
	g := NewWithT(t)
	admin := adminClient(t)
	defer startWebhook(t)()
	ctx := t.Context()
	ns := newNamespace(t, admin)
	w := &warnings{}
	cfg := rest.CopyConfig(env.Require(t))
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: testScheme()})
	g.Expect(err).NotTo(HaveOccurred())

	webapp := func(name string) *unstructured.Unstructured {
		return obj(ns, "WebApp", name, spec(t, `{deploymentTier: dev, webAppImage: "app:1", webAppHostname: `+name+`.example.com,
envVars: [{name: API_KEY, valueFrom: {secretKeyRef: {name: api-keys, key: token}}}, {name: REGION, valueFrom: {configMapKeyRef: {name: settings, key: region, optional: true}}}],
envFrom: [{configMapRef: {name: flags}}]}`))
	}

	g.Expect(c.Create(ctx, webapp("first"))).To(Succeed(), "a missing reference does not refuse")
	got := strings.Join(w.take(), "\n")
	g.Expect(got).To(ContainSubstring(`Secret "api-keys" key "token" in namespace ` + ns + ` does not exist yet`))
	g.Expect(got).To(ContainSubstring(`ConfigMap "flags" in namespace ` + ns + ` does not exist yet`))
	g.Expect(got).To(ContainSubstring("Deployment " + ns + "/first"))
	g.Expect(got).NotTo(ContainSubstring("settings"), "an optional reference is not warned about")
	g.Expect(got).NotTo(ContainSubstring("first-db"), "the release's own Secret is not warned about")
	t.Logf("warnings: %s", got)

	g.Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-keys"}, Data: map[string][]byte{"other": []byte("x")}})).To(Succeed())
	g.Expect(admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flags"}})).To(Succeed())
	g.Expect(c.Create(ctx, webapp("second"))).To(Succeed())
	got = strings.Join(w.take(), "\n")
	g.Expect(got).To(ContainSubstring(`Secret "api-keys" key "token"`), "a missing key is warned about")
	g.Expect(got).NotTo(ContainSubstring("flags"))

	g.Expect(admin.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-keys"}, Data: map[string][]byte{"token": []byte("t0ken")}}, client.Merge)).To(Succeed())
	g.Expect(c.Create(ctx, webapp("third"))).To(Succeed())
	g.Expect(w.take()).To(BeEmpty())
}

package real

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// TestWebAppSecretsOnRealPods: a WebApp's app reads an API token from a
// Secret and its database password from database.auth.existingSecret.
// Applied before the token's Secret exists, kubectl prints the webhook's
// warning and Ready is MissingReference until it is created. The app then
// answers the token over HTTP and connects to PostgreSQL with the existing
// Secret's password; after the token's Secret changes, the rolled Pods
// answer the new token within 60 s.
func TestWebAppSecretsOnRealPods(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "real-secrets", "keeper"
	cluster.CreateNamespace(t, ns)
	cluster.ClientPod(t, ns, realnode.NginxImage)
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-token"}, Data: map[string][]byte{"token": []byte("t1-" + rand.String(12))}}
	dbPassword := "Ext-" + rand.String(20)
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-credentials"}, Data: map[string][]byte{"password": []byte(dbPassword)}}
	g.Expect(cluster.Client.Create(ctx, creds)).To(Succeed())

	t.Log("applied before the token's Secret exists: kubectl prints a warning, Ready names the Secret")
	out, err := cluster.KubectlIn(realnode.WebAppManifest(name, 1)+
		"    auth: {existingSecret: db-credentials}\n"+
		"  envVars:\n  - name: API_TOKEN\n    valueFrom: {secretKeyRef: {name: app-token, key: token}}\n",
		"apply", "-n", ns, "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(`Warning: Secret "app-token" key "token" in namespace ` + ns + ` does not exist yet`))
	t.Logf("kubectl apply: %s", out)
	g.Eventually(func(g Gomega) {
		status, reason, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
		g.Expect([]string{status, reason}).To(Equal([]string{"False", "MissingReference"}), msg)
		g.Expect(msg).To(ContainSubstring(`Secret "app-token" key "token"`))
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	_, _, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
	t.Logf("Ready: %s", msg)

	created := time.Now()
	g.Expect(cluster.Client.Create(ctx, token)).To(Succeed())
	cluster.ExpectServing(t, ns, name, 1)
	t.Logf("database and app Ready %s after the Secret was created", time.Since(created).Round(time.Millisecond))
	g.Eventually(func(g Gomega) {
		status, _, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	host := name + "." + ns + ".svc.cluster.local"
	// The Secret's creation changed what the Pods read, so the app rolls
	// once; until the replaced Pod has left the Service's endpoints, a
	// request may reach it. Every request below is retried.
	get := func(path, want string, within time.Duration) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			out, err := cluster.HTTPGet(ns, host, 80, path)
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring(want))
		}).WithTimeout(within).WithPolling(time.Second).Should(Succeed())
	}

	get("/", "connected to app as app on "+name+"-db", time.Minute)
	t.Log("the app connects to PostgreSQL with the existing Secret's password")
	own := &corev1.Secret{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-db"}, own)).To(Succeed())
	g.Expect(own.Data).NotTo(HaveKey("password"), "the chart's Secret holds no password of its own")

	get("/env?name=API_TOKEN", string(token.Data["token"]), time.Minute)

	t.Log("rotate the token: the new value is served within 60 s")
	next := "t2-" + rand.String(12)
	token.Data["token"] = []byte(next)
	rotated := time.Now()
	g.Expect(cluster.Client.Update(ctx, token)).To(Succeed())
	get("/env?name=API_TOKEN", next, 60*time.Second)
	t.Logf("new token served %s after the Secret changed", time.Since(rotated).Round(time.Millisecond))
	get("/", "connected to app", 30*time.Second)
}

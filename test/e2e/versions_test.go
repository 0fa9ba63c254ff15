package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// webAppV1beta1 is WebApp's second version: spec.webAppHostname is
// spec.hostname (config/crd/kinds.yaml).
var webAppV1beta1 = schema.GroupVersionKind{Group: "web.acme.com", Version: "v1beta1", Kind: "WebApp"}

// TestWebAppSecondVersion: a WebApp written in either version is read in
// both, through the sidecar's conversion webhook, as the same resource;
// reading it in the other version never upgrades its release, and an edit
// through either version upgrades it exactly once.
func TestWebAppSecondVersion(t *testing.T) {
	g := NewWithT(t)
	const ns = "e2e-webapp-versions"
	env.CreateNamespace(t, ns)
	const image = "webAppImage: registry.acme.com/app/app:v1.4"

	t.Log("a WebApp written as v1alpha1 reads as v1beta1 with spec.hostname")
	applyCR(g, testkit.WebAppGVK, ns, "old", "deploymentTier: dev\n"+image+"\nwebAppHostname: old.acme.com")
	expectDeployed(t, testkit.WebAppGVK, ns, "old", "InstallSuccessful")
	var alpha, beta *unstructured.Unstructured
	// The runtime may write the status between two reads (Ready comes
	// after Deployed): read until both versions show one resourceVersion.
	g.Eventually(func(g Gomega) {
		beta = get(g, webAppV1beta1, ns, "old")
		alpha = get(g, testkit.WebAppGVK, ns, "old")
		g.Expect(beta.GetResourceVersion()).To(Equal(alpha.GetResourceVersion()))
	}).WithTimeout(20 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(beta.GetAPIVersion()).To(Equal("web.acme.com/v1beta1"))
	g.Expect(beta.Object["spec"]).To(HaveKeyWithValue("hostname", "old.acme.com"))
	g.Expect(beta.Object["spec"]).NotTo(HaveKey("webAppHostname"))
	g.Expect(alpha.Object["spec"]).To(HaveKeyWithValue("webAppHostname", "old.acme.com"))
	g.Expect(alpha.Object["spec"]).NotTo(HaveKey("hostname"))
	// Everything but the renamed field is the same: metadata, status,
	// the rest of the spec.
	g.Expect(beta.Object["status"]).To(Equal(alpha.Object["status"]))
	g.Expect(beta.Object["metadata"]).To(Equal(alpha.Object["metadata"]))
	delete(beta.Object["spec"].(map[string]any), "hostname")
	delete(alpha.Object["spec"].(map[string]any), "webAppHostname")
	g.Expect(beta.Object["spec"]).To(Equal(alpha.Object["spec"]))

	t.Log("kubectl get of either version shows the same resource; the plain name is v1beta1")
	read := func(g Gomega, resource string) []string {
		out, err := env.Kubectl("get", resource, "-n", ns, "-o", "jsonpath={.apiVersion} {.metadata.uid} {.metadata.resourceVersion} {.spec.hostname}{.spec.webAppHostname}")
		g.Expect(err).NotTo(HaveOccurred(), out)
		return strings.Fields(out)
	}
	// The runtime may write the status between two reads: read until two
	// in a row agree.
	g.Eventually(func(g Gomega) {
		a := read(g, "webapp.v1alpha1.web.acme.com/old")
		b := read(g, "webapp.v1beta1.web.acme.com/old")
		g.Expect(a).To(HaveLen(4))
		g.Expect(a[0]).To(Equal("web.acme.com/v1alpha1"))
		g.Expect(b[0]).To(Equal("web.acme.com/v1beta1"))
		g.Expect(a[1]).To(Equal(string(alpha.GetUID())))
		g.Expect(b[1:]).To(Equal(a[1:]), "same uid, resourceVersion and host")
		g.Expect(a[3]).To(Equal("old.acme.com"))
	}).WithTimeout(20 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(read(g, "webapp/old")[0]).To(Equal("web.acme.com/v1beta1"))
	out, err := env.Kubectl("get", "webapps", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`old\s+dev\s+registry.acme.com/app/app:v1.4\s+old.acme.com\s+2\s+`), "the Hostname column reads spec.hostname")

	t.Log("a WebApp written as v1beta1 installs with its hostname and reads as v1alpha1")
	applyCR(g, webAppV1beta1, ns, "new", "deploymentTier: dev\n"+image+"\nhostname: new.acme.com")
	expectDeployed(t, testkit.WebAppGVK, ns, "new", "InstallSuccessful")
	expectIngressHost(t, ns, "new", "new.acme.com")
	alpha = get(g, testkit.WebAppGVK, ns, "new")
	g.Expect(alpha.Object["spec"]).To(HaveKeyWithValue("webAppHostname", "new.acme.com"))
	g.Expect(alpha.Object["spec"]).NotTo(HaveKey("hostname"))
	expectRevisions(t, ns, "new", 1)

	t.Log("an edit through v1beta1 upgrades the release once")
	out, err = env.Kubectl("patch", "webapp.v1beta1.web.acme.com", "new", "-n", ns, "--type=merge", "-p", `{"spec":{"hostname":"new2.acme.com"}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectIngressHost(t, ns, "new", "new2.acme.com")
	expectRevisions(t, ns, "new", 2)

	t.Log("an edit through v1alpha1 upgrades the release once")
	out, err = env.Kubectl("patch", "webapp.v1alpha1.web.acme.com", "new", "-n", ns, "--type=merge", "-p", `{"spec":{"webAppHostname":"new3.acme.com"}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectIngressHost(t, ns, "new", "new3.acme.com")
	expectRevisions(t, ns, "new", 3)
	g.Expect(get(g, webAppV1beta1, ns, "new").Object["spec"]).To(HaveKeyWithValue("hostname", "new3.acme.com"))

	t.Log("all those reads in v1beta1 left the first WebApp's release alone")
	expectRevisions(t, ns, "old", 1)
}

// get reads a custom resource in the version of gvk.
func get(g Gomega, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	u, err := env.Get(context.Background(), gvk, ns, name)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return u
}

// expectIngressHost waits until the Ingress of release name routes host.
func expectIngressHost(t *testing.T, ns, name, host string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		ing := &networkingv1.Ingress{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ing)).To(Succeed())
		var hosts []string
		for _, r := range ing.Spec.Rules {
			hosts = append(hosts, r.Host)
		}
		g.Expect(hosts).To(Equal([]string{host}))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// expectRevisions waits until release name has n revisions, then checks
// that it still has n a few seconds later: no second upgrade follows.
func expectRevisions(t *testing.T, ns, name string, n int) {
	t.Helper()
	g := NewWithT(t)
	count := func() (string, error) {
		revs, err := env.ReleaseRevisions(context.Background(), ns, name)
		return fmt.Sprintf("%d: %s", len(revs), strings.Join(revs, ", ")), err
	}
	g.Eventually(count).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(HavePrefix(fmt.Sprintf("%d: ", n)))
	g.Consistently(count).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(HavePrefix(fmt.Sprintf("%d: ", n)))
}

package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conflictWindow is how long the conflict tests watch that nothing moves:
// a minute with RELIABILITY_LONG (make test-reliability), the figures of
// docs/reliability.md.
func conflictWindow() time.Duration {
	if os.Getenv("RELIABILITY_LONG") != "" {
		return time.Minute
	}
	return 15 * time.Second
}

// snapshot is what must stay put while a second resource claims the
// release of the first: its revisions and its objects' UIDs and generations.
type snapshot struct {
	revisions            []string
	deployment, database string
	deploymentGen, dbGen int64
	nginxReconciles      float64
}

func takeSnapshot(g Gomega, ns, name string) snapshot {
	ctx := context.Background()
	revs, err := releaseSecrets(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	dep := &appsv1.Deployment{}
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
	sts := &appsv1.StatefulSet{}
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-db"}, sts)).To(Succeed())
	n, err := env.manager.metric("controller_runtime_reconcile_total", "controller=nginx-controller")
	g.Expect(err).NotTo(HaveOccurred())
	return snapshot{revisions: revs, deployment: string(dep.UID), database: string(sts.UID),
		deploymentGen: dep.Generation, dbGen: sts.Generation, nginxReconciles: n}
}

// TestReleaseNameConflict: a WebApp and an Nginx named shop in one
// namespace. The Nginx came second: it is refused with the owner's name,
// the WebApp's release, Deployment and database are never touched, the
// Nginx is not retried in a loop, and deleting it leaves the WebApp alone.
func TestReleaseNameConflict(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-release-conflict", "shop"
	createNamespace(t, ns)

	out, err := kubectlIn(`apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata:
  name: shop
spec:
  webAppImage: registry.acme.com/app/app:v1.4
  webAppHostname: shop.acme.com
  deploymentTier: dev
`, "apply", "-n", ns, "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectWebAppDeployed(t, ns, name, "InstallSuccessful")

	out, err = kubectlIn(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: shop
spec:
  replicaCount: 1
`, "apply", "-n", ns, "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)

	want := "release shop in namespace " + ns + " belongs to WebApp " + ns + "/shop; rename this Nginx"
	g.Eventually(func(g Gomega) {
		cr, err := getNginx(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		status, reason, msg := condition(cr, "ReleaseFailed")
		g.Expect(status).To(Equal("True"), msg)
		g.Expect(reason).To(Equal("ReleaseNameConflict"))
		g.Expect(msg).To(Equal(want))
		status, _, _ = condition(cr, "Deployed")
		g.Expect(status).NotTo(Equal("True"))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		out, err := kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.kind=Nginx,reason=ReleaseNameConflict", "-o", "jsonpath={.items[*].message}")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring(want))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	// Let the refusal's own status write and its echo pass, then count.
	time.Sleep(2 * time.Second)
	before := takeSnapshot(g, ns, name)
	window := conflictWindow()
	time.Sleep(window)
	after := takeSnapshot(g, ns, name)
	t.Logf("over %s: release revisions %d -> %d, Deployment generation %d -> %d, database generation %d -> %d, Nginx reconciles %.0f -> %.0f",
		window, len(before.revisions), len(after.revisions), before.deploymentGen, after.deploymentGen,
		before.dbGen, after.dbGen, before.nginxReconciles, after.nginxReconciles)
	g.Expect(after.revisions).To(Equal(before.revisions))
	g.Expect(before.revisions).To(ConsistOf("sh.helm.release.v1.shop.v1"))
	g.Expect(after.deployment).To(Equal(before.deployment))
	g.Expect(after.database).To(Equal(before.database))
	g.Expect(after.deploymentGen).To(Equal(before.deploymentGen))
	g.Expect(after.dbGen).To(Equal(before.dbGen))
	// No retry loop: the refusal is terminal until something changes.
	g.Expect(after.nginxReconciles - before.nginxReconciles).To(BeNumerically("<=", 1))

	t.Log("deleting the Nginx leaves the WebApp's release alone")
	out, err = kubectl("delete", "nginx", name, "-n", ns, "--wait=true", "--timeout=30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	final := takeSnapshot(g, ns, name)
	g.Expect(final.revisions).To(Equal(before.revisions))
	g.Expect(final.deployment).To(Equal(before.deployment))
	g.Expect(final.database).To(Equal(before.database))
	expectWebAppDeployed(t, ns, name, "InstallSuccessful")

	out, err = kubectl("delete", "webapp", name, "-n", ns, "--wait=true", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

// TestNameTooLongForARelease: the CRD refuses a name the release cannot
// hold, and says the limit.
func TestNameTooLongForARelease(t *testing.T) {
	g := NewWithT(t)
	const ns = "e2e-long-names"
	createNamespace(t, ns)
	name := strings.Repeat("n", 60)
	out, err := kubectlIn(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: `+name+`
spec: {}
`, "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("metadata.name"))
	g.Expect(out).To(MatchRegexp(`at most \d+ characters`))
	_, err = getNginx(context.Background(), ns, name)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

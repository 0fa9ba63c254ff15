package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
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
	revs, err := env.ReleaseRevisions(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
	sts := &appsv1.StatefulSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-db"}, sts)).To(Succeed())
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
	env.CreateNamespace(t, ns)

	out, err := env.KubectlIn(`apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata:
  name: shop
spec:
  webAppImage: registry.acme.com/app/app:v1.4
  webAppHostname: shop.acme.com
  deploymentTier: dev
`, "apply", "-n", ns, "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectDeployed(t, testkit.WebAppGVK, ns, name, "InstallSuccessful")

	out, err = env.KubectlIn(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: shop
spec:
  replicaCount: 1
`, "apply", "-n", ns, "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)

	want := "release shop in namespace " + ns + " belongs to WebApp " + ns + "/shop; rename this Nginx"
	g.Eventually(func(g Gomega) {
		cr, err := env.Get(ctx, testkit.NginxGVK, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		status, reason, msg := testkit.Condition(cr, "ReleaseFailed")
		g.Expect(status).To(Equal("True"), msg)
		g.Expect(reason).To(Equal("ReleaseNameConflict"))
		g.Expect(msg).To(Equal(want))
		status, _, _ = testkit.Condition(cr, "Deployed")
		g.Expect(status).NotTo(Equal("True"))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		out, err := env.Kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.kind=Nginx,reason=ReleaseNameConflict", "-o", "jsonpath={.items[*].message}")
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
	out, err = env.Kubectl("delete", "nginx", name, "-n", ns, "--wait=true", "--timeout=30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	final := takeSnapshot(g, ns, name)
	g.Expect(final.revisions).To(Equal(before.revisions))
	g.Expect(final.deployment).To(Equal(before.deployment))
	g.Expect(final.database).To(Equal(before.database))
	expectDeployed(t, testkit.WebAppGVK, ns, name, "InstallSuccessful")

	out, err = env.Kubectl("delete", "webapp", name, "-n", ns, "--wait=true", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

// TestNameTooLongForARelease: the CRD refuses a name the release cannot
// hold, and says the limit.
func TestNameTooLongForARelease(t *testing.T) {
	g := NewWithT(t)
	const ns = "e2e-long-names"
	env.CreateNamespace(t, ns)
	name := strings.Repeat("n", 60)
	out, err := env.KubectlIn(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: `+name+`
spec: {}
`, "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("metadata.name"))
	g.Expect(out).To(MatchRegexp(`at most \d+ characters`))
	_, err = env.Get(context.Background(), testkit.NginxGVK, ns, name)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

// generationOver returns obj's generation at the start and the end of the
// window.
func generationOver(g Gomega, obj client.Object, window time.Duration) (int64, int64) {
	ctx := context.Background()
	g.ExpectWithOffset(1, env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	before := obj.GetGeneration()
	time.Sleep(window)
	g.ExpectWithOffset(1, env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return before, obj.GetGeneration()
}

// expectHeld waits until CronScaler name is Ready=False with reason and a
// message containing msg, with a Warning Event of that reason.
func expectHeld(t *testing.T, ns, name, reason, msg string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		status, got, m := env.ConditionOf(g, testkit.CronScalerGVK, ns, name, "Ready")
		g.Expect([]string{status, got}).To(Equal([]string{"False", reason}), m)
		g.Expect(m).To(ContainSubstring(msg))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Eventually(func() ([]string, error) { return env.EventReasons(ctx, ns, name) }).
		WithTimeout(10 * time.Second).Should(ContainElement(reason))
}

// TestCronScalerConflicts: two CronScalers whose jobs have both fired, on
// one Deployment; and a CronScaler on a Deployment whose replicas an
// Nginx's chart sets. Neither pair fights: the one that must yield says
// who holds the count, and the target's generation stays put.
func TestCronScalerConflicts(t *testing.T) {
	ctx := context.Background()
	const ns = "e2e-cronscaler-conflicts"
	env.CreateNamespace(t, ns)
	window := conflictWindow()

	t.Run("two CronScalers, one target", func(t *testing.T) {
		g := NewWithT(t)
		dep := newDeployment(ns, "web", 1)
		g.Expect(env.Client.Create(ctx, dep)).To(Succeed())
		env.ExpectApply(g, ns, cronScalerManifest("first", "apps/v1", "Deployment", "web",
			[]cronJob{{"every-minute", "* * * * *", 3}}, ""))
		g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
			WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(3)))
		// creationTimestamp has a resolution of one second: the second
		// CronScaler must be younger for the rule to pick the first.
		time.Sleep(1100 * time.Millisecond)
		env.ExpectApply(g, ns, cronScalerManifest("second", "apps/v1", "Deployment", "web",
			[]cronJob{{"every-minute", "* * * * *", 1}}, ""))
		expectHeld(t, ns, "second", "AmbiguousTarget", "CronScaler "+ns+"/first")

		before, after := generationOver(g, dep, window)
		t.Logf("over %s: Deployment generation %d -> %d", window, before, after)
		g.Expect(after).To(Equal(before))
		g.Expect(specReplicas(ctx, dep)).To(Equal(int32(3)))

		t.Log("the owner goes: the second takes over at once")
		out, err := env.Kubectl("delete", "cronscaler", "first", "-n", ns, "--wait=true", "--timeout=30s")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
			WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(1)))
		g.Eventually(func(g Gomega) {
			status, reason, _ := env.ConditionOf(g, testkit.CronScalerGVK, ns, "second", "Ready")
			g.Expect([]string{status, reason}).To(Equal([]string{"True", "Scaled"}))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	t.Run("replicas a chart still sets", func(t *testing.T) {
		g := NewWithT(t)
		out, err := env.KubectlIn(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: charted
spec:
  replicaCount: 2
`, "apply", "-n", ns, "-f", "-")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Eventually(func(g Gomega) {
			status, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, "charted", "Deployed")
			g.Expect(status).To(Equal("True"), msg)
		}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		dep := &appsv1.Deployment{}
		dep.Namespace, dep.Name = ns, "charted-nginx"

		env.ExpectApply(g, ns, cronScalerManifest("charted", "apps/v1", "Deployment", "charted-nginx",
			[]cronJob{{"every-minute", "* * * * *", 4}}, ""))
		expectHeld(t, ns, "charted", "ReplicasSetByChart", "Nginx "+ns+"/charted")
		g.Eventually(func() ([]string, error) { return env.EventReasons(ctx, ns, "charted") }).
			WithTimeout(10 * time.Second).Should(ContainElement("ReplicasSetByChart"))
		var nginxEvents corev1.EventList
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.List(ctx, &nginxEvents, client.InNamespace(ns))).To(Succeed())
			var onNginx []string
			for _, e := range nginxEvents.Items {
				if e.InvolvedObject.Kind == "Nginx" && e.Type == corev1.EventTypeWarning {
					onNginx = append(onNginx, e.Reason)
				}
			}
			g.Expect(onNginx).NotTo(BeEmpty(), "the Nginx is told too")
		}).WithTimeout(10 * time.Second).Should(Succeed())

		revs, err := env.ReleaseRevisions(ctx, ns, "charted")
		g.Expect(err).NotTo(HaveOccurred())
		before, after := generationOver(g, dep, window)
		t.Logf("over %s: Deployment generation %d -> %d, release revisions %d", window, before, after, len(revs))
		g.Expect(after).To(Equal(before))
		g.Expect(specReplicas(ctx, dep)).To(Equal(int32(2)))
		g.Expect(env.ReleaseRevisions(ctx, ns, "charted")).To(Equal(revs))

		t.Log("handing the count over (externalReplicaControl) lets the CronScaler scale")
		out, err = env.Kubectl("patch", "nginx", "charted", "-n", ns, "--type=merge", "-p", `{"spec":{"externalReplicaControl":true}}`)
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
			WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(int32(4)))
		g.Eventually(func(g Gomega) {
			status, reason, _ := env.ConditionOf(g, testkit.CronScalerGVK, ns, "charted", "Ready")
			g.Expect([]string{status, reason}).To(Equal([]string{"True", "Scaled"}))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		before, after = generationOver(g, dep, 5*time.Second)
		g.Expect(after).To(Equal(before), "no fight once the chart lets go")
		g.Expect(specReplicas(ctx, dep)).To(Equal(int32(4)))
	})
}

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// TestLibraryAnnotations: the install and upgrade annotations of
// operator-sdk's Helm operator set the options of those Helm actions: the
// descriptions are recorded on the revisions, and upgrade-force replaces
// the objects (a label added by hand, which an ordinary upgrade's patch
// keeps, goes).
func TestLibraryAnnotations(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-annotations", "annotated-nginx"
	env.CreateNamespace(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: name}
	env.Apply(t, ns, `
apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: `+name+`
  annotations:
    helm.sdk.operatorframework.io/install-description: installed by pipeline 42
spec: {replicaCount: 1}`)
	revision := func(n int) func(g Gomega) {
		return func(g Gomega) {
			status, reason, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
			g.Expect(status).To(Equal("True"), msg)
			want := "InstallSuccessful"
			if n > 1 {
				want = "UpgradeSuccessful"
			}
			g.Expect(reason).To(Equal(want))
			g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(HaveLen(n))
		}
	}
	g.Eventually(revision(1)).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(env.ReleaseDescription(ctx, ns, name, 1)).To(Equal("installed by pipeline 42"))

	handLabel := func() {
		g.Eventually(func() error {
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, key, d); err != nil {
				return err
			}
			d.Labels["hand"] = "made"
			return env.Client.Update(ctx, d)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	labels := func() map[string]string {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		return d.Labels
	}

	t.Log("upgrade-description; an ordinary upgrade patches and keeps a label added by hand")
	handLabel()
	out, err := env.Kubectl("annotate", "nginx", name, "-n", ns, "helm.sdk.operatorframework.io/upgrade-description=scaled for the sale")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"replicaCount":2}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(revision(2)).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(env.ReleaseDescription(ctx, ns, name, 2)).To(Equal("scaled for the sale"))
	g.Expect(labels()).To(HaveKeyWithValue("hand", "made"))

	t.Log("upgrade-force: the upgrade replaces the objects")
	out, err = env.Kubectl("annotate", "nginx", name, "-n", ns, "helm.sdk.operatorframework.io/upgrade-force=true")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"replicaCount":3}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(revision(3)).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(labels()).NotTo(HaveKey("hand"))
}

// TestReconcilePeriodAnnotation: helm.sdk.operatorframework.io/reconcile-period
// sets one resource's resync period in place of its kind's (1h here); 0s
// stops it; a value that is not a duration is reported in an Event.
func TestReconcilePeriodAnnotation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-reconcile-period", "period-nginx"
	env.CreateNamespace(t, ns)
	env.Apply(t, ns, "{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: "+name+"}, spec: {replicaCount: 1}}")
	expectDeployed(t, testkit.NginxGVK, ns, name, "InstallSuccessful")
	reconciles := func() float64 {
		n, err := env.manager.metric("controller_runtime_reconcile_total", "controller=nginx-controller")
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
	annotate := func(value string) {
		out, err := env.Kubectl("annotate", "--overwrite", "nginx", name, "-n", ns, "helm.sdk.operatorframework.io/reconcile-period="+value)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}

	t.Log("1s: resynced about every second")
	annotate("1s")
	time.Sleep(time.Second) // the reconcile of the annotation's edit
	before := reconciles()
	time.Sleep(5 * time.Second)
	resyncs := reconciles() - before
	t.Logf("%v reconciles in 5 s", resyncs)
	g.Expect(resyncs).To(BeNumerically(">=", 3))

	t.Log("0s: no resync")
	annotate("0s")
	time.Sleep(time.Second)
	before = reconciles()
	time.Sleep(3 * time.Second)
	g.Expect(reconciles() - before).To(BeNumerically("<=", 1))

	t.Log("not a duration: a Warning Event, the kind's period applies")
	annotate("soon")
	g.Eventually(func(g Gomega) {
		msgs, _, err := env.WarningEvents(ctx, ns, name, "InvalidAnnotation")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(msgs).To(ContainElement(ContainSubstring(`helm.sdk.operatorframework.io/reconcile-period "soon" is not a duration`)))
	}).WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// TestUninstallWaitAnnotation: a resource with
// helm.sdk.operatorframework.io/uninstall-wait stays, saying what it waits
// for, until every object of its release is gone; here a ConfigMap that a
// finalizer of someone else's holds.
func TestUninstallWaitAnnotation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-uninstall-wait", "waiting-nginx"
	const hold = "e2e.acme.com/hold"
	env.CreateNamespace(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: name}
	env.Apply(t, ns, `
apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: `+name+`
  annotations:
    helm.sdk.operatorframework.io/uninstall-wait: "true"
spec: {replicaCount: 1}`)
	expectDeployed(t, testkit.NginxGVK, ns, name, "InstallSuccessful")
	setHold := func(on bool) {
		g.Eventually(func() error {
			cm := &corev1.ConfigMap{}
			if err := env.Client.Get(ctx, key, cm); err != nil {
				return err
			}
			if on {
				cm.Finalizers = append(cm.Finalizers, hold)
			} else {
				cm.Finalizers = slices.DeleteFunc(cm.Finalizers, func(f string) bool { return f == hold })
			}
			return env.Client.Update(ctx, cm)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	setHold(true)

	out, err := env.Kubectl("delete", "nginx", name, "-n", ns, "--wait=false")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Log("uninstalled, but the ConfigMap is held: the Nginx stays and says why")
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, &appsv1.Deployment{})).To(MatchError(ContainSubstring("not found")))
		_, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "ReleaseFailed")
		g.Expect(msg).To(ContainSubstring("waiting for 1 object(s) to be gone"))
		g.Expect(msg).To(ContainSubstring("ConfigMap " + ns + "/" + name))
		g.Expect(env.EventsWithReason(ctx, ns, name, "UninstallWaiting")).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Consistently(func() error {
		_, err := env.Get(ctx, testkit.NginxGVK, ns, name)
		return err
	}).WithTimeout(3*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "the Nginx waits")

	t.Log("the ConfigMap goes: so does the Nginx")
	released := time.Now()
	setHold(false)
	g.Eventually(func() bool {
		_, err := env.Get(ctx, testkit.NginxGVK, ns, name)
		return apierrors.IsNotFound(err)
	}).WithTimeout(90 * time.Second).WithPolling(250 * time.Millisecond).Should(BeTrue())
	t.Logf("the Nginx went %s after its last object", time.Since(released).Round(time.Millisecond))
}

// TestRollbackForceAnnotation: a failed upgrade is rolled back by replacing
// the objects (a label added by hand goes), unless the resource sets
// helm.sdk.operatorframework.io/rollback-force: "false", which patches
// them back (the label stays).
func TestRollbackForceAnnotation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "e2e-rollback-force"
	env.CreateNamespace(t, ns)
	resources := map[string]string{"forced-nginx": "", "patched-nginx": `helm.sdk.operatorframework.io/rollback-force: "false"`}
	for name, annotation := range resources {
		env.Apply(t, ns, "{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: "+name+", annotations: {"+annotation+"}}, spec: {replicaCount: 1}}")
	}
	for name := range resources {
		g.Eventually(func(g Gomega) {
			status, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
			g.Expect(status).To(Equal("True"), msg)
		}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		g.Eventually(func() error {
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
				return err
			}
			d.Labels["hand"] = "made"
			return env.Client.Update(ctx, d)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		// A label value the API server refuses: the upgrade fails.
		out, err := env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"podLabels":{"team":"not a valid label value!"}}}`)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	for name := range resources {
		g.Eventually(func(g Gomega) {
			_, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "ReleaseFailed")
			g.Expect(msg).To(ContainSubstring("rolled back to the last deployed revision"))
		}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	}
	labels := func(name string) map[string]string {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
		return d.Labels
	}
	g.Expect(labels("forced-nginx")).NotTo(HaveKey("hand"), "a forced rollback replaces the Deployment")
	g.Expect(labels("patched-nginx")).To(HaveKeyWithValue("hand", "made"), "a rollback without force patches it")

	// A failed upgrade is retried until the spec is fixed; the resources
	// go, so that their retries do not load the tests that follow.
	out, err := env.Kubectl("delete", "nginx", "--all", "-n", ns, "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

package real

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
)

var webAppGVK = schema.GroupVersionKind{Group: "web.acme.com", Version: "v1alpha1", Kind: "WebApp"}

// expectServing waits until the WebApp's app Deployment has all its pods
// Ready (their readiness probe asks the database) and returns how long
// that took.
func expectServing(t *testing.T, ns, name string, replicas int32) time.Duration {
	t.Helper()
	start := time.Now()
	NewWithT(t).Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		g.Expect(*dep.Spec.Replicas).To(Equal(replicas))
		g.Expect(available(dep)).To(BeTrue(), "status: %+v", dep.Status)
	}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return time.Since(start)
}

func dbPassword(g Gomega, ns, name string) string {
	s := &corev1.Secret{}
	g.ExpectWithOffset(1, cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-db"}, s)).To(Succeed())
	return string(s.Data["password"])
}

// TestWebAppWithDatabase: PostgreSQL starts on a bound PVC with the
// generated password; the app reaches it through its Service by DNS name;
// after an operator Pod restart and an upgrade the password is the same and
// the app still connects; deleting the WebApp (Retain) and creating it
// again finds the data written before.
func TestWebAppWithDatabase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "real-webapp", "shop"
	createNamespace(t, ns)
	clientPod(t, ns)
	host := name + "." + ns + ".svc.cluster.local"

	apply(t, ns, realnode.WebAppManifest(name, 1))
	took := expectServing(t, ns, name, 1)
	t.Logf("database and app Ready %s after the WebApp was applied", took.Round(time.Millisecond))
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + name + "-db-0"}, pvc)).To(Succeed())
	g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
	password := dbPassword(g, ns, name)
	g.Expect(password).NotTo(BeEmpty())

	out, err := httpGet(ns, host, 80, "/")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("connected to app as app on " + name + "-db"))
	t.Logf("app answer: %q", lastLine(out))
	value := "order-" + rand.String(8)
	out, err = httpGet(ns, host, 80, "/write?v="+value)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("200 OK"))

	t.Log("restart the operator's Pod, then upgrade the WebApp")
	old := operatorPod(g)
	out, err = kubectl("delete", "pod", "-n", operatorNamespace, old.Name, "--wait=true")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	apply(t, ns, realnode.WebAppManifest(name, 2))
	g.Eventually(func(g Gomega) {
		cr, err := getCR(ctx, webAppGVK, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		status, reason, msg := condition(cr, "Deployed")
		g.Expect([]string{status, reason}).To(Equal([]string{"True", "UpgradeSuccessful"}), msg)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	expectServing(t, ns, name, 2)
	g.Expect(dbPassword(g, ns, name)).To(Equal(password), "the generated password survives restart and upgrade")
	for range 4 { // both app pods, through the Service
		out, err = httpGet(ns, host, 80, "/read")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring(value))
	}

	t.Log("delete the WebApp (Retain) and create it again: the data is still there")
	out, err = kubectl("delete", "webapp", name, "-n", ns, "--wait=true", "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-db-0"}, &corev1.Pod{}))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "the database pod goes")
	g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)).To(Succeed(), "the PVC is retained")
	apply(t, ns, realnode.WebAppManifest(name, 1))
	took = expectServing(t, ns, name, 1)
	t.Logf("re-created WebApp serving %s after apply", took.Round(time.Millisecond))
	g.Expect(dbPassword(g, ns, name)).To(Equal(password))
	out, err = httpGet(ns, host, 80, "/read")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(value))
	t.Logf("read after re-creation: %q", lastLine(out))
}

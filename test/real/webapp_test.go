package real

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// TestWebAppWithDatabase: PostgreSQL starts on a bound PVC with the
// generated password; the app reaches it through its Service by DNS name;
// after an operator Pod restart and an upgrade the password is the same and
// the app still connects; deleting the WebApp (Retain) and creating it
// again finds the data written before.
func TestWebAppWithDatabase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "real-webapp", "shop"
	cluster.CreateNamespace(t, ns)
	cluster.ClientPod(t, ns, realnode.NginxImage)
	host := name + "." + ns + ".svc.cluster.local"

	cluster.Apply(t, ns, realnode.WebAppManifest(name, 1))
	took := cluster.ExpectServing(t, ns, name, 1)
	t.Logf("database and app Ready %s after the WebApp was applied", took.Round(time.Millisecond))
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + name + "-db-0"}, pvc)).To(Succeed())
	g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
	password := cluster.DBPassword(g, ns, name)
	g.Expect(password).NotTo(BeEmpty())

	out, err := cluster.HTTPGet(ns, host, 80, "/")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("connected to app as app on " + name + "-db"))
	t.Logf("app answer: %q", testkit.LastLine(out))
	value := "order-" + rand.String(8)
	out, err = cluster.HTTPGet(ns, host, 80, "/write?v="+value)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("200 OK"))

	t.Log("restart the operator's Pod, then upgrade the WebApp")
	old := operatorPod(g)
	out, err = cluster.Kubectl("delete", "pod", "-n", operatorNamespace, old.Name, "--wait=true")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	cluster.Apply(t, ns, realnode.WebAppManifest(name, 2))
	g.Eventually(func(g Gomega) {
		status, reason, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Deployed")
		g.Expect([]string{status, reason}).To(Equal([]string{"True", "UpgradeSuccessful"}), msg)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	cluster.ExpectServing(t, ns, name, 2)
	g.Expect(cluster.DBPassword(g, ns, name)).To(Equal(password), "the generated password survives restart and upgrade")
	for range 4 { // both app pods, through the Service
		out, err = cluster.HTTPGet(ns, host, 80, "/read")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring(value))
	}

	t.Log("delete the WebApp (Retain) and create it again: the data is still there")
	out, err = cluster.Kubectl("delete", "webapp", name, "-n", ns, "--wait=true", "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-db-0"}, &corev1.Pod{}))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "the database pod goes")
	g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)).To(Succeed(), "the PVC is retained")
	cluster.Apply(t, ns, realnode.WebAppManifest(name, 1))
	took = cluster.ExpectServing(t, ns, name, 1)
	t.Logf("re-created WebApp serving %s after apply", took.Round(time.Millisecond))
	g.Expect(cluster.DBPassword(g, ns, name)).To(Equal(password))
	out, err = cluster.HTTPGet(ns, host, 80, "/read")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(value))
	t.Logf("read after re-creation: %q", testkit.LastLine(out))
}

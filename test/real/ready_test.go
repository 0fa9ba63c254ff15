package real

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// TestWebAppReadyFollowsItsPods: a WebApp whose image cannot be pulled is
// Ready=False naming ImagePullBackOff (or ErrImagePull) and the image
// within 30 s, and never True; with the image fixed it becomes Ready once
// the app answers, its readiness probe having reached PostgreSQL.
func TestWebAppReadyFollowsItsPods(t *testing.T) {
	g := NewWithT(t)
	const ns, name = "real-ready-webapp", "cart"
	const missing = "localhost:5000/webapp-test-app:does-not-exist"
	cluster.CreateNamespace(t, ns)
	cluster.ClientPod(t, ns, realnode.NginxImage)

	bad := strings.Replace(realnode.WebAppManifest(name, 1), "webAppImage: "+realnode.AppImage, "webAppImage: "+missing, 1)
	g.Expect(bad).To(ContainSubstring(missing))
	applied := time.Now()
	cluster.Apply(t, ns, bad)
	g.Eventually(func(g Gomega) {
		status, reason, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("False"))
		g.Expect(reason).To(Equal("Progressing"))
		g.Expect(msg).To(ContainSubstring("Deployment " + name))
		g.Expect(msg).To(MatchRegexp(`Pod ` + name + `-[a-z0-9-]+: (ImagePullBackOff|ErrImagePull) \(` + missing + `\)`))
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	_, _, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
	t.Logf("Ready=False %s after apply: %s", time.Since(applied).Round(time.Second), msg)
	g.Consistently(func(g Gomega) {
		status, _, _ := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
		g.Expect(status).NotTo(Equal("True"))
	}).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())

	t.Log("fix the image: Ready once the app answers and PostgreSQL accepts connections")
	fixed := time.Now()
	cluster.Apply(t, ns, realnode.WebAppManifest(name, 1))
	out, err := cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "webapp/"+name, "--timeout=240s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("Ready=True %s after the fix", time.Since(fixed).Round(time.Millisecond))
	out, err = cluster.HTTPGet(ns, name+"."+ns+".svc.cluster.local", 80, "/")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("connected to app as app on " + name + "-db"))
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "data-" + name + "-db-0"}, pvc)).To(Succeed())
	g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
	_, _, msg = cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
	t.Logf("Ready message: %s", msg)
}

// TestNginxReadyWithAFailingProbe: an Nginx whose readiness probe fails
// runs its Pods but is Ready=False, naming its Deployment and the probe.
func TestNginxReadyWithAFailingProbe(t *testing.T) {
	g := NewWithT(t)
	const ns, name = "real-ready-nginx", "closed"
	cluster.CreateNamespace(t, ns)
	cluster.Apply(t, ns, fmt.Sprintf(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: %s
spec:
  replicaCount: 1
  image: {repository: %s, tag: %q}
  readinessProbe: {path: /ready}
  serverBlock: |
    server {
      listen 8080;
      location = /healthz { return 200 "ok\n"; }
      location = /ready { return 503 "not yet\n"; }
    }
`, name, realnode.NginxRepo, realnode.NginxTag))
	g.Eventually(func(g Gomega) {
		status, reason, msg := cluster.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
		g.Expect([]string{status, reason}).To(Equal([]string{"False", "Progressing"}))
		g.Expect(msg).To(ContainSubstring("Deployment " + name + "-nginx"))
		g.Expect(msg).To(ContainSubstring("readiness probe failing"))
	}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
	_, _, msg := cluster.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
	t.Logf("Ready message: %s", msg)
}

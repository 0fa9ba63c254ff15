package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/helmruntime"
	"github.com/acme/platform-operator/test/testkit"
)

// TestPauseStopsUpgradesAndRepairs: while a resource carries the pause
// annotation, a spec edit is not applied and a hand-made change is not
// repaired; removing it applies both at once; a paused resource that is
// deleted is uninstalled.
func TestPauseStopsUpgradesAndRepairs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-pause", "paused-nginx" // the chart names its objects after a release named *nginx*
	env.CreateNamespace(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: name}
	env.Apply(t, ns, "{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: "+name+"}, spec: {replicaCount: 1}}")
	g.Eventually(func(g Gomega) {
		status, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	revisions := []string{"sh.helm.release.v1." + name + ".v1"}

	t.Log("pause: Paused=True, Ready=Unknown")
	out, err := env.Kubectl("annotate", "nginx", name, "-n", ns, helmruntime.PauseAnnotation+"=true")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		status, reason, _ := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Paused")
		g.Expect([]string{status, reason}).To(Equal([]string{"True", "PauseReconcileAnnotationTrue"}))
		status, reason, _ = env.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
		g.Expect([]string{status, reason}).To(Equal([]string{"Unknown", "Paused"}))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	t.Log("while paused: a spec edit waits, a hand-made change stays")
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"replicaCount":3}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	const handMade = "registry.invalid/hand-edited:latest"
	g.Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, key, d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = handMade
		return env.Client.Update(ctx, d)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ConsistOf(revisions))
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(*d.Spec.Replicas).To(Equal(int32(1)))
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(handMade))
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("resume: the edit is applied and the drift repaired at once")
	resumed := time.Now()
	out, err = env.Kubectl("annotate", "nginx", name, "-n", ns, helmruntime.PauseAnnotation+"-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(*d.Spec.Replicas).To(Equal(int32(3)))
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("nginxinc/nginx-unprivileged:1.27.3-alpine"))
		status, reason, _ := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Paused")
		g.Expect(status).To(Equal("False"), reason)
		status, reason, _ = env.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
		g.Expect([]string{status, reason}).To(Equal([]string{"True", "UpgradeSuccessful"}))
	}).WithTimeout(15 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("upgraded and repaired %s after the annotation went", time.Since(resumed).Round(time.Millisecond))
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ConsistOf(append(revisions, "sh.helm.release.v1."+name+".v2")))

	t.Log("a paused resource that is deleted is uninstalled")
	out, err = env.Kubectl("annotate", "nginx", name, "-n", ns, helmruntime.PauseAnnotation+"=true")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		status, _, _ := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Paused")
		g.Expect(status).To(Equal("True"))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	out, err = env.Kubectl("delete", "nginx", name, "-n", ns, "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		_, err := env.Get(ctx, testkit.NginxGVK, ns, name)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Nginx is still there: %v", err)
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key, &appsv1.Deployment{}))).To(BeTrue(), "the Deployment is still there")
		g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(BeEmpty())
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

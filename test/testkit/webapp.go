package testkit

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DBPassword reads the password of the database Secret (<name>-db) of the
// WebApp name in ns; that the Secret can be read is an expectation of g.
func (k *Kube) DBPassword(g Gomega, ns, name string) string {
	s := &corev1.Secret{}
	g.ExpectWithOffset(1, k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-db"}, s)).To(Succeed())
	return string(s.Data["password"])
}

// ExpectServing waits up to 4 minutes until the WebApp's app Deployment
// has replicas desired and all of them Ready (on a real node their
// readiness probe asks the database), and returns how long that took.
func (k *Kube) ExpectServing(t testing.TB, ns, name string, replicas int32) time.Duration {
	t.Helper()
	start := time.Now()
	NewWithT(t).Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		g.Expect(*dep.Spec.Replicas).To(Equal(replicas))
		g.Expect(DeploymentReady(dep)).To(BeTrue(), "status: %+v", dep.Status)
	}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return time.Since(start)
}

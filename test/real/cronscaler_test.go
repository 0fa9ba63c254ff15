package real

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
)

// runningPods counts the Running, Ready pods with label app=name.
func runningPods(g Gomega, ns, name string) int {
	var pods corev1.PodList
	g.ExpectWithOffset(1, cluster.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": name})).To(Succeed())
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// TestCronScalerRealPods: a CronScaler scales a real Deployment; real pods
// start, and stop again when the active job's count goes down.
func TestCronScalerRealPods(t *testing.T) {
	g := NewWithT(t)
	const ns = "real-cronscaler"
	cluster.CreateNamespace(t, ns)
	cluster.Apply(t, ns, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  replicas: 1
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 10001, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: %s
        env: [{name: DATABASE_HOST, value: 127.0.0.1}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, realnode.AppImage))
	g.Eventually(func() int { return runningPods(g, ns, "worker") }).
		WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Equal(1))

	scaler := func(replicas int) string {
		return fmt.Sprintf(`apiVersion: autoscaling.acme.com/v1alpha1
kind: CronScaler
metadata:
  name: worker
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}
  jobs:
  - {name: always, schedule: "* * * * *", replicas: %d}
`, replicas)
	}
	start := time.Now()
	cluster.Apply(t, ns, scaler(3))
	g.Eventually(func() int { return runningPods(g, ns, "worker") }).
		WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Equal(3))
	t.Logf("3 pods Ready %s after the CronScaler was applied", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	cluster.Apply(t, ns, scaler(1))
	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(cluster.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": "worker"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1), "the other pods are stopped and gone")
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	t.Logf("scaled down to 1 pod in %s", time.Since(start).Round(time.Millisecond))
}

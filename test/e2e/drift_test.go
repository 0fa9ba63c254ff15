package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/watchconfig"
	"github.com/acme/platform-operator/test/testkit"
)

const chartImage = "nginxinc/nginx-unprivileged:1.27.3-alpine"

// editDeployment changes the Deployment at key by hand, retrying on
// conflicts with the operator's writes.
func editDeployment(g Gomega, key client.ObjectKey, edit func(*appsv1.Deployment)) {
	g.Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(context.Background(), key, d); err != nil {
			return err
		}
		edit(d)
		return env.Client.Update(context.Background(), d)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func deploymentOf(g Gomega, key client.ObjectKey) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), key, d)).To(Succeed())
	return d
}

// TestDriftWarnMode: with the drift annotation at warn, a hand-made change
// is reported (Drifted=True naming the object and field, one Event) and
// left alone; undoing it by hand clears the condition; off neither reports
// nor repairs; back to repair, the change is repaired.
func TestDriftWarnMode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-drift-warn", "warned-nginx"
	env.CreateNamespace(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: name}
	env.Apply(t, ns, `{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: `+name+`, annotations: {`+watchconfig.DriftAnnotation+`: warn}}, spec: {replicaCount: 1}}`)
	g.Eventually(func(g Gomega) {
		status, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("warn: a changed image is reported, not repaired")
	const handMade = "registry.invalid/hand-edited:latest"
	editDeployment(g, key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = handMade })
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Drifted")
		g.Expect([]string{status, reason}).To(Equal([]string{"True", "DriftDetected"}), msg)
		g.Expect(msg).To(ContainSubstring("Deployment " + ns + "/" + name + ": spec.template.spec.containers[nginx].image"))
	}).WithTimeout(15 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(deploymentOf(g, key).Spec.Template.Spec.Containers[0].Image).To(Equal(handMade))
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	events, err := env.EventsWithReason(ctx, ns, name, "DriftDetected")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(events).To(HaveLen(1), "one Event for one drift")
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(HaveLen(1))

	t.Log("warn: undone by hand, the condition clears")
	editDeployment(g, key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = chartImage })
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Drifted")
		g.Expect([]string{status, reason}).To(Equal([]string{"False", "NoDrift"}), msg)
	}).WithTimeout(15 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Eventually(func() ([]string, error) { return env.EventsWithReason(ctx, ns, name, "DriftResolved") }).
		WithTimeout(5 * time.Second).Should(HaveLen(1))

	t.Log("off: no condition, no repair")
	out, err := env.Kubectl("annotate", "--overwrite", "nginx", name, "-n", ns, watchconfig.DriftAnnotation+"=off")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		status, _, _ := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Drifted")
		g.Expect(status).To(BeEmpty())
	}).WithTimeout(15 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	editDeployment(g, key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = handMade })
	g.Consistently(func(g Gomega) {
		g.Expect(deploymentOf(g, key).Spec.Template.Spec.Containers[0].Image).To(Equal(handMade))
		status, _, _ := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Drifted")
		g.Expect(status).To(BeEmpty())
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("repair: the change is repaired at once")
	out, err = env.Kubectl("annotate", "--overwrite", "nginx", name, "-n", ns, watchconfig.DriftAnnotation+"=repair")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(deploymentOf(g, key).Spec.Template.Spec.Containers[0].Image).To(Equal(chartImage))
	}).WithTimeout(15 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(HaveLen(1), "no mode change made a revision")
}

// TestDriftIgnoredField: a field named by an ignore rule (here the
// containers' resources, as a vertical autoscaler would own them) keeps its
// hand-made value while the rest of the object is repaired.
func TestDriftIgnoredField(t *testing.T) {
	g := NewWithT(t)
	const ns, name = "e2e-drift-ignore", "ignoring-nginx"
	env.CreateNamespace(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: name}
	env.Apply(t, ns, `
apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: `+name+`
  annotations:
    `+watchconfig.DriftIgnoreAnnotation+`: '[{kind: Deployment, paths: ["spec.template.spec.containers[*].resources"]}]'
spec:
  replicaCount: 1
  resources: {requests: {cpu: 50m}}
`)
	g.Eventually(func(g Gomega) {
		status, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	const handMade = "registry.invalid/hand-edited:latest"
	editDeployment(g, key, func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Image = handMade
		c.Resources.Requests["cpu"] = resource.MustParse("75m")
	})
	g.Eventually(func(g Gomega) {
		g.Expect(deploymentOf(g, key).Spec.Template.Spec.Containers[0].Image).To(Equal(chartImage))
	}).WithTimeout(15 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		c := deploymentOf(g, key).Spec.Template.Spec.Containers[0]
		g.Expect(c.Image).To(Equal(chartImage))
		g.Expect(c.Resources.Requests.Cpu().String()).To(Equal("75m"), "the ignored field keeps its hand-made value")
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

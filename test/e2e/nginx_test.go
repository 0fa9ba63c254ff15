package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// TestNginxLifecycle walks one Nginx resource through its whole life as a
// user sees it: apply, Available, upgrade, drift repair, operator restart,
// deletion.
func TestNginxLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-nginx-lifecycle", "nginx-sample"
	env.CreateNamespace(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: name}

	out, err := env.Kubectl("apply", "-n", ns, "-f", "config/samples/web_v1alpha1_nginx.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("create: the release is installed and the Deployment becomes Available with Running pods")
	g.Eventually(func(g Gomega) {
		status, reason, _ := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("InstallSuccessful"))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	dep := &appsv1.Deployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(testkit.DeploymentAvailable(dep)).To(BeTrue(), "deployment status: %+v", dep.Status)
	}).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("nginxinc/nginx-unprivileged:1.27.3-alpine"))
	g.Expect(dep.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))

	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(2))
	for _, p := range pods.Items {
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
	}
	g.Expect(env.Client.Get(ctx, key, &corev1.Service{})).To(Succeed())
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, key, cm)).To(Succeed())
	g.Expect(cm.Data).NotTo(BeEmpty())
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ConsistOf("sh.helm.release.v1." + name + ".v1"))

	t.Log("edit the spec: Helm upgrade to revision 2, the Deployment follows")
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"replicaCount":3,"image":{"tag":"1.27.2-alpine"}}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(*dep.Spec.Replicas).To(Equal(int32(3)))
		g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("nginxinc/nginx-unprivileged:1.27.2-alpine"))
		_, reason, _ := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
		g.Expect(reason).To(Equal("UpgradeSuccessful"))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ContainElement("sh.helm.release.v1." + name + ".v2"))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(testkit.DeploymentAvailable(dep)).To(BeTrue(), func() string { return rolloutSummary(ctx, dep) })
	}).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	t.Log("drift: a deleted Deployment is recreated within 5 s")
	oldUID := dep.UID
	g.Expect(env.Client.Delete(ctx, dep)).To(Succeed())
	deleted := time.Now()
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(d.UID).NotTo(Equal(oldUID))
		g.Expect(d.DeletionTimestamp).To(BeNil())
	}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("deleted Deployment recreated after %s", time.Since(deleted).Round(time.Millisecond))

	t.Log("drift: an image changed by hand is reverted")
	g.Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, key, d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "registry.invalid/hand-edited:latest"
		return env.Client.Update(ctx, d)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("nginxinc/nginx-unprivileged:1.27.2-alpine"))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	t.Log("restart the operator with no spec change: no new release revision")
	before, err := env.ReleaseRevisions(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.manager.stop()).To(Succeed())
	g.Expect(env.manager.start()).To(Succeed())
	// The restarted manager reconciles every resource once at start-up;
	// wait for that to have happened for this kind.
	g.Eventually(func() (float64, error) {
		return env.manager.metric("controller_runtime_reconcile_total", "controller=nginx-controller")
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(BeNumerically(">=", 1))
	g.Consistently(func() ([]string, error) {
		return env.ReleaseRevisions(ctx, ns, name)
	}).WithTimeout(3 * time.Second).Should(ConsistOf(before))
	cr, err := env.Get(ctx, testkit.NginxGVK, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	status, _, _ := testkit.Condition(cr, "Deployed")
	g.Expect(status).To(Equal("True"))

	t.Log("delete the resource: every release object and the release Secrets go")
	out, err = env.Kubectl("delete", "nginx", name, "-n", ns, "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		_, err := env.Get(ctx, testkit.NginxGVK, ns, name)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nginx still there: %v", err)
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.ServiceAccount{}} {
			err := env.Client.Get(ctx, key, obj)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T still there", obj)
		}
		g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(BeEmpty())
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// TestNginxInvalidSpecsRefused applies invalid resources with kubectl: each
// is refused by the API server with the field path, and nothing is created.
func TestNginxInvalidSpecsRefused(t *testing.T) {
	ctx := context.Background()
	const ns = "e2e-nginx-invalid"
	env.CreateNamespace(t, ns)

	cases := []struct {
		name string // resource name, unique per case
		spec string // the spec, as YAML indented under "spec:"
		want string // what the error must mention
	}{
		// replicaCount is an integer.
		{"wrong-type", `replicaCount: "three"`, `spec.replicaCount`},
		// Negative replica counts are refused by the schema's minimum.
		{"negative-replicas", `replicaCount: -1`, `spec.replicaCount`},
		// service.type is an enum.
		{"bad-enum", "service:\n    type: Bogus", `spec.service.type`},
		// Keys the chart does not define are refused, not silently dropped.
		{"unknown-field", `replicaCout: 2`, `replicaCout`},
		// Unknown keys inside a section too.
		{"unknown-nested-field", "image:\n    repo: nginx", `spec.image.repo`},
		// Ports are bounded.
		{"port-out-of-range", "service:\n    port: 70000", `spec.service.port`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectRefusedAtApply(t, testkit.NginxGVK, ns, tc.name, tc.spec, tc.want)
		})
	}
	var deps appsv1.DeploymentList
	NewWithT(t).Expect(env.Client.List(ctx, &deps, client.InNamespace(ns))).To(Succeed())
	NewWithT(t).Expect(deps.Items).To(BeEmpty())
}

// TestNginxWithoutSpec: an Nginx with no spec at all is the chart's
// defaults, as the admission check reads it: the API server gives it an
// empty spec, and the release installs.
func TestNginxWithoutSpec(t *testing.T) {
	g := NewWithT(t)
	const ns, name = "e2e-nginx-bare", "nginx-bare"
	env.CreateNamespace(t, ns)
	out, err := env.KubectlIn("apiVersion: web.acme.com/v1alpha1\nkind: Nginx\nmetadata: {name: "+name+"}\n", "apply", "-n", ns, "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectDeployed(t, testkit.NginxGVK, ns, name, "InstallSuccessful")
	out, err = env.Kubectl("get", "nginx", name, "-n", ns, "-o", "jsonpath={.spec}")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(HavePrefix("{"))
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
	g.Expect(*dep.Spec.Replicas).To(BeEquivalentTo(1), "the chart's default replica count")
}

// TestNginxFullSample applies the sample with every optional part on and
// checks each part is rendered, with the HorizontalPodAutoscaler owning the
// replica count.
func TestNginxFullSample(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-nginx-full", "nginx-full"
	env.CreateNamespace(t, ns)
	out, err := env.Kubectl("apply", "-n", ns, "-f", "config/samples/web_v1alpha1_nginx_full.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)

	g.Eventually(func(g Gomega) {
		status, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	key := client.ObjectKey{Namespace: ns, Name: name}
	for _, obj := range []client.Object{
		&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.ServiceAccount{},
		&networkingv1.Ingress{}, &policyv1.PodDisruptionBudget{}, &autoscalingv2.HorizontalPodAutoscaler{},
		&networkingv1.NetworkPolicy{},
	} {
		g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed(), "%T %s", obj, key)
	}
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
	g.Expect(dep.Spec.Template.Spec.Containers).To(HaveLen(2), "nginx and the metrics exporter")

	// The HPA owns the replica count: a scale by hand (as the HPA would do)
	// is not reverted by the operator.
	scaled := dep.DeepCopy()
	scaled.Spec.Replicas = ptr.To(int32(4))
	g.Expect(env.Client.Patch(ctx, scaled, client.MergeFrom(dep))).To(Succeed())
	g.Consistently(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(*d.Spec.Replicas).To(Equal(int32(4)))
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, key, cm)).To(Succeed())
	var conf strings.Builder
	for _, v := range cm.Data {
		conf.WriteString(v)
	}
	g.Expect(conf.String()).To(ContainSubstring("hello from nginx-full"))

	out, err = env.Kubectl("delete", "-n", ns, "-f", "config/samples/web_v1alpha1_nginx_full.yaml", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

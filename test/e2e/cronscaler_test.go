package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// How the CronScaler tests deal with time. They never wait for a real
// minute boundary. Schedules that must already have fired are chosen
// relative to the current time (every minute, or the current minute). Where
// a fire must happen while the test watches (a fire at a minute boundary,
// a fire missed while the sidecar was down), the sidecar is restarted with
// its hidden testing flag --cronscaler-clock-offset, which shifts only the
// CronScaler controller's clock: the test puts the sidecar's "now" a few
// seconds before (or after) a minute boundary M and schedules a job at M.
// Everything else (API server, watches, RequeueAfter sleeping) is real.

// cronJob is one entry of a CronScaler's spec.jobs.
type cronJob struct {
	name, schedule string
	replicas       int
}

// cronScalerManifest renders a CronScaler; extra is YAML indented under
// spec (e.g. "suspend: true").
func cronScalerManifest(name, apiVersion, kind, target string, jobs []cronJob, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: autoscaling.acme.com/v1alpha1\nkind: CronScaler\nmetadata:\n  name: %s\nspec:\n", name)
	fmt.Fprintf(&b, "  scaleTargetRef: {apiVersion: %s, kind: %s, name: %s}\n  jobs:\n", apiVersion, kind, target)
	for _, j := range jobs {
		fmt.Fprintf(&b, "  - {name: %s, schedule: %q, replicas: %d}\n", j.name, j.schedule, j.replicas)
	}
	if extra != "" {
		b.WriteString("  " + strings.ReplaceAll(extra, "\n", "\n  ") + "\n")
	}
	return b.String()
}

// minuteCron is a daily schedule firing at t's minute (UTC).
func minuteCron(t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%d %d * * *", t.Minute(), t.Hour())
}

// newDeployment is a small Deployment whose pods kwok runs.
func newDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: kptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
}

func newStatefulSet(ns, name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: kptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}
}

// newHPA is an HPA on a Deployment; kube-controller-manager runs it, but
// without a metrics server it never changes the Deployment.
func newHPA(ns, name, deployment string, min, max int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment},
			MinReplicas:    kptr.To(min),
			MaxReplicas:    max,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: kptr.To[int32](80)},
			}}},
		},
	}
}

// specReplicas reads spec.replicas of a Deployment or StatefulSet.
func specReplicas(ctx context.Context, obj client.Object) (int32, error) {
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return -1, err
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return kptr.Deref(o.Spec.Replicas, 1), nil
	case *appsv1.StatefulSet:
		return kptr.Deref(o.Spec.Replicas, 1), nil
	}
	return -1, fmt.Errorf("unexpected %T", obj)
}

// hpaBounds reads an HPA's minReplicas and maxReplicas.
func hpaBounds(ctx context.Context, ns, name string) ([2]int32, error) {
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, h); err != nil {
		return [2]int32{}, err
	}
	return [2]int32{kptr.Deref(h.Spec.MinReplicas, 1), h.Spec.MaxReplicas}, nil
}

// restartExtensionsAt restarts the sidecar with its CronScaler clock set so
// that it reads virtualNow at the moment of the restart; a zero virtualNow
// restarts it on the real clock.
func restartExtensionsAt(t *testing.T, virtualNow time.Time) {
	t.Helper()
	if err := env.extensions.stop(); err != nil {
		t.Fatalf("stopping the sidecar: %v", err)
	}
	env.extensions.args = nil
	if !virtualNow.IsZero() {
		env.extensions.args = []string{"--cronscaler-clock-offset", time.Until(virtualNow).String()}
	}
	if err := env.extensions.start(); err != nil {
		t.Fatalf("starting the sidecar: %v", err)
	}
	// Return once it leads. A sidecar stopped while it takes the lease
	// may have written the lease and not release it, and its successor
	// would then wait out the lease (15 s) before it scales anything.
	deadline := time.Now().Add(time.Minute)
	for {
		leads, err := env.extensions.metric("leader_election_master_status")
		if err == nil && leads == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sidecar did not take the lease within a minute (last: %v, %v)", leads, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCronScalerScalesAndOwnsTheCount creates a CronScaler on a Deployment:
// the active job's count is applied at once, status and printer columns
// report it, a count changed by hand is put back, and suspend stops all of
// that until it is lifted.
func TestCronScalerScalesAndOwnsTheCount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "e2e-cronscaler-owns"
	env.CreateNamespace(t, ns)
	dep := newDeployment(ns, "web", 1)
	g.Expect(env.Client.Create(ctx, dep)).To(Succeed())

	t.Log("create: a job that fires every minute has always fired, so its count applies at once")
	env.ExpectApply(g, ns, cronScalerManifest("web", "apps/v1", "Deployment", "web",
		[]cronJob{{"yearly", "@yearly", 1}, {"every-minute", "* * * * *", 3}}, ""))
	g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
		WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(3)))
	g.Eventually(func(g Gomega) {
		cs, err := env.Get(ctx, testkit.CronScalerGVK, ns, "web")
		g.Expect(err).NotTo(HaveOccurred())
		status, reason, msg := testkit.Condition(cs, "Ready")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("Scaled"))
		g.Expect(msg).To(ContainSubstring("Deployment/web has 3 replicas"))
		g.Expect(cs.Object["status"]).To(And(
			HaveKeyWithValue("activeJob", "every-minute"),
			HaveKeyWithValue("desiredReplicas", BeEquivalentTo(3)),
			HaveKeyWithValue("observedGeneration", BeEquivalentTo(1)),
			HaveKey("lastScaleTime"),
			HaveKey("nextScheduleTime"),
		))
		jobs, _, _ := unstructured.NestedSlice(cs.Object, "status", "jobs")
		g.Expect(jobs).To(HaveLen(2))
		g.Expect(jobs[1]).To(And(HaveKeyWithValue("name", "every-minute"), HaveKey("lastScheduleTime"), HaveKey("nextScheduleTime")))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Eventually(func() ([]string, error) { return env.EventReasons(ctx, ns, "web") }).
		WithTimeout(10 * time.Second).Should(ContainElement("Scaled"))
	out, err := env.Kubectl("get", "cronscalers", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`NAME\s+TARGET\s+ACTIVE JOB\s+REPLICAS\s+NEXT FIRE\s+READY\s+AGE`))
	g.Expect(out).To(MatchRegexp(`web\s+web\s+every-minute\s+3\s+\d{4}-`))
	out, err = env.Kubectl("get", "cs", "-n", ns) // short name
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("drift: a count changed by hand is put back, like an HPA would")
	driftBefore, err := env.extensions.metric("cronscaler_scales_total", "trigger=drift", "result=success")
	g.Expect(err).NotTo(HaveOccurred())
	out, err = env.Kubectl("scale", "deployment/web", "-n", ns, "--replicas=6")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
		WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal(int32(3)))
	g.Eventually(func() ([]string, error) { return env.EventReasons(ctx, ns, "web") }).
		WithTimeout(5 * time.Second).Should(ContainElement("DriftCorrected"))
	g.Expect(env.extensions.metric("cronscaler_scales_total", "trigger=drift", "result=success")).To(BeNumerically(">", driftBefore))

	t.Log("suspend: Ready=False/Suspended and a count changed by hand stays")
	out, err = env.Kubectl("patch", "cronscaler", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		status, reason, _ := env.ConditionOf(g, testkit.CronScalerGVK, ns, "web", "Ready")
		g.Expect([]string{status, reason}).To(Equal([]string{"False", "Suspended"}))
	}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	out, err = env.Kubectl("scale", "deployment/web", "-n", ns, "--replicas=6")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Consistently(func() (int32, error) { return specReplicas(ctx, dep) }).
		WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(int32(6)))

	t.Log("unsuspend: the active job's count applies again at once")
	out, err = env.Kubectl("patch", "cronscaler", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
		WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(3)))
}

// TestCronScalerFiresOnSchedule scales a Deployment, a StatefulSet, an HPA's
// minReplicas and an Nginx (through its chart's cronScaling) at a minute
// boundary M the sidecar's clock reaches while the test watches, then
// checks that an upgrade of the Nginx release keeps the count.
func TestCronScalerFiresOnSchedule(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "e2e-cronscaler-fires"
	env.CreateNamespace(t, ns)

	// The sidecar's clock reads M-20s now; setup takes a few seconds (more
	// on a loaded machine: the base job must be applied everywhere before M).
	m := time.Now().Truncate(time.Minute).Add(5 * time.Minute)
	restartExtensionsAt(t, m.Add(-20*time.Second))
	realM := time.Now().Add(time.Until(m) - mustOffset(t))
	defer restartExtensionsAt(t, time.Time{})
	jobs := func(base, up int) []cronJob {
		return []cronJob{{"base", minuteCron(m.Add(-time.Minute)), base}, {"up", minuteCron(m), up}}
	}

	dep := newDeployment(ns, "web", 1)
	sts := newStatefulSet(ns, "db", 1)
	hpaDep := newDeployment(ns, "api", 1)
	for _, o := range []client.Object{dep, sts, hpaDep, newHPA(ns, "api", "api", 1, 3)} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
	env.ExpectApply(g, ns, cronScalerManifest("web", "apps/v1", "Deployment", "web", jobs(2, 4), ""))
	env.ExpectApply(g, ns, cronScalerManifest("db", "apps/v1", "StatefulSet", "db", jobs(2, 3), ""))
	env.ExpectApply(g, ns, cronScalerManifest("api", "autoscaling/v2", "HorizontalPodAutoscaler", "api", jobs(2, 5), ""))
	env.ExpectApply(g, ns, fmt.Sprintf(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: site-nginx
spec:
  cronScaling:
    enabled: true
    jobs:
    - {name: base, schedule: %q, replicas: 2}
    - {name: up, schedule: %q, replicas: 3}
`, minuteCron(m.Add(-time.Minute)), minuteCron(m)))
	site := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site-nginx"}}

	t.Log("before M: the base job (fired at M-1min) is active everywhere")
	g.Eventually(func(g Gomega) {
		g.Expect(specReplicas(ctx, dep)).To(Equal(int32(2)))
		g.Expect(specReplicas(ctx, sts)).To(Equal(int32(2)))
		g.Expect(hpaBounds(ctx, ns, "api")).To(Equal([2]int32{2, 3}))
		g.Expect(specReplicas(ctx, site)).To(Equal(int32(2)))
	}).WithTimeout(time.Until(realM)).WithPolling(200 * time.Millisecond).Should(Succeed())
	lagBefore, err := env.extensions.metric("cronscaler_scale_lag_seconds_count")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("the sidecar's clock reaches M in %s", time.Until(realM).Round(time.Millisecond))

	t.Log("at M: the up job fires; every target follows within 2 s")
	g.Eventually(func(g Gomega) {
		g.Expect(specReplicas(ctx, dep)).To(Equal(int32(4)))
		g.Expect(specReplicas(ctx, sts)).To(Equal(int32(3)))
		// minReplicas 5 is above maxReplicas 3, so maxReplicas is raised.
		g.Expect(hpaBounds(ctx, ns, "api")).To(Equal([2]int32{5, 5}))
		g.Expect(specReplicas(ctx, site)).To(Equal(int32(3)))
	}).WithTimeout(time.Until(realM) + 2*time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	t.Logf("all targets scaled %s after M", time.Since(realM).Round(time.Millisecond))
	// One lag observation per CronScaler for the fire at M, each within 1 s.
	g.Eventually(func() (float64, error) { return env.extensions.metric("cronscaler_scale_lag_seconds_count") }).
		WithTimeout(5 * time.Second).Should(BeNumerically(">=", lagBefore+4))
	// The status and Event of a fire follow the scale once no reconcile
	// has been in flight for a second (docs/cronscaler.md).
	g.Eventually(func(g Gomega) {
		cs, err := env.Get(ctx, testkit.CronScalerGVK, ns, "web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cs.Object["status"]).To(And(
			HaveKeyWithValue("activeJob", "up"),
			HaveKeyWithValue("desiredReplicas", BeEquivalentTo(4)),
			HaveKeyWithValue("appliedScheduleTime", m.UTC().Format(time.RFC3339)),
			// Next: the base job tomorrow, a minute before M.
			HaveKeyWithValue("nextScheduleTime", m.Add(24*time.Hour-time.Minute).UTC().Format(time.RFC3339)),
		))
		g.Expect(env.EventReasons(ctx, ns, "api")).To(ContainElement("Scaled"))
	}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	t.Log("the Nginx chart's CronScaler is part of the release and its Deployment has no chart-set replicas")
	chartCS, err := env.Get(ctx, testkit.CronScalerGVK, ns, "site-nginx")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chartCS.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))

	t.Log("upgrade the Nginx release: the count the CronScaler set stays")
	out, err := env.Kubectl("patch", "nginx", "site-nginx", "-n", ns, "--type=merge", "-p", `{"spec":{"podAnnotations":{"rollout":"2"}}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(site), site)).To(Succeed())
		g.Expect(site.Spec.Template.Annotations).To(HaveKeyWithValue("rollout", "2"))
		g.Expect(env.ReleaseRevisions(ctx, ns, "site-nginx")).To(ContainElement("sh.helm.release.v1.site-nginx.v2"))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Consistently(func() (int32, error) { return specReplicas(ctx, site) }).
		WithTimeout(3 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(3)))
	t.Log("restart the manager (a full reconcile of every release): the count stays")
	g.Expect(env.manager.stop()).To(Succeed())
	g.Expect(env.manager.start()).To(Succeed())
	g.Consistently(func() (int32, error) { return specReplicas(ctx, site) }).
		WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(3)))
}

// mustOffset is the clock offset the sidecar currently runs with.
func mustOffset(t *testing.T) time.Duration {
	t.Helper()
	if len(env.extensions.args) != 2 {
		return 0
	}
	d, err := time.ParseDuration(env.extensions.args[1])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCronScalerCatchUpAfterRestart stops the sidecar before a job's fire
// time and starts it after: the missed job applies at once on start-up.
func TestCronScalerCatchUpAfterRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "e2e-cronscaler-catchup"
	env.CreateNamespace(t, ns)
	m := time.Now().Truncate(time.Minute).Add(10 * time.Minute)
	restartExtensionsAt(t, m.Add(-30*time.Second))
	defer restartExtensionsAt(t, time.Time{})

	dep := newDeployment(ns, "web", 1)
	g.Expect(env.Client.Create(ctx, dep)).To(Succeed())
	env.ExpectApply(g, ns, cronScalerManifest("web", "apps/v1", "Deployment", "web",
		[]cronJob{{"base", minuteCron(m.Add(-time.Minute)), 2}, {"missed", minuteCron(m), 5}}, ""))
	g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
		WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(2)))

	t.Log("the sidecar is down while M passes; on start it applies the missed job")
	restartExtensionsAt(t, m.Add(3*time.Second))
	started := time.Now()
	g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
		WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal(int32(5)))
	t.Logf("missed job applied %s after the sidecar started", time.Since(started).Round(time.Millisecond))
	g.Eventually(func(g Gomega) {
		cs, err := env.Get(ctx, testkit.CronScalerGVK, ns, "web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cs.Object["status"]).To(And(
			HaveKeyWithValue("activeJob", "missed"),
			HaveKeyWithValue("appliedScheduleTime", m.UTC().Format(time.RFC3339)),
		))
	}).WithTimeout(5 * time.Second).Should(Succeed())
	// The catch-up is counted as a late fire: the lag histogram saw it.
	g.Expect(env.extensions.metric("cronscaler_scale_lag_seconds_count")).To(BeNumerically(">=", 1))
}

// TestCronScalerRestoreOnDelete deletes CronScalers with restoreOnDelete:
// a Deployment gets its original count back, an HPA its original bounds.
func TestCronScalerRestoreOnDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "e2e-cronscaler-restore"
	env.CreateNamespace(t, ns)
	dep := newDeployment(ns, "web", 2)
	hpaDep := newDeployment(ns, "api", 1)
	for _, o := range []client.Object{dep, hpaDep, newHPA(ns, "api", "api", 1, 3)} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
	every := func(n int) []cronJob { return []cronJob{{"always", "* * * * *", n}} }
	env.ExpectApply(g, ns, cronScalerManifest("web", "apps/v1", "Deployment", "web", every(4), "restoreOnDelete: true"))
	env.ExpectApply(g, ns, cronScalerManifest("api", "autoscaling/v2", "HorizontalPodAutoscaler", "api", every(5), "restoreOnDelete: true"))

	g.Eventually(func(g Gomega) {
		g.Expect(specReplicas(ctx, dep)).To(Equal(int32(4)))
		g.Expect(hpaBounds(ctx, ns, "api")).To(Equal([2]int32{5, 5}))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	for name, want := range map[string]map[string]string{
		"web": {"autoscaling.acme.com/original-replicas": "2"},
		"api": {"autoscaling.acme.com/original-replicas": "1", "autoscaling.acme.com/original-max-replicas": "3"},
	} {
		cs, err := env.Get(ctx, testkit.CronScalerGVK, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cs.GetFinalizers()).To(ContainElement("autoscaling.acme.com/restore-replicas"), name)
		for k, v := range want {
			g.Expect(cs.GetAnnotations()).To(HaveKeyWithValue(k, v), name)
		}
	}

	t.Log("delete: the originals come back, then the CronScalers go")
	for _, name := range []string{"web", "api"} {
		out, err := env.Kubectl("delete", "cronscaler", name, "-n", ns, "--wait=false")
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(specReplicas(ctx, dep)).To(Equal(int32(2)))
		g.Expect(hpaBounds(ctx, ns, "api")).To(Equal([2]int32{1, 3}))
		for _, name := range []string{"web", "api"} {
			_, err := env.Get(ctx, testkit.CronScalerGVK, ns, name)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s still there: %v", name, err)
		}
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(env.EventReasons(ctx, ns, "web")).To(ContainElement("Restored"))

	t.Log("without restoreOnDelete there is no finalizer and the count stays")
	env.ExpectApply(g, ns, cronScalerManifest("web", "apps/v1", "Deployment", "web", every(4), ""))
	g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
		WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(4)))
	cs, err := env.Get(ctx, testkit.CronScalerGVK, ns, "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.GetFinalizers()).To(BeEmpty())
	out, err := env.Kubectl("delete", "cronscaler", "web", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Consistently(func() (int32, error) { return specReplicas(ctx, dep) }).
		WithTimeout(2 * time.Second).Should(Equal(int32(4)))
}

// TestCronScalerInvalidInputs: what the schema can express is refused at
// apply with the field path; what only code can check gives Ready=False
// with a precise message and a Warning event, retried with backoff, not in
// a hot loop.
func TestCronScalerInvalidInputs(t *testing.T) {
	ctx := context.Background()
	const ns = "e2e-cronscaler-invalid"
	env.CreateNamespace(t, ns)
	ok := []cronJob{{"a", "@daily", 1}}

	refused := []struct {
		name     string
		manifest string
		want     string // in kubectl's error
	}{
		// No jobs at all.
		{"no-jobs", "apiVersion: autoscaling.acme.com/v1alpha1\nkind: CronScaler\nmetadata: {name: no-jobs}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n", "spec.jobs: Required value"},
		// No target.
		{"no-target", "apiVersion: autoscaling.acme.com/v1alpha1\nkind: CronScaler\nmetadata: {name: no-target}\nspec:\n  jobs: [{name: a, schedule: '@daily', replicas: 1}]\n", "spec.scaleTargetRef: Required value"},
		// Job names are list-map keys: duplicates are refused.
		{"dup-jobs", cronScalerManifest("dup-jobs", "apps/v1", "Deployment", "web", []cronJob{{"a", "@daily", 1}, {"a", "@hourly", 2}}, ""), `Duplicate value`},
		// Replicas are >= 0.
		{"negative", cronScalerManifest("negative", "apps/v1", "Deployment", "web", []cronJob{{"a", "@daily", -1}}, ""), "spec.jobs[0].replicas"},
		// Cron field syntax by pattern: words, six fields, @every.
		{"words", cronScalerManifest("words", "apps/v1", "Deployment", "web", []cronJob{{"a", "every day", 1}}, ""), "spec.jobs[0].schedule"},
		{"six-fields", cronScalerManifest("six-fields", "apps/v1", "Deployment", "web", []cronJob{{"a", "0 0 8 * * *", 1}}, ""), "spec.jobs[0].schedule"},
		{"every", cronScalerManifest("every", "apps/v1", "Deployment", "web", []cronJob{{"a", "@every 1h", 1}}, ""), "spec.jobs[0].schedule"},
		// Job names are DNS labels.
		{"bad-job-name", cronScalerManifest("bad-job-name", "apps/v1", "Deployment", "web", []cronJob{{"Up_Job", "@daily", 1}}, ""), "spec.jobs[0].name"},
		// Zone names are IANA-shaped and not Local.
		{"zone-shape", cronScalerManifest("zone-shape", "apps/v1", "Deployment", "web", ok, "timeZone: ../etc/passwd"), "spec.timeZone"},
		{"zone-local", cronScalerManifest("zone-local", "apps/v1", "Deployment", "web", ok, "timeZone: Local"), "timeZone must name an IANA zone"},
		// Excluded dates are dates.
		{"bad-date", cronScalerManifest("bad-date", "apps/v1", "Deployment", "web", ok, "excludeDates: [2026-13-01]"), "spec.excludeDates[0]"},
		{"dup-date", cronScalerManifest("dup-date", "apps/v1", "Deployment", "web", ok, "excludeDates: [2026-12-25, 2026-12-25]"), "Duplicate value"},
		// Unknown fields are refused, not dropped.
		{"unknown-field", cronScalerManifest("unknown-field", "apps/v1", "Deployment", "web", ok, "timezone: UTC"), `unknown field "spec.timezone"`},
		{"unknown-target-field", strings.Replace(cronScalerManifest("unknown-target-field", "apps/v1", "Deployment", "web", ok, ""), "name: web}", "name: web, namespace: other}", 1), `unknown field "spec.scaleTargetRef.namespace"`},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := env.KubectlIn(tc.manifest, "apply", "-n", ns, "-f", "-")
			g.Expect(err).To(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring(tc.want))
			_, getErr := env.Get(ctx, testkit.CronScalerGVK, ns, tc.name)
			g.Expect(apierrors.IsNotFound(getErr)).To(BeTrue())
		})
	}

	reported := []struct {
		name     string
		manifest string
		reason   string // of Ready=False and the Warning event
		message  string // in the condition message
	}{
		// Passes the pattern, but 61 is not a minute.
		{"bad-minute", cronScalerManifest("bad-minute", "apps/v1", "Deployment", "web", []cronJob{{"a", "61 * * * *", 1}}, ""),
			"InvalidSpec", `job "a": schedule "61 * * * *": end of range (61) above maximum (59)`},
		// IANA-shaped but unknown.
		{"unknown-zone", cronScalerManifest("unknown-zone", "apps/v1", "Deployment", "zone-web", ok, "timeZone: Mars/Olympus_Mons"),
			"InvalidSpec", `timeZone "Mars/Olympus_Mons" is not a known IANA time zone`},
		// No such Deployment (yet).
		{"missing-target", cronScalerManifest("missing-target", "apps/v1", "Deployment", "ghost", []cronJob{{"a", "* * * * *", 2}}, ""),
			"TargetNotFound", "Deployment ghost not found in namespace " + ns},
		// ConfigMaps have no /scale; the operator's least-privilege RBAC
		// refuses configmaps/scale before the API server would say so.
		{"not-scalable", cronScalerManifest("not-scalable", "v1", "ConfigMap", "kube-root-ca.crt", ok, ""),
			"TargetNotScalable", "ConfigMap kube-root-ca.crt: access to its /scale subresource is forbidden: the kind has no /scale subresource"},
		// A kind the API server does not know.
		{"unknown-kind", cronScalerManifest("unknown-kind", "example.com/v1", "Widget", "w", ok, ""),
			"TargetNotScalable", "no kind Widget in example.com/v1"},
	}
	for _, tc := range reported {
		t.Run("reported/"+tc.name, func(t *testing.T) {
			g := NewWithT(t)
			env.ExpectApply(g, ns, tc.manifest)
			g.Eventually(func(g Gomega) {
				status, reason, msg := env.ConditionOf(g, testkit.CronScalerGVK, ns, tc.name, "Ready")
				g.Expect(status).To(Equal("False"))
				g.Expect(reason).To(Equal(tc.reason))
				g.Expect(msg).To(ContainSubstring(tc.message))
			}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
			g.Eventually(func() ([]string, error) { return env.EventReasons(ctx, ns, tc.name) }).
				WithTimeout(5 * time.Second).Should(ContainElement(tc.reason))
		})
	}

	t.Run("no hot loop", func(t *testing.T) {
		g := NewWithT(t)
		// Three of the objects above keep failing; with a backoff starting at
		// 1 s and doubling they are retried a handful of times in 5 s.
		before, err := env.extensions.metric("controller_runtime_reconcile_total", "controller=cronscaler")
		g.Expect(err).NotTo(HaveOccurred())
		time.Sleep(5 * time.Second)
		after, err := env.extensions.metric("controller_runtime_reconcile_total", "controller=cronscaler")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(after - before).To(BeNumerically("<", 20))
	})

	t.Run("target created later", func(t *testing.T) {
		g := NewWithT(t)
		// The Deployment watch notices the new target; no waiting for the
		// backoff.
		dep := newDeployment(ns, "ghost", 1)
		g.Expect(env.Client.Create(ctx, dep)).To(Succeed())
		g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
			WithTimeout(3 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal(int32(2)))
		g.Eventually(func(g Gomega) {
			status, reason, _ := env.ConditionOf(g, testkit.CronScalerGVK, ns, "missing-target", "Ready")
			g.Expect([]string{status, reason}).To(Equal([]string{"True", "Scaled"}))
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})

	t.Run("fixing the spec clears the error", func(t *testing.T) {
		g := NewWithT(t)
		out, err := env.Kubectl("patch", "cronscaler", "unknown-zone", "-n", ns, "--type=merge", "-p", `{"spec":{"timeZone":"Europe/Berlin"}}`)
		g.Expect(err).NotTo(HaveOccurred(), out)
		// The target "zone-web" does not exist in this namespace: now that the
		// spec parses, the next problem is reported.
		g.Eventually(func(g Gomega) {
			_, reason, _ := env.ConditionOf(g, testkit.CronScalerGVK, ns, "unknown-zone", "Ready")
			g.Expect(reason).To(Equal("TargetNotFound"))
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})
}

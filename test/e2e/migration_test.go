package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/process"
	"github.com/acme/platform-operator/test/testkit"
)

// migrationReleases is how many releases operator-sdk's helm-operator
// installs before the switch.
const migrationReleases = 50

// releaseState is what must not change when this operator takes over a
// release: its revision, its Deployment's UID and generation, its Pods.
type releaseState struct {
	revision       int
	deploymentUID  types.UID
	generation     int64
	podUIDs        []types.UID
	podTemplateRev string
}

// TestMigrateFromOperatorSDK: operator-sdk v1.42.2's helm-operator
// (bin/helm-operator, built from the pinned module) installs releases of
// the nginx chart; it is stopped and this operator started on the same
// resources. Every release keeps its revision, every Deployment its UID
// and generation, every Pod its UID; a later spec edit upgrades as usual.
func TestMigrateFromOperatorSDK(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	sdkBin := filepath.Join(env.Root, "bin", "helm-operator")
	if _, err := os.Stat(sdkBin); err != nil {
		t.Fatalf("operator-sdk's helm-operator is built by make test (make bin/helm-operator): %v", err)
	}
	const ns = "e2e-migration"
	env.CreateNamespace(t, ns)

	// operator-sdk's helm-operator runs as it did before the switch: the
	// same chart and kind, a watches file of its own restricted to this
	// test's resources (so it leaves the other tests' releases alone).
	g.Expect(env.manager.stop()).To(Succeed())
	t.Cleanup(func() {
		if env.manager.proc == nil {
			if err := env.manager.start(); err != nil {
				t.Errorf("restarting the suite's runtime: %v", err)
			}
		}
	})
	watches := filepath.Join(t.TempDir(), "watches.yaml")
	g.Expect(os.WriteFile(watches, []byte(fmt.Sprintf(`
- group: web.acme.com
  version: v1alpha1
  kind: Nginx
  chart: %s
  selector: {matchLabels: {migration: e2e}}
`, filepath.Join(env.Root, "helm-charts", "nginx"))), 0o600)).To(Succeed())
	metricsAddr, err := process.FreeAddr()
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(sdkBin, "run", "--watches-file", watches, "--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", "0", "--max-concurrent-reconciles", "8")
	cmd.Dir = env.Root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.cluster.Kubeconfig)
	sdk, err := process.Start("sdk-helm-operator", cmd, metricsAddr, filepath.Join(filepath.Dir(env.manager.logPath), "sdk-helm-operator.log"), 60*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sdk.Stop(30 * time.Second) })

	names := make([]string, migrationReleases)
	for i := range names {
		names[i] = fmt.Sprintf("site-%02d", i)
		env.Apply(t, ns, `{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: `+names[i]+`, labels: {migration: e2e}}, spec: {replicaCount: 1}}`)
	}
	installed := time.Now()
	before := map[string]releaseState{}
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			status, reason, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
			g.Expect([]string{status, reason}).To(Equal([]string{"True", "InstallSuccessful"}), "%s: %s", name, msg)
			before[name] = readReleaseState(ctx, g, ns, name)
			cr, err := env.Get(ctx, testkit.NginxGVK, ns, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cr.GetFinalizers()).To(Equal([]string{sdkFinalizer}))
		}
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("operator-sdk's helm-operator installed %d releases in %s", len(names), time.Since(installed).Round(time.Second))
	g.Expect(sdk.Stop(30 * time.Second)).To(Succeed())

	t.Log("this operator takes over: every release is judged, none upgraded")
	switched := time.Now()
	g.Expect(env.manager.start()).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			status, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Ready")
			g.Expect(status).To(Equal("True"), "%s: %s", name, msg)
		}
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("every resource Ready under this operator %s after it started", time.Since(switched).Round(time.Second))
	// The resources were all judged Ready; a few seconds more let any
	// upgrade those reconciles started land before the comparison.
	g.Consistently(func(g Gomega) {
		for _, name := range names {
			g.Expect(readReleaseState(ctx, g, ns, name)).To(Equal(before[name]), name)
		}
	}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())

	for _, name := range names {
		cr, err := env.Get(ctx, testkit.NginxGVK, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cr.GetFinalizers()).To(Equal([]string{"uninstall-helm-release"}), "operator-sdk's finalizer gave way to this operator's")
	}

	t.Log("a spec edit after the switch upgrades as usual")
	name := names[0]
	out, err := env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"replicaCount":2}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		s := readReleaseState(ctx, g, ns, name)
		g.Expect(s.revision).To(Equal(before[name].revision + 1))
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-nginx"}, d)).To(Succeed())
		g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("a resource operator-sdk installed is uninstalled when deleted")
	out, err = env.Kubectl("delete", "nginx", names[1], "-n", ns, "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(env.ReleaseRevisions(ctx, ns, names[1])).To(BeEmpty())
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[1] + "-nginx"}, &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Deployment is still there: %v", err)
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// sdkFinalizer is operator-sdk's Helm operator's uninstall finalizer.
const sdkFinalizer = "helm.sdk.operatorframework.io/uninstall-release"

// readReleaseState reads the latest revision of release name and the state
// of its Deployment and Pods (the Deployment must have its one Pod).
func readReleaseState(ctx context.Context, g Gomega, ns, name string) releaseState {
	var secrets corev1.SecretList
	g.Expect(env.Client.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
	var s releaseState
	for _, sec := range secrets.Items {
		v, err := strconv.Atoi(sec.Labels["version"])
		g.Expect(err).NotTo(HaveOccurred())
		s.revision = max(s.revision, v)
	}
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-nginx"}, d)).To(Succeed())
	s.deploymentUID, s.generation = d.UID, d.Generation
	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(d.Spec.Selector.MatchLabels))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(int(*d.Spec.Replicas)), "the Pods of %s", name)
	for _, p := range pods.Items {
		s.podUIDs = append(s.podUIDs, p.UID)
		s.podTemplateRev = p.Labels["pod-template-hash"]
	}
	return s
}

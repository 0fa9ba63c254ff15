package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// The chart rollout tests run a kind of their own, RolloutNginx, backed by
// copies of the nginx chart at three versions, on manager processes of
// their own: an operator upgrade is a new process whose watches file makes
// another version the default.

var rolloutGVK = schema.GroupVersionKind{Group: "rollout.test.acme.com", Version: "v1alpha1", Kind: "RolloutNginx"}

var chartRolloutGVK = schema.GroupVersionKind{Group: "platform.acme.com", Version: "v1alpha1", Kind: "ChartRollout"}

// rolloutSetup writes the three chart versions and the kind's CRD and
// RBAC into a temporary directory, applies the CRD and RBAC, and returns
// the directory. 0.3.0 renders Pods no node takes until a node carries
// the label testkit.UnschedulableLabel=true.
func rolloutSetup(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join("..", "..")
	for _, v := range []string{"0.1.0", "0.2.0", "0.3.0"} {
		testkit.NginxVersion(t, root, dir, v, v == "0.3.0")
	}
	crd, crdName := testkit.NginxKindCRD(t, root, dir, rolloutGVK.Group, rolloutGVK.Kind, "rolloutnginxes")
	rbac := filepath.Join(dir, "rbac.yaml")
	if err := os.WriteFile(rbac, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: platform-operator-rollout-test
rules:
- apiGroups: [rollout.test.acme.com]
  resources: [rolloutnginxes, rolloutnginxes/status, rolloutnginxes/finalizers]
  verbs: [get, list, watch, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: platform-operator-rollout-test
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: platform-operator-rollout-test
subjects:
- kind: ServiceAccount
  name: platform-operator-controller-manager
  namespace: platform-operator-system
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := env.Kubectl("apply", "-f", crd, "-f", rbac)
	if err != nil {
		t.Fatalf("installing the RolloutNginx kind: %v\n%s", err, out)
	}
	if out, err := env.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "crd/"+crdName); err != nil {
		t.Fatalf("waiting for the RolloutNginx CRD: %v\n%s", err, out)
	}
	return dir
}

// startRolloutManager starts a manager that reconciles RolloutNginx with
// chart version def as the default and the others shipped beside it.
func startRolloutManager(t *testing.T, dir, name, def string, others ...string) *operatorProcess {
	t.Helper()
	var paths []string
	for _, o := range others {
		paths = append(paths, filepath.Join(dir, "nginx-"+o))
	}
	// Long enough for 100 upgrades at once on two cores; the canary of
	// the broken version has a short timeout of its own (annotation).
	watches := testkit.RolloutWatches(rolloutGVK.Group, rolloutGVK.Kind, filepath.Join(dir, "nginx-"+def), paths, "3m", "")
	watchesFile := filepath.Join(dir, "watches-"+name+".yaml")
	if err := os.WriteFile(watchesFile, []byte(watches), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &operatorProcess{
		name: "manager-" + name, bin: env.manager.bin,
		logPath:    filepath.Join(filepath.Dir(env.manager.logPath), fmt.Sprintf("%s-manager-%s.log", strings.ReplaceAll(t.Name(), "/", "-"), name)),
		kubeconfig: env.manager.kubeconfig,
		fixedArgs: []string{
			"--watches-file", watchesFile,
			"--leader-elect", "--leader-election-namespace", operatorNamespace, "--leader-election-id", "rollout-test.acme.com",
			"--max-concurrent-reconciles", "8", "--release-service-account", releaseServiceAccount,
		},
	}
	if err := p.start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	t.Cleanup(func() { _ = p.stop() })
	return p
}

// revisionCounts counts the stored revisions of each release of ns.
func revisionCounts(ctx context.Context, ns string) (map[string]int, error) {
	var list corev1.SecretList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"}); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, s := range list.Items {
		out[s.Labels["name"]]++
	}
	return out, nil
}

// chartVersions maps each RolloutNginx of ns to status.chartVersion.
func chartVersions(ctx context.Context, ns string) (map[string]string, error) {
	items, err := env.List(ctx, rolloutGVK, ns)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, u := range items {
		v, _, _ := unstructured.NestedString(u.Object, "status", "chartVersion")
		out[u.GetName()] = v
	}
	return out, nil
}

// rolloutStatus reads a ChartRollout: phase, wave, and each line of its
// history as "wave releases moved failed".
func rolloutStatus(ctx context.Context, name string) (phase string, cr *unstructured.Unstructured, err error) {
	cr, err = env.Get(ctx, chartRolloutGVK, "", name)
	if err != nil {
		return "", nil, err
	}
	phase, _, _ = unstructured.NestedString(cr.Object, "status", "phase")
	return phase, cr, nil
}

type waveLine struct {
	wave, releases, moved, failed int64
	started, finished             time.Time
}

// rolloutConditions are a ChartRollout's conditions as type=status, in
// the order of their types.
func rolloutConditions(cr *unstructured.Unstructured) []string {
	var out []string
	for _, typ := range []string{"Complete", "Progressing", "Stalled"} {
		status, _, _ := testkit.Condition(cr, typ)
		out = append(out, typ+"="+status)
	}
	return out
}

func waveHistory(cr *unstructured.Unstructured) []waveLine {
	raw, _, _ := unstructured.NestedSlice(cr.Object, "status", "history")
	var out []waveLine
	for _, r := range raw {
		m := r.(map[string]any)
		l := waveLine{}
		l.wave, _ = m["wave"].(int64)
		l.releases, _ = m["releases"].(int64)
		l.moved, _ = m["moved"].(int64)
		l.failed, _ = m["failed"].(int64)
		if s, ok := m["startedAt"].(string); ok {
			l.started, _ = time.Parse(time.RFC3339, s)
		}
		if s, ok := m["finishedAt"].(string); ok {
			l.finished, _ = time.Parse(time.RFC3339, s)
		}
		out = append(out, l)
	}
	return out
}

// TestChartRolloutInWaves: 200 RolloutNginx run chart 0.1.0, one pinned to
// it. An operator whose default is 0.2.0 moves the other 199 in the
// default waves (1, 10 %, 50 %, the rest), each begun once the one before
// it was done, as the ChartRollout's status shows; the pinned one stays.
// Then 0.3.0, whose Pods no node takes: the rollout halts after its canary
// wave, the canary rolled back by its own remediation and no other
// release upgraded; a node that takes the Pods and a resume complete it.
func TestChartRolloutInWaves(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	const ns, n, pinned = "e2e-rollout", 200, "web-007"
	dir := rolloutSetup(t)
	env.CreateNamespace(t, ns)

	first := startRolloutManager(t, dir, "v1", "0.1.0")
	var manifests strings.Builder
	for i := range n {
		fmt.Fprintf(&manifests, "---\napiVersion: %s\nkind: %s\nmetadata:\n  name: web-%03d\n  namespace: %s\n", rolloutGVK.GroupVersion(), rolloutGVK.Kind, i, ns)
		if fmt.Sprintf("web-%03d", i) == pinned {
			manifests.WriteString("  annotations:\n    platform.acme.com/chart-version: 0.1.0\n")
		}
		manifests.WriteString("spec:\n  replicaCount: 1\n")
	}
	out, err := env.KubectlIn(manifests.String(), "apply", "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	created := time.Now()
	out, err = env.Kubectl("wait", "-n", ns, "--for=condition=Ready", "rolloutnginx", "--all", "--timeout=600s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("200 installed and Ready in %s", time.Since(created).Round(time.Second))
	g.Eventually(func() (map[string]string, error) { return chartVersions(ctx, ns) }).WithTimeout(60 * time.Second).
		Should(And(HaveLen(n), HaveEach("0.1.0")))
	before, err := revisionCounts(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())

	t.Log("the operator is upgraded: 0.2.0 is the default, 0.1.0 shipped beside it")
	g.Expect(first.stop()).To(Succeed())
	upgraded := time.Now()
	second := startRolloutManager(t, dir, "v2", "0.2.0", "0.1.0")
	const rollout2 = "rolloutnginx-0.2.0"
	var cr *unstructured.Unstructured
	g.Eventually(func(g Gomega) {
		var phase string
		phase, cr, err = rolloutStatus(ctx, rollout2)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(phase).To(Equal("Complete"))
	}).WithTimeout(10 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	t.Logf("0.2.0 rolled out to 199 releases in %s", time.Since(upgraded).Round(time.Second))
	out, err = env.Kubectl("wait", "--for=condition=Complete", "chartrollout/"+rollout2, "--timeout=10s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(rolloutConditions(cr)).To(Equal([]string{"Complete=True", "Progressing=False", "Stalled=False"}))
	waves := waveHistory(cr)
	var sizes []int64
	for i, w := range waves {
		sizes = append(sizes, w.releases)
		g.Expect(w.failed).To(BeZero(), "wave %d", w.wave)
		g.Expect(w.moved).To(Equal(w.releases), "wave %d", w.wave)
		g.Expect(w.finished).NotTo(BeZero(), "wave %d has finished", w.wave)
		if i > 0 {
			g.Expect(w.started).NotTo(BeTemporally("<", waves[i-1].finished), "wave %d starts once wave %d is done", w.wave, waves[i-1].wave)
		}
	}
	g.Expect(sizes).To(Equal([]int64{1, 19, 80, 99}), "1, 10 %%, 50 %%, the rest of 199")
	versions, err := chartVersions(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	for name, v := range versions {
		want := "0.2.0"
		if name == pinned {
			want = "0.1.0"
		}
		g.Expect(v).To(Equal(want), name)
	}
	after, err := revisionCounts(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after[pinned]).To(Equal(before[pinned]), "the pinned release is not upgraded")
	out, err = env.Kubectl("get", "chartrollouts", rollout2)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("kubectl get chartrollouts:\n%s", out)
	out, err = env.Kubectl("get", "rolloutnginx", "-n", ns, pinned, "web-000")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(And(ContainSubstring("CHART"), ContainSubstring("0.1.0"), ContainSubstring("0.2.0")), out)

	t.Log("0.3.0, whose Pods no node takes, becomes the default; web-100 is labelled the canary, with a short ready timeout")
	const canary = "web-100"
	out, err = env.Kubectl("label", "-n", ns, "rolloutnginx/"+canary, "platform.acme.com/canary=true")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("annotate", "-n", ns, "rolloutnginx/"+canary, "platform.acme.com/ready-timeout=15s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(second.stop()).To(Succeed())
	before, err = revisionCounts(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	startRolloutManager(t, dir, "v3", "0.3.0", "0.1.0", "0.2.0")
	const rollout3 = "rolloutnginx-0.3.0"
	g.Eventually(func(g Gomega) {
		var phase string
		phase, cr, err = rolloutStatus(ctx, rollout3)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(phase).To(Equal("Halted"))
	}).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	paused, _, _ := unstructured.NestedBool(cr.Object, "spec", "paused")
	g.Expect(paused).To(BeTrue())
	g.Expect(rolloutConditions(cr)).To(Equal([]string{"Complete=False", "Progressing=False", "Stalled=True"}))
	// kubectl wait reads a condition of an older generation as stale:
	// the operator's own spec.paused makes a new one.
	out, err = env.Kubectl("wait", "--for=condition=Stalled", "chartrollout/"+rollout3, "--timeout=10s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	_, reason, msg := testkit.Condition(cr, "Stalled")
	g.Expect(reason).To(Equal("Halted"))
	g.Expect(msg).To(ContainSubstring("set spec.paused to false to resume"))
	waves = waveHistory(cr)
	g.Expect(waves).To(HaveLen(1), "halted after the canary wave")
	g.Expect([]int64{waves[0].releases, waves[0].failed}).To(Equal([]int64{1, 1}))
	g.Eventually(func(g Gomega) {
		after, err := revisionCounts(ctx, ns)
		g.Expect(err).NotTo(HaveOccurred())
		var touched []string
		for name, c := range after {
			if c != before[name] {
				touched = append(touched, name)
			}
		}
		g.Expect(touched).To(Equal([]string{canary}), "only the canary was upgraded")
		g.Expect(after[canary]).To(Equal(before[canary]+2), "the canary's upgrade and its rollback")
		versions, err := chartVersions(ctx, ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(versions[canary]).To(Equal("0.2.0"), "the canary rolled back by itself")
	}).WithTimeout(time.Minute).Should(Succeed())
	desc, err := env.ReleaseDescription(ctx, ns, canary, before[canary]+2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(desc).To(HavePrefix("Rollback to"))
	g.Consistently(func() (map[string]int, error) {
		after, err := revisionCounts(ctx, ns)
		delete(after, canary)
		return after, err
	}).WithTimeout(20*time.Second).WithPolling(2*time.Second).Should(Equal(withoutKey(before, canary)), "the halt moves no other release")

	t.Log("a node takes 0.3.0's Pods; resuming completes the rollout")
	nodes := &corev1.NodeList{}
	g.Expect(env.Client.List(ctx, nodes)).To(Succeed())
	g.Expect(nodes.Items).NotTo(BeEmpty())
	for _, node := range nodes.Items {
		out, err = env.Kubectl("label", "node", node.Name, testkit.UnschedulableLabel+"=true", "--overwrite")
		g.Expect(err).NotTo(HaveOccurred(), out)
		nodeName := node.Name
		t.Cleanup(func() { _, _ = env.Kubectl("label", "node", nodeName, testkit.UnschedulableLabel+"-") })
	}
	resumed := time.Now()
	out, err = env.Kubectl("patch", "chartrollout", rollout3, "--type=merge", "-p", `{"spec":{"paused":false}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		var phase string
		phase, cr, err = rolloutStatus(ctx, rollout3)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(phase).To(Equal("Complete"))
	}).WithTimeout(10 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	t.Logf("0.3.0 completed %s after the resume", time.Since(resumed).Round(time.Second))
	g.Expect(rolloutConditions(cr)).To(Equal([]string{"Complete=True", "Progressing=False", "Stalled=False"}))
	attempt, _, _ := unstructured.NestedInt64(cr.Object, "status", "attempt")
	g.Expect(attempt).To(Equal(int64(2)))
	versions, err = chartVersions(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	for name, v := range versions {
		want := "0.3.0"
		if name == pinned {
			want = "0.1.0"
		}
		g.Expect(v).To(Equal(want), name)
	}
	events, err := env.EventsOf(ctx, "", "ChartRollout", rollout3)
	g.Expect(err).NotTo(HaveOccurred())
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	g.Expect(reasons).To(ContainElements("RolloutStarted", "RolloutHalted", "RolloutResumed", "WaveStarted", "RolloutComplete"))
}

func withoutKey(m map[string]int, key string) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

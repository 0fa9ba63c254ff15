package real

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

	"github.com/acme/platform-operator/internal/devtools/process"
	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// TestChartRolloutOnRealPods: four resources of a kind of the test's own,
// backed by the nginx chart, run real Pods at chart 0.1.0, one pinned to
// it. An operator whose default is 0.2.0 (a runtime on the host, beside
// the installed operator) moves the other three wave by wave, each wave
// once the Pods of the one before it are Ready; the pinned one stays.
// 0.3.0, whose Pods need a node label no node has, halts after the
// labelled canary, which rolls back to Pods that run while no other
// release gets a revision; labelling the node and resuming complete it.
func TestChartRolloutOnRealPods(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	const ns, group, kind, pinned, canary = "real-rollout", "rollout.real.acme.com", "RealRollout", "web-3", "web-1"
	gvk := schema.GroupVersionKind{Group: group, Version: "v1alpha1", Kind: kind}
	dir := t.TempDir()
	for _, v := range []string{"0.1.0", "0.2.0", "0.3.0"} {
		testkit.NginxVersion(t, cluster.Root, dir, v, v == "0.3.0")
	}
	crd, crdName := testkit.NginxKindCRD(t, cluster.Root, dir, group, kind, "realrollouts")
	out, err := cluster.Kubectl("apply", "--server-side", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() { _, _ = cluster.Kubectl("delete", "crd", crdName, "--wait=false") })
	out, err = cluster.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "crd/"+crdName)
	g.Expect(err).NotTo(HaveOccurred(), out)
	const deployer = "real-rollout-release-deployer"
	deployerRole(t, cluster.Root, deployer)
	cluster.CreateNamespace(t, ns)

	images := "  imageDefaults:\n    image: " + realnode.NginxImage + "\n"
	start := func(name, def string, others ...string) *process.Process {
		var paths []string
		for _, o := range others {
			paths = append(paths, filepath.Join(dir, "nginx-"+o))
		}
		watches := filepath.Join(dir, "watches-"+name+".yaml")
		content := testkit.RolloutWatches(group, kind, filepath.Join(dir, "nginx-"+def), paths, "2m", images)
		g.Expect(os.WriteFile(watches, []byte(content), 0o644)).To(Succeed())
		return startHostRuntime(t, dir, "rollout-manager-"+name, watches, "real-rollout-release", deployer)
	}
	revisions := func(g Gomega) map[string]int {
		var list corev1.SecretList
		g.Expect(cluster.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
		out := map[string]int{}
		for _, s := range list.Items {
			out[s.Labels["name"]]++
		}
		return out
	}
	versions := func(g Gomega) map[string]string {
		items, err := cluster.List(ctx, gvk, ns)
		g.Expect(err).NotTo(HaveOccurred())
		out := map[string]string{}
		for _, u := range items {
			out[u.GetName()], _, _ = unstructured.NestedString(u.Object, "status", "chartVersion")
		}
		return out
	}
	phaseOf := func(name string) func(g Gomega) string {
		return func(g Gomega) string {
			cr, err := cluster.Get(ctx, schema.GroupVersionKind{Group: "platform.acme.com", Version: "v1alpha1", Kind: "ChartRollout"}, "", name)
			g.Expect(err).NotTo(HaveOccurred())
			phase, _, _ := unstructured.NestedString(cr.Object, "status", "phase")
			return phase
		}
	}
	t.Cleanup(func() {
		for _, name := range []string{"realrollout-0.2.0", "realrollout-0.3.0"} {
			_, _ = cluster.Kubectl("delete", "chartrollout", name, "--ignore-not-found")
		}
	})

	v1 := start("v1", "0.1.0")
	var manifests strings.Builder
	for i := range 4 {
		fmt.Fprintf(&manifests, "---\napiVersion: %s/v1alpha1\nkind: %s\nmetadata:\n  name: web-%d\n", group, kind, i)
		if fmt.Sprintf("web-%d", i) == pinned {
			manifests.WriteString("  annotations:\n    platform.acme.com/chart-version: 0.1.0\n")
		}
		manifests.WriteString("spec:\n  replicaCount: 1\n")
	}
	cluster.Apply(t, ns, manifests.String())
	out, err = cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "realrollouts", "--all", "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	before := revisions(g)

	t.Log("0.2.0 becomes the default: the three unpinned releases move wave by wave")
	g.Expect(v1.Stop(10 * time.Second)).To(Succeed())
	upgraded := time.Now()
	v2 := start("v2", "0.2.0", "0.1.0")
	g.Eventually(phaseOf("realrollout-0.2.0")).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Equal("Complete"))
	t.Logf("0.2.0 reached the three releases' real Pods in %s", time.Since(upgraded).Round(time.Second))
	g.Expect(versions(g)).To(Equal(map[string]string{"web-0": "0.2.0", "web-1": "0.2.0", "web-2": "0.2.0", pinned: "0.1.0"}))
	after := revisions(g)
	g.Expect(after[pinned]).To(Equal(before[pinned]), "the pinned release is not upgraded")
	out, err = cluster.Kubectl("get", "chartrollout", "realrollout-0.2.0", "-o", "jsonpath={range .status.history[*]}{.wave}:{.releases}:{.moved} {.startedAt}..{.finishedAt}{\"\\n\"}{end}")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("waves (wave:releases:moved):\n%s", out)
	var waves []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		waves = append(waves, strings.Fields(line)[0])
	}
	g.Expect(waves).To(Equal([]string{"1:1:1", "2:1:1", "3:1:1"}), "three waves of one: 1, 10 %% and 50 %% of three rounded up, the rest")

	t.Log("0.3.0, whose Pods need a node label no node has: the canary halts the rollout and rolls back")
	out, err = cluster.Kubectl("label", "-n", ns, "realrollout/"+canary, "platform.acme.com/canary=true")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("annotate", "-n", ns, "realrollout/"+canary, "platform.acme.com/ready-timeout=30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(v2.Stop(10 * time.Second)).To(Succeed())
	before = revisions(g)
	start("v3", "0.3.0", "0.1.0", "0.2.0")
	g.Eventually(phaseOf("realrollout-0.3.0")).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Equal("Halted"))
	out, err = cluster.Kubectl("wait", "--for=condition=Stalled", "chartrollout/realrollout-0.3.0", "--timeout=10s")
	g.Expect(err).NotTo(HaveOccurred(), "the halt reads as Stalled: %s", out)
	g.Eventually(func(g Gomega) {
		after := revisions(g)
		g.Expect(after[canary]).To(Equal(before[canary]+2), "the canary's upgrade and its rollback")
		delete(after, canary)
		want := map[string]int{}
		for k, v := range before {
			if k != canary {
				want[k] = v
			}
		}
		g.Expect(after).To(Equal(want), "no other release gets a revision")
		g.Expect(versions(g)[canary]).To(Equal("0.2.0"))
	}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	out, err = cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "realrollout/"+canary, "--timeout=120s")
	g.Expect(err).NotTo(HaveOccurred(), "the canary's Pods run its rollback: %s", out)

	t.Log("the node takes 0.3.0's Pods; a resume completes the rollout")
	nodes := &corev1.NodeList{}
	g.Expect(cluster.Client.List(ctx, nodes)).To(Succeed())
	for _, node := range nodes.Items {
		out, err = cluster.Kubectl("label", "node", node.Name, testkit.UnschedulableLabel+"=true", "--overwrite")
		g.Expect(err).NotTo(HaveOccurred(), out)
		name := node.Name
		t.Cleanup(func() { _, _ = cluster.Kubectl("label", "node", name, testkit.UnschedulableLabel+"-") })
	}
	out, err = cluster.Kubectl("patch", "chartrollout", "realrollout-0.3.0", "--type=merge", "-p", `{"spec":{"paused":false}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("wait", "--for=condition=Complete", "chartrollout/realrollout-0.3.0", "--timeout=5m")
	g.Expect(err).NotTo(HaveOccurred(), "as a pipeline waits for a rollout: %s", out)
	g.Expect(phaseOf("realrollout-0.3.0")(g)).To(Equal("Complete"))
	g.Expect(versions(g)).To(Equal(map[string]string{"web-0": "0.3.0", "web-1": "0.3.0", "web-2": "0.3.0", pinned: "0.1.0"}))
	out, err = cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "realrollouts", "--all", "--timeout=120s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

package real

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/gen/kindgen"
	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// foreignPostRender is what the platform team adds to the kind's
// watches.yaml entry: every Deployment gets a label and a toleration, and
// the image helm create's charts run (nginx) is the node registry's
// stand-in.
const foreignPostRender = `  postRender:
    patches:
      - target: {kind: Deployment}
        patch: |
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: any}
          spec:
            template:
              metadata:
                labels: {team: platform}
              spec:
                tolerations:
                  - {key: platform.acme.com/dedicated, operator: Exists, effect: NoSchedule}
    images:
      - name: nginx
        newName: ` + realnode.NginxRepo + `
        newTag: "` + realnode.NginxTag + `"
`

// TestForeignChartOnRealPods: a chart nobody here wrote, made by helm
// create (a subchart used as itself and under an alias, one behind a
// condition that is off, a library chart, a CRD in crds/), made an API by
// make kind, with a post-render patch and an image rewrite in its
// watches.yaml entry and crds: create-replace. A runtime for that kind,
// run beside the installed operator, installs a resource whose Pods really
// run: every Deployment of the parent and the subcharts becomes Ready on
// the node with the rewritten image, the label and the toleration; the
// chart's CRD and its object are there. Deleting the resource uninstalls
// the release and keeps the CRD.
func TestForeignChartOnRealPods(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	const ns, kind, group = "real-foreign", "Foreign", "foreign.real.acme.com"

	repo := t.TempDir()
	testkit.CopyTree(t, cluster.Root, repo, kindgen.Files...)
	d := testkit.DependencyChart{Name: "foreign", CRDGroup: "gadgets.real.acme.com", Widget: true}
	testkit.BuildDependencyChart(t, filepath.Join(repo, "helm-charts"), d)
	g.Expect(kindgen.Run(kindgen.Options{Root: repo, Chart: "helm-charts/foreign", Group: group, Kind: kind})).To(Succeed())

	// The new kind's entry, alone, with the platform team's additions.
	data, err := os.ReadFile(filepath.Join(repo, "watches.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	_, entry, found := strings.Cut(string(data), "- group: "+group+"\n")
	g.Expect(found).To(BeTrue(), "make kind wrote the entry:\n%s", data)
	g.Expect(entry).To(HaveSuffix("  crds: create\n"))
	entry = "- group: " + group + "\n" + strings.TrimSuffix(entry, "create\n") + "create-replace\n" + foreignPostRender
	watches := filepath.Join(repo, "foreign-watches.yaml")
	g.Expect(os.WriteFile(watches, []byte(entry), 0o644)).To(Succeed())

	crdFile := filepath.Join(repo, "config", "crd", "bases", group+"_foreigns.yaml")
	out, err := cluster.Kubectl("apply", "--server-side", "-f", crdFile)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() {
		_, _ = cluster.Kubectl("delete", "-f", crdFile, "--wait=false")
		_, _ = cluster.Kubectl("delete", "crd", d.CRDName(), "--ignore-not-found", "--wait=false")
	})
	out, err = cluster.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "-f", crdFile)
	g.Expect(err).NotTo(HaveOccurred(), out)

	// The releases act as the namespace's ServiceAccount with the
	// generated release-deployer role, as the installed operator's do.
	const deployer = "real-foreign-release-deployer"
	deployerRole(t, repo, deployer)
	startHostRuntime(t, repo, "foreign-manager", watches, "real-foreign-release", deployer)

	cluster.CreateNamespace(t, ns)
	start := time.Now()
	// helm create's charts listen on service.port; the stand-in on 8080.
	cluster.Apply(t, ns, `apiVersion: `+group+`/v1alpha1
kind: Foreign
metadata:
  name: shop
spec:
  service: {port: 8080}
  child: {service: {port: 8080}}
  extra: {service: {port: 8080}}
`)
	names := []string{"shop-foreign", "shop-child", "shop-extra"}
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			dep := &appsv1.Deployment{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
			g.Expect(testkit.DeploymentReady(dep)).To(BeTrue(), "%s: %+v", name, dep.Status)
		}
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("the parent's and both subcharts' Pods Ready %s after apply", time.Since(start).Round(time.Millisecond))
	gvk := schema.GroupVersionKind{Group: group, Version: "v1alpha1", Kind: kind}
	g.Eventually(func(g Gomega) {
		status, reason, message := cluster.ConditionOf(g, gvk, ns, "shop", "Deployed")
		g.Expect(status).To(Equal("True"), message)
		g.Expect(reason).To(Equal("InstallSuccessful"), message)
	}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "the first install, with an object of the CRD it installed first")
	g.Expect(revisions(g, ns, "shop")).To(Equal(1), "one install, no retry")

	for _, name := range names {
		dep := &appsv1.Deployment{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		pods := &corev1.PodList{}
		g.Expect(cluster.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels))).To(Succeed())
		g.Expect(pods.Items).NotTo(BeEmpty(), name)
		for _, pod := range pods.Items {
			g.Expect(pod.Labels).To(HaveKeyWithValue("team", "platform"), pod.Name)
			g.Expect(pod.Spec.Containers[0].Image).To(Equal(realnode.NginxImage), pod.Name)
			g.Expect(pod.Spec.Tolerations).To(ContainElement(HaveField("Key", "platform.acme.com/dedicated")), pod.Name)
		}
	}
	out, err = cluster.Kubectl("get", "widgets."+d.CRDGroup, "shop-widget", "-n", ns, "-o", "name")
	g.Expect(err).NotTo(HaveOccurred(), "the chart's CRD and its object: %s", out)

	t.Log("deleting the resource uninstalls the release and keeps the CRD")
	out, err = cluster.Kubectl("delete", "foreign", "shop", "-n", ns, "--wait=true", "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() int { return revisions(g, ns, "shop") }).WithTimeout(time.Minute).Should(BeZero())
	out, err = cluster.Kubectl("get", "crd", d.CRDName(), "-o", "name")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

// tail returns the last n lines of s that are not stack frames.
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if !strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "sigs.k8s.io/") && !strings.HasPrefix(l, "k8s.io/") {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

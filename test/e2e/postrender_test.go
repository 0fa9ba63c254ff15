package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/gen/kindgen"
	"github.com/acme/platform-operator/test/testkit"
)

// patchedChartFiles is a chart with one Deployment, which knows nothing of
// the platform team's label and toleration.
var patchedChartFiles = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: patched\nversion: 0.1.0\n",
	"values.yaml": "image: nginx:1.25\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-patched
  labels: {app: {{ .Release.Name }}-patched}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}-patched}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}-patched}}
    spec:
      containers: [{name: web, image: {{ .Values.image | quote }}}]
`,
}

// postRender is the postRender field of the test's watches entry: a label
// and a toleration on every Deployment.
const postRender = `
patches:
- target: {kind: Deployment}
  patch: |
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: any
      labels: {team: platform}
    spec:
      template:
        spec:
          tolerations: [{key: dedicated, operator: Equal, value: platform, effect: NoSchedule}]
`

// TestPostRenderPatches: a kind whose watches entry has post-render
// patches installs its releases patched; a hand edit that removes the
// patched label is repaired; the runtime restarted without the patches
// upgrades the release once, which removes what they added.
func TestPostRenderPatches(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	repo := t.TempDir()
	testkit.CopyTree(t, env.Root, repo, kindgen.Files...)
	for name, content := range patchedChartFiles {
		p := filepath.Join(repo, "helm-charts", "patched", name)
		g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(p, []byte(content), 0o644)).To(Succeed())
	}
	out, err := env.Run("", "go", "run", "./cmd/kindgen", "--root", repo,
		"--chart", "helm-charts/patched", "--group", "postrender.acme.com", "--kind", "Patched")
	g.Expect(err).NotTo(HaveOccurred(), out)
	gvk := schema.GroupVersionKind{Group: "postrender.acme.com", Version: "v1alpha1", Kind: "Patched"}

	crd := filepath.Join(repo, "config", "crd", "bases", "postrender.acme.com_patcheds.yaml")
	out, err = env.Kubectl("apply", "--server-side", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "-f", crd, "--wait=false") })
	out, err = env.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)

	// The Patched entry of the copy's watches.yaml gets the patches.
	watchesFile := filepath.Join(repo, "watches.yaml")
	data, err := os.ReadFile(watchesFile)
	g.Expect(err).NotTo(HaveOccurred())
	var entries []map[string]any
	g.Expect(yaml.Unmarshal(data, &entries)).To(Succeed())
	var field map[string]any
	g.Expect(yaml.Unmarshal([]byte(postRender), &field)).To(Succeed())
	for _, e := range entries {
		if e["kind"] == "Patched" {
			e["postRender"] = field
		}
	}
	data, err = yaml.Marshal(entries)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(watchesFile, data, 0o644)).To(Succeed())
	runtime := startKindRuntime(t, repo, "Patched", "postrender")

	const ns = "e2e-postrender"
	env.CreateNamespace(t, ns)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "patched", "--all", "-n", ns, "--wait=true", "--timeout=60s") })
	key := client.ObjectKey{Namespace: ns, Name: "web-patched"}
	patched := func(g Gomega, d *appsv1.Deployment) bool {
		label := d.Labels["team"] == "platform"
		tolerated := len(d.Spec.Template.Spec.Tolerations) == 1 && d.Spec.Template.Spec.Tolerations[0] ==
			corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "platform", Effect: corev1.TaintEffectNoSchedule}
		g.Expect(label).To(Equal(tolerated), "label and toleration come and go together: %v", d.Spec.Template.Spec.Tolerations)
		return label
	}
	revisions := func(g Gomega) int {
		var secrets corev1.SecretList
		g.Expect(env.Client.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": "web"})).To(Succeed())
		return len(secrets.Items)
	}

	t.Log("the release installs patched")
	applyCR(g, gvk, ns, "web", `{}`)
	expectDeployed(t, gvk, ns, "web", "InstallSuccessful")
	var d appsv1.Deployment
	g.Expect(env.Client.Get(ctx, key, &d)).To(Succeed())
	g.Expect(patched(g, &d)).To(BeTrue())
	g.Expect(d.Labels).To(HaveKeyWithValue("app", "web-patched"), "the chart's labels stay")

	// As the drift tests do: the edit waits for Ready, by when the
	// runtime watches the release's objects. An edit made before that
	// watch lists them is seen as an existing object, which the library's
	// dependent watch does not reconcile for, and is repaired only at the
	// next resync.
	g.Eventually(func(g Gomega) {
		status, _, msg := env.ConditionOf(g, gvk, ns, "web", "Ready")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Log("a hand edit that removes the label is repaired")
	out, err = env.Kubectl("label", "deployment", "web-patched", "-n", ns, "team-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, key, &d)).To(Succeed())
		g.Expect(d.Labels).To(HaveKeyWithValue("team", "platform"))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(revisions(g)).To(Equal(1), "repaired, not upgraded")

	t.Log("the runtime restarted without the patches removes what they added, with one upgrade")
	g.Expect(runtime.stop()).To(Succeed())
	own := filepath.Join(repo, "postrender-watches.yaml")
	data, err = os.ReadFile(own)
	g.Expect(err).NotTo(HaveOccurred())
	entries = nil
	g.Expect(yaml.Unmarshal(data, &entries)).To(Succeed())
	g.Expect(entries).To(HaveLen(1))
	g.Expect(entries[0]).To(HaveKey("postRender"))
	delete(entries[0], "postRender")
	data, err = yaml.Marshal(entries)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(own, data, 0o644)).To(Succeed())
	g.Expect(runtime.start()).To(Succeed())
	expectDeployed(t, gvk, ns, "web", "UpgradeSuccessful")
	g.Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, key, &d)).To(Succeed())
		g.Expect(patched(g, &d)).To(BeFalse())
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(revisions(g)).To(Equal(2))
}

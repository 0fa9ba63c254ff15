package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/gen/kindgen"
	"github.com/acme/platform-operator/test/testkit"
)

// wideChartFiles is a ten-line chart nobody here wrote: a value puts its
// ConfigMap in another namespace, another renders a ClusterRole that reads
// every Secret; its ci/ values turn both on, so both kinds of object are
// in the generated roles.
var wideChartFiles = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: wide\nversion: 0.1.0\n",
	"values.yaml": "namespaceOverride: \"\"\nclusterRole: false\n",
	"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-wide\n" +
		"  {{- with .Values.namespaceOverride }}\n  namespace: {{ . }}\n  {{- end }}\ndata: {owner: {{ .Release.Name }}}\n",
	"templates/role.yaml": "{{- if .Values.clusterRole }}\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n" +
		"metadata:\n  name: {{ .Release.Namespace }}-{{ .Release.Name }}-secrets\nrules: [{apiGroups: [\"\"], resources: [secrets], verbs: [get, list]}]\n{{- end }}\n",
	"ci/wide-values.yaml": "namespaceOverride: e2e-wide-other\nclusterRole: true\n",
}

// TestForeignChartConfinedWithTheWebhookOff: `make kind` on that chart
// reports both objects and allows neither; a runtime with exactly the
// generated ClusterRoles, and no webhook in front of it, refuses a
// resource whose spec moves the ConfigMap to another namespace and one
// whose spec turns the ClusterRole on before Helm writes anything (the
// release's ServiceAccount, bound in the resource's namespace only, could
// not have written either), and installs the chart's defaults.
func TestForeignChartConfinedWithTheWebhookOff(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := t.TempDir()
	testkit.CopyTree(t, env.Root, repo, kindgen.Files...)
	for name, content := range wideChartFiles {
		p := filepath.Join(repo, "helm-charts", "wide", name)
		g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(p, []byte(content), 0o644)).To(Succeed())
	}
	out, err := env.Run("", "go", "run", "./cmd/kindgen", "--root", repo,
		"--chart", "helm-charts/wide", "--group", "demo.acme.com", "--kind", "Wide")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(`ConfigMap "wide-sample-wide" in namespace "e2e-wide-other" (another namespace), from ci/wide-values.yaml`))
	g.Expect(out).To(ContainSubstring(`ClusterRole "default-wide-sample-secrets" (cluster-scoped), from ci/wide-values.yaml`))
	gvk := schema.GroupVersionKind{Group: "demo.acme.com", Version: "v1alpha1", Kind: "Wide"}

	crd := filepath.Join(repo, "config", "crd", "bases", "demo.acme.com_wides.yaml")
	out, err = env.Kubectl("apply", "--server-side", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "-f", crd, "--wait=false") })
	out, err = env.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)

	roleYAML, err := os.ReadFile(filepath.Join(repo, "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(roleYAML)).To(ContainSubstring("clusterroles (Wide)"), "the operator watches what the chart renders")
	watches, err := os.ReadFile(filepath.Join(repo, "watches.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var entries []map[string]any
	g.Expect(yaml.Unmarshal(watches, &entries)).To(Succeed())
	for _, e := range entries {
		if e["kind"] == "Wide" {
			g.Expect(e).NotTo(HaveKey("confinement"), "nothing is allowed unless asked")
		}
	}
	startKindRuntime(t, repo, "Wide", "wide")

	const ns, other = "e2e-wide", "e2e-wide-other"
	env.CreateNamespace(t, ns)
	env.CreateNamespace(t, other)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "wide", "--all", "-n", ns, "--wait=true", "--timeout=60s") })

	refused := func(name, want string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			status, reason, msg := env.ConditionOf(g, gvk, ns, name, "ReleaseFailed")
			g.Expect(status).To(Equal("True"), msg)
			g.Expect(reason).To(Equal("OutsideNamespace"))
			g.Expect(msg).To(ContainSubstring(want))
		}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	}
	t.Log("a spec that moves the ConfigMap to another namespace")
	applyCR(g, gvk, ns, "away", `namespaceOverride: `+other)
	refused("away", `ConfigMap "away-wide" in namespace "e2e-wide-other" is outside the resource's namespace "e2e-wide"`)
	t.Log("a spec that turns the ClusterRole on")
	applyCR(g, gvk, ns, "wide", `clusterRole: true`)
	refused("wide", `ClusterRole "e2e-wide-wide-secrets" is cluster-scoped`)

	t.Log("nothing was written outside the namespace, nor of either release")
	for _, key := range []client.ObjectKey{{Namespace: other, Name: "away-wide"}, {Namespace: ns, Name: "away-wide"}, {Namespace: ns, Name: "wide-wide"}} {
		err := env.Client.Get(ctx, key, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap %s: %v", key, err)
	}
	err = env.Client.Get(ctx, client.ObjectKey{Name: "e2e-wide-wide-secrets"}, &rbacv1.ClusterRole{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ClusterRole: %v", err)

	t.Log("the chart's defaults install")
	applyCR(g, gvk, ns, "plain", `{}`)
	expectDeployed(t, gvk, ns, "plain", "InstallSuccessful")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain-wide"}, &corev1.ConfigMap{})).To(Succeed())
}

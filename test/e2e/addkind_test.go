package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/test/testkit"
)

// TestAddKindFromHelmCreate: `make kind` turns the starter chart of `helm
// create` (a chart nobody here wrote) into an API. On a copy of the
// repository it writes the CRD, RBAC, sample and watches entry; a runtime
// that runs with exactly the generated ClusterRole, as its own
// ServiceAccount, installs the generated sample (Deployed, Ready), and the
// CRD refuses a value of the wrong type at apply.
func TestAddKindFromHelmCreate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := t.TempDir()
	testkit.CopyTree(t, env.Root, repo, testkit.KindgenFiles...)
	if _, err := chartutil.Create("podinfo", filepath.Join(repo, "helm-charts")); err != nil {
		t.Fatal(err)
	}

	t.Log("make kind on the starter chart")
	out, err := env.Run("", "go", "run", "./cmd/kindgen", "--root", repo,
		"--chart", "helm-charts/podinfo", "--group", "demo.acme.com", "--kind", "Podinfo")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Log(out)
	gvk := schema.GroupVersionKind{Group: "demo.acme.com", Version: "v1alpha1", Kind: "Podinfo"}

	t.Log("install the generated CRD")
	crd := filepath.Join(repo, "config", "crd", "bases", "demo.acme.com_podinfos.yaml")
	out, err = env.Kubectl("apply", "--server-side", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "-f", crd, "--wait=false") })
	out, err = env.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("a ServiceAccount bound to exactly the generated ClusterRole")
	const account, role = "addkind-operator", "addkind-manager-role"
	roleYAML, err := os.ReadFile(filepath.Join(repo, "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(roleYAML)).To(ContainSubstring("resources: [podinfos]"))
	env.Apply(t, "", strings.Replace(string(roleYAML), "name: manager-role", "name: "+role, 1))
	out, err = env.Kubectl("create", "serviceaccount", account, "-n", operatorNamespace)
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("create", "clusterrolebinding", account, "--clusterrole="+role, "--serviceaccount="+operatorNamespace+":"+account)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() {
		_, _ = env.Kubectl("delete", "clusterrolebinding", account)
		_, _ = env.Kubectl("delete", "clusterrole", role)
		_, _ = env.Kubectl("delete", "serviceaccount", account, "-n", operatorNamespace)
	})
	kubeconfig, err := serviceAccountKubeconfigFile(operatorNamespace, account, filepath.Join(repo, "addkind.kubeconfig"))
	g.Expect(err).NotTo(HaveOccurred())

	t.Log("a runtime for the new kind only (the suite's runtime has the others), in the copy")
	watches := filepath.Join(repo, "watches.yaml")
	data, err := os.ReadFile(watches)
	g.Expect(err).NotTo(HaveOccurred())
	var entries []map[string]any
	g.Expect(yaml.Unmarshal(data, &entries)).To(Succeed())
	var own []map[string]any
	for _, e := range entries {
		if e["kind"] == "Podinfo" {
			own = append(own, e)
		}
	}
	g.Expect(own).To(HaveLen(1), "watches.yaml has one Podinfo entry")
	data, err = yaml.Marshal(own)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(repo, "podinfo-watches.yaml"), data, 0o644)).To(Succeed())
	runtime := &operatorProcess{
		name: "podinfo-manager", bin: env.manager.bin, logPath: filepath.Join(filepath.Dir(env.manager.logPath), "podinfo-manager.log"),
		kubeconfig: kubeconfig, dir: repo,
		fixedArgs: []string{"--watches-file", "podinfo-watches.yaml"},
	}
	g.Expect(runtime.start()).To(Succeed())
	t.Cleanup(func() { _ = runtime.stop() })

	const ns = "e2e-addkind"
	env.CreateNamespace(t, ns)
	t.Log("the generated sample installs and becomes Ready")
	sample, err := os.ReadFile(filepath.Join(repo, "config", "samples", "demo_v1alpha1_podinfo.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	env.Apply(t, ns, string(sample))
	t.Cleanup(func() {
		if out, err := env.Kubectl("delete", "podinfo", "--all", "-n", ns, "--wait=true", "--timeout=60s"); err != nil {
			t.Logf("cleanup: %v\n%s", err, out)
		}
	})
	expectDeployed(t, gvk, ns, "podinfo-sample", "InstallSuccessful")
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, gvk, ns, "podinfo-sample", "Ready")
		g.Expect(status).To(Equal("True"), reason+": "+msg)
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo-sample"}, d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(1))
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(HavePrefix("nginx:"))
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo-sample"}, svc)).To(Succeed())
	g.Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(80))

	t.Log("an edit upgrades the release")
	out, err = env.Kubectl("patch", "podinfo", "podinfo-sample", "-n", ns, "--type=merge", "-p", `{"spec":{"replicaCount":2}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) int32 {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo-sample"}, d)).To(Succeed())
		return *d.Spec.Replicas
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(BeEquivalentTo(2))
	expectDeployed(t, gvk, ns, "podinfo-sample", "UpgradeSuccessful")

	t.Log("a value of the wrong type is refused at apply")
	out, err = env.KubectlIn("apiVersion: demo.acme.com/v1alpha1\nkind: Podinfo\nmetadata: {name: wrong}\nspec: {replicaCount: three}\n", "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring(`spec.replicaCount: Invalid value: "string": spec.replicaCount in body must be of type integer`))
	out, err = env.KubectlIn("apiVersion: demo.acme.com/v1alpha1\nkind: Podinfo\nmetadata: {name: "+strings.Repeat("p", 54)+"}\nspec: {}\n", "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("metadata.name must be at most 53 characters"))
}

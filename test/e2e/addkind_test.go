package e2e

import (
	"context"
	"os"
	"os/exec"
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
	"github.com/acme/platform-operator/test/testkit"
)

// TestAddKindFromHelmCreate: `make kind` turns the starter chart of `helm
// create` (a chart nobody here wrote) into an API. On a copy of the
// repository, the commands docs/adding-a-kind.md shows run verbatim (helm
// create, make kind, make bundle) after a make kind with a bad KIND that
// changes no file; make kind writes the CRD, RBAC, sample and watches
// entry; a runtime
// that runs with exactly the generated ClusterRole, as its own
// ServiceAccount, installs the generated sample (Deployed, Ready), and the
// CRD refuses a value of the wrong type at apply.
func TestAddKindFromHelmCreate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := t.TempDir()
	// What `make kind` and `make bundle` need of the repository; bin/ is the
	// suite's, with the tools it built, and their pins are older than them
	// so that make builds none again.
	testkit.CopyTree(t, env.Root, repo, append(kindgen.Files,
		"Makefile", "make", "go.mod", "go.sum", "cmd", "internal", "extensions", "hack/kube", "hack/tools", "bundle", "bundle.Dockerfile")...)
	g.Expect(os.Symlink(filepath.Join(env.Root, "bin"), filepath.Join(repo, "bin"))).To(Succeed())
	pins, err := filepath.Glob(filepath.Join(repo, "hack", "tools", "*", "go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range pins {
		g.Expect(os.Chtimes(p, time.Unix(0, 0), time.Unix(0, 0))).To(Succeed())
	}

	t.Log("a make kind that fails changes no file")
	before := testkit.Snapshot(t, repo, kindgen.Files...)
	out, err := shell(repo, "make kind CHART=helm-charts/nginx GROUP=demo.acme.com KIND=podinfo")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring(`KIND "podinfo" must be UpperCamelCase`))
	g.Expect(testkit.Snapshot(t, repo, kindgen.Files...)).To(Equal(before))

	t.Log("the commands of docs/adding-a-kind.md, verbatim")
	for _, line := range testkit.ShellLines(t, filepath.Join(env.Root, "docs", "adding-a-kind.md"), 0) {
		t.Log("$ " + line)
		out, err := shell(repo, line)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	gvk := schema.GroupVersionKind{Group: "demo.acme.com", Version: "v1alpha1", Kind: "Podinfo"}

	t.Log("install the generated CRD")
	crd := filepath.Join(repo, "config", "crd", "bases", "demo.acme.com_podinfos.yaml")
	out, err = env.Kubectl("apply", "--server-side", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "-f", crd, "--wait=false") })
	out, err = env.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)

	roleYAML, err := os.ReadFile(filepath.Join(repo, "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(roleYAML)).To(ContainSubstring("resources: [podinfos]"))
	t.Log("a runtime for the new kind only, with exactly the generated ClusterRoles")
	startKindRuntime(t, repo, "Podinfo", "addkind")

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

// shell runs a command line as a user types it, in dir, with the suite's
// bin/ (helm, kubectl) first on the PATH.
func shell(dir, line string) (string, error) {
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(env.Root, "bin")+string(os.PathListSeparator)+filepath.Dir(env.KubectlPath)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

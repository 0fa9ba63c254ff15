package e2e

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/gen/kindgen"
	"github.com/acme/platform-operator/test/testkit"
)

// TestChartWithCRDsAndDependencies: a kind made by make kind from a chart
// with a CRD in crds/, a vendored subchart used as itself, under an alias
// and behind a condition that is off, and a library chart, under each
// watches.yaml crds policy (one kind and CRD per policy, in parallel). Its
// runtime runs with exactly the generated ClusterRole. A resource
// installs (the subchart's, the alias's and the library's objects are
// there, the disabled one's are not; the CRD is there unless the policy is
// skip, and so is the object of it the chart renders), a second resource that turns the disabled subchart on gets its
// objects (Helm edits the chart it installs; the runtime gives it a
// copy), an edit of the alias's values reaches its Deployment, a deleted
// subchart Deployment comes back, and a new chart version that changes
// the CRD updates it with create-replace only. Deleting the resource
// uninstalls the release and keeps the CRD.
func TestChartWithCRDsAndDependencies(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"skip", "create", "create-replace"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			chartDepsUnderPolicy(t, policy)
		})
	}
}

func chartDepsUnderPolicy(t *testing.T, policy string) {
	g := NewWithT(t)
	ctx := context.Background()
	short := strings.ReplaceAll(policy, "create-replace", "replace")
	kind := "Deps" + strings.ToUpper(short[:1]) + short[1:]
	prefix := "chartdeps-" + short
	ns := "e2e-chartdeps-" + short
	repo := t.TempDir()
	testkit.CopyTree(t, env.Root, repo, kindgen.Files...)
	// The chart's templates render an object of its CRD, unless nothing
	// installs the CRD (skip).
	d := testkit.DependencyChart{Name: "deps", CRDGroup: short + ".deps.e2e.acme.com", Widget: policy != "skip"}
	chartDir := testkit.BuildDependencyChart(t, filepath.Join(repo, "helm-charts"), d)
	group := short + ".e2e.acme.com"
	g.Expect(kindgen.Run(kindgen.Options{Root: repo, Chart: "helm-charts/deps", Group: group, Kind: kind})).To(Succeed())
	watches := filepath.Join(repo, "watches.yaml")
	data, err := os.ReadFile(watches)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(HaveSuffix("  crds: create\n"), "make kind writes the default")
	g.Expect(os.WriteFile(watches, []byte(strings.TrimSuffix(string(data), "create\n")+policy+"\n"), 0o644)).To(Succeed())
	// Run again: the entry is kept, and the role the runtime runs with
	// follows its policy.
	g.Expect(kindgen.Run(kindgen.Options{Root: repo, Chart: "helm-charts/deps", Group: group, Kind: kind})).To(Succeed())
	role, err := os.ReadFile(filepath.Join(repo, "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	if policy == "skip" {
		g.Expect(string(role)).NotTo(ContainSubstring(d.CRDName()))
	} else {
		g.Expect(string(role)).To(ContainSubstring("verbs: [get]\n  resourceNames: [" + d.CRDName() + "]\n"))
	}
	g.Expect(strings.Contains(string(role), "verbs: [patch]\n  resourceNames: ["+d.CRDName()+"]\n")).To(Equal(policy == "create-replace"))

	gvk := schema.GroupVersionKind{Group: group, Version: "v1alpha1", Kind: kind}
	crdFile := filepath.Join(repo, "config", "crd", "bases", group+"_"+strings.ToLower(kind)+"s.yaml")
	out, err := env.Kubectl("apply", "--server-side", "-f", crdFile)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() {
		_, _ = env.Kubectl("delete", "-f", crdFile, "--wait=false")
		_, _ = env.Kubectl("delete", "crd", d.CRDName(), "--ignore-not-found", "--wait=false")
	})
	out, err = env.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "-f", crdFile)
	g.Expect(err).NotTo(HaveOccurred(), out)
	runtime := startKindRuntime(t, repo, kind, prefix)

	env.CreateNamespace(t, ns)
	t.Cleanup(func() {
		_, _ = env.Kubectl("delete", strings.ToLower(kind), "--all", "-n", ns, "--wait=true", "--timeout=60s")
	})
	t.Log("install")
	applyCR(g, gvk, ns, "r1", "{}")
	expectDeployed(t, gvk, ns, "r1", "InstallSuccessful")
	for _, name := range []string{"r1-deps", "r1-child", "r1-extra"} {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &appsv1.Deployment{})).To(Succeed(), name)
	}
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1-optional"}, &appsv1.Deployment{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the subchart whose condition is off renders nothing: %v", err)
	lib := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1-lib"}, lib)).To(Succeed())
	g.Expect(lib.Data).To(HaveKeyWithValue("from", "lib"))
	crdFields := func() (string, error) {
		return env.Kubectl("get", "crd", d.CRDName(), "-o", "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties}")
	}
	fields, err := crdFields()
	if policy == "skip" {
		g.Expect(err).To(HaveOccurred(), "crds: skip installs no CRD")
		g.Expect(fields).To(ContainSubstring("NotFound"))
	} else {
		g.Expect(err).NotTo(HaveOccurred(), fields)
		g.Expect(fields).To(ContainSubstring("colour"))
		out, err := env.Kubectl("get", "widgets."+d.CRDGroup, "r1-widget", "-n", ns, "-o", "jsonpath={.spec.size}")
		g.Expect(err).NotTo(HaveOccurred(), "the release's object of the CRD it installed first: %s", out)
		g.Expect(out).To(Equal("1"))
	}

	t.Log("a second resource turns the subchart on that the first left off")
	applyCR(g, gvk, ns, "r2", "optional: {enabled: true}")
	expectDeployed(t, gvk, ns, "r2", "InstallSuccessful")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r2-optional"}, &appsv1.Deployment{})).To(Succeed())
	out, err = env.Kubectl("delete", strings.ToLower(kind), "r2", "-n", ns, "--wait=true", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("upgrade: an edit of the alias's values")
	applyCR(g, gvk, ns, "r1", "extra: {replicaCount: 2}")
	g.Eventually(func(g Gomega) int32 {
		dep := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1-extra"}, dep)).To(Succeed())
		return *dep.Spec.Replicas
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(BeEquivalentTo(2))
	expectDeployed(t, gvk, ns, "r1", "UpgradeSuccessful")

	t.Log("repair: a deleted subchart Deployment comes back")
	child := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1-child"}, child)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, child)).To(Succeed())
	g.Eventually(func(g Gomega) {
		again := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1-child"}, again)).To(Succeed())
		g.Expect(again.UID).NotTo(Equal(child.UID))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	if policy != "skip" {
		t.Log("a new chart version with a changed CRD")
		g.Expect(runtime.stop()).To(Succeed())
		g.Expect(os.RemoveAll(chartDir)).To(Succeed())
		d2 := d
		d2.Version, d2.CRDField = "0.2.0", "shade"
		testkit.BuildDependencyChart(t, filepath.Join(repo, "helm-charts"), d2)
		g.Expect(runtime.start()).To(Succeed())
		g.Eventually(func(g Gomega) string {
			dep := &appsv1.Deployment{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1-deps"}, dep)).To(Succeed())
			return dep.Labels["helm.sh/chart"]
		}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal("deps-0.2.0"))
		fields, err := crdFields()
		g.Expect(err).NotTo(HaveOccurred(), fields)
		if policy == "create-replace" {
			g.Expect(fields).To(ContainSubstring("shade"), "create-replace updates the CRD")
		} else {
			g.Expect(fields).NotTo(ContainSubstring("shade"), "create, as Helm, never updates a CRD")
			g.Expect(fields).To(ContainSubstring("colour"))
		}
	}

	t.Log("uninstall: the release goes, the CRD stays")
	out, err = env.Kubectl("delete", strings.ToLower(kind), "r1", "-n", ns, "--wait=true", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	revisions, err := env.ReleaseRevisions(ctx, ns, "r1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revisions).To(BeEmpty())
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1-child"}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(BeTrue(), "the uninstall deletes the subchart's objects")
	if policy != "skip" {
		fields, err := crdFields()
		g.Expect(err).NotTo(HaveOccurred(), "an uninstall keeps the chart's CRD: %s", fields)
	}
}

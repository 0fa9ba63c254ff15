package olm

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	platformv1alpha1 "github.com/acme/platform-operator/extensions/api/platform/v1alpha1"
	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

var (
	csvGVK          = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	catalogGVK      = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "CatalogSource"}
	subscriptionGVK = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "Subscription"}
	chartRolloutGVK = platformv1alpha1.GroupVersion.WithKind("ChartRollout")
)

// The namespaces the examples and the WebApp with a database live in.
const (
	examplesNamespace = "olm-examples"
	webAppNamespace   = "olm-webapp"
)

// TestOLM takes the operator through its life under OLM, in order: each
// step needs the one before, so the first failure ends the test.
func TestOLM(t *testing.T) {
	for _, step := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"RunBundle", testRunBundle},
		{"Scorecard", testScorecard},
		{"ALMExamplesDeployed", testALMExamples},
		{"WebhookRefusesAtApply", testWebhook},
		{"BundleUpgradeKeepsReleases", testBundleUpgrade},
		{"CleanupLeavesNothing", testCleanup},
		{"CatalogSubscription", testCatalogSubscription},
		{"OLMUninstall", testOLMUninstall},
	} {
		if !t.Run(step.name, step.f) {
			return
		}
	}
}

func csvName(version string) string { return packageName + ".v" + version }

// digestOf is the digest of a reference by digest.
func digestOf(ref string) string { return ref[strings.Index(ref, "@")+1:] }

// expectCSVSucceeded waits until the CSV of version in ns has Succeeded and
// the operator's Deployment it owns has every Pod Ready with that version's
// image.
func expectCSVSucceeded(t *testing.T, ns, version string) {
	t.Helper()
	ctx := context.Background()
	NewWithT(t).Eventually(func(g Gomega) {
		csv, err := cluster.Get(ctx, csvGVK, ns, csvName(version))
		g.Expect(err).NotTo(HaveOccurred())
		phase, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
		msg, _, _ := unstructured.NestedString(csv.Object, "status", "message")
		g.Expect(phase).To(Equal("Succeeded"), msg)
		dep := &appsv1.Deployment{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorDeployment}, dep)).To(Succeed())
		g.Expect(testkit.DeploymentReady(dep)).To(BeTrue(), "status: %+v", dep.Status)
		g.Expect(dep.Labels).To(HaveKeyWithValue("olm.owner", csvName(version)))
		for _, c := range dep.Spec.Template.Spec.Containers {
			g.Expect(c.Image).To(Equal(operatorImages[version]), "container %s: the bundle's image, by digest", c.Name)
		}
		var pods corev1.PodList
		g.Expect(cluster.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels))).To(Succeed())
		g.Expect(dep.Spec.Replicas).NotTo(BeNil())
		g.Expect(pods.Items).To(HaveLen(int(*dep.Spec.Replicas)), "the old version's Pods are gone")
		for _, pod := range pods.Items {
			for _, cs := range pod.Status.ContainerStatuses {
				g.Expect(cs.Ready).To(BeTrue(), "container %s of %s", cs.Name, pod.Name)
				g.Expect(cs.ImageID).To(HaveSuffix(digestOf(operatorImages[version])), "container %s of %s", cs.Name, pod.Name)
			}
		}
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// testRunBundle: `operator-sdk run bundle` as docs/operations.md says it, with the
// opm image built from source as the index and decompression image.
func testRunBundle(t *testing.T) {
	g := NewWithT(t)
	cluster.CreateNamespace(t, operatorNamespace)
	start := time.Now()
	out, err := operatorSDK("run", "bundle", bundleImages[firstVersion],
		"--namespace", operatorNamespace, "--install-mode", "AllNamespaces",
		"--index-image", tlsName(opmImage), "--decompression-image", tlsName(opmImage),
		"--timeout", "5m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("operator-sdk run bundle returned after %s (the CSV had Succeeded)", time.Since(start).Round(time.Millisecond))
	t.Logf("operator-sdk: %s", testkit.LastLine(out))
	expectCSVSucceeded(t, operatorNamespace, firstVersion)
	expectPinnedCSV(t, operatorNamespace, firstVersion)
}

// relatedImagesOf returns the CSV's spec.relatedImages, name to image.
func relatedImagesOf(t *testing.T, ns, version string) map[string]string {
	t.Helper()
	csv, err := cluster.Get(context.Background(), csvGVK, ns, csvName(version))
	if err != nil {
		t.Fatalf("reading the CSV: %v", err)
	}
	items, _, _ := unstructured.NestedSlice(csv.Object, "spec", "relatedImages")
	out := map[string]string{}
	for _, it := range items {
		m, _ := it.(map[string]any)
		out[fmt.Sprint(m["name"])] = fmt.Sprint(m["image"])
	}
	return out
}

// expectPinnedCSV: the CSV of version, built with USE_IMAGE_DIGESTS,
// references every image it runs by digest (the operator's containers and
// its RELATED_IMAGE_* variables), and lists each of them in relatedImages,
// so a mirroring tool that copies relatedImages copies everything the
// operator runs.
func expectPinnedCSV(t *testing.T, ns, version string) {
	t.Helper()
	g := NewWithT(t)
	csv, err := cluster.Get(context.Background(), csvGVK, ns, csvName(version))
	g.Expect(err).NotTo(HaveOccurred())
	related := relatedImagesOf(t, ns, version)
	listed := slices.Collect(maps.Values(related))
	// containerImage, an annotation nothing pulls, is pinned by
	// operator-sdk only when its registry host has a dot (its pullspec
	// heuristic); the node's registry is localhost:5000, so here it names
	// the operator's image by tag.
	g.Expect(csv.GetAnnotations()["containerImage"]).To(BeElementOf(operatorImages[version], operatorRepo+":v"+version))
	var refs []string
	deps, _, _ := unstructured.NestedSlice(csv.Object, "spec", "install", "spec", "deployments")
	for _, d := range deps {
		containers, _, _ := unstructured.NestedSlice(d.(map[string]any), "spec", "template", "spec", "containers")
		for _, c := range containers {
			cm := c.(map[string]any)
			refs = append(refs, fmt.Sprint(cm["image"]))
			env, _, _ := unstructured.NestedSlice(cm, "env")
			for _, e := range env {
				em := e.(map[string]any)
				if strings.HasPrefix(fmt.Sprint(em["name"]), "RELATED_IMAGE_") {
					refs = append(refs, fmt.Sprint(em["value"]))
				}
			}
		}
	}
	for _, ref := range refs {
		g.Expect(ref).To(ContainSubstring("@sha256:"), "every image of the CSV by digest")
		g.Expect(listed).To(ContainElement(ref), "every image of the CSV in relatedImages")
	}
	want := []string{operatorImages[version]}
	for _, img := range relatedImages[version] {
		want = append(want, digests[img])
	}
	g.Expect(listed).To(ContainElements(want))
	t.Logf("CSV %s: %d image references, all by digest and in relatedImages %v", csvName(version), len(refs), related)
}

// testScorecard runs `operator-sdk scorecard` with the bundle's own config,
// its images swapped for the scorecard-test built from source, and expects
// every test to pass.
func testScorecard(t *testing.T) {
	g := NewWithT(t)
	config, err := os.ReadFile(filepath.Join(cluster.Root, "bundle", "tests", "scorecard", "config.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	const upstream = "quay.io/operator-framework/scorecard-test:v1.42.2"
	g.Expect(string(config)).To(ContainSubstring(upstream), "the bundle's scorecard config names the image this suite replaces")
	local := filepath.Join(t.TempDir(), "config.yaml")
	g.Expect(os.WriteFile(local, []byte(strings.ReplaceAll(string(config), upstream, scorecardImage)), 0o644)).To(Succeed())
	start := time.Now()
	out, err := operatorSDK("scorecard", filepath.Join(cluster.Root, "bundle"), "--config", local,
		"--namespace", operatorNamespace, "--untar-image", scorecardImage, "--storage-image", scorecardImage,
		"--wait-time", "180s", "--output", "json")
	g.Expect(err).NotTo(HaveOccurred(), out)
	var list struct {
		Items []struct {
			Status struct {
				Results []struct {
					Name   string   `json:"name"`
					State  string   `json:"state"`
					Errors []string `json:"errors"`
				} `json:"results"`
			} `json:"status"`
		} `json:"items"`
	}
	from := strings.Index(out, "{")
	g.Expect(from).NotTo(BeNumerically("<", 0), out)
	g.Expect(json.Unmarshal([]byte(out[from:]), &list)).To(Succeed(), out)
	var results []string
	for _, item := range list.Items {
		for _, r := range item.Status.Results {
			results = append(results, r.Name+": "+r.State)
			g.Expect(r.State).To(Equal("pass"), "%s: %v", r.Name, r.Errors)
		}
	}
	g.Expect(results).To(HaveLen(strings.Count(string(config), "entrypoint:")), "a result for each test of the config")
	t.Logf("scorecard (%s): %s", time.Since(start).Round(time.Millisecond), strings.Join(results, ", "))
}

// almExamples returns the CSV's alm-examples annotation, the examples the
// console offers, read from the CSV OLM installed.
func almExamples(t *testing.T, version string) []map[string]any {
	t.Helper()
	csv, err := cluster.Get(context.Background(), csvGVK, operatorNamespace, csvName(version))
	if err != nil {
		t.Fatalf("reading the CSV: %v", err)
	}
	var examples []map[string]any
	if err := json.Unmarshal([]byte(csv.GetAnnotations()["alm-examples"]), &examples); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	return examples
}

// deployedKinds are the kinds the Helm runtime reconciles to Deployed; the
// CronScaler reports Ready.
var readyCondition = map[string]string{"Nginx": "Deployed", "WebApp": "Deployed", "NamespaceTenant": "Deployed", "CronScaler": "Ready"}

// testALMExamples: every example of the CSV, applied as it is, reconciles.
func testALMExamples(t *testing.T) {
	ctx := context.Background()
	cluster.CreateNamespace(t, examplesNamespace)
	examples := almExamples(t, firstVersion)
	for _, ex := range examples {
		data, _ := json.Marshal(ex)
		cluster.Apply(t, examplesNamespace, string(data))
	}
	start := time.Now()
	for _, ex := range examples {
		u := &unstructured.Unstructured{Object: ex}
		ns := examplesNamespace
		if u.GetKind() == "NamespaceTenant" {
			ns = ""
		}
		cond := readyCondition[u.GetKind()]
		NewWithT(t).Eventually(func(g Gomega) {
			got, err := cluster.Get(ctx, u.GroupVersionKind(), ns, u.GetName())
			g.Expect(err).NotTo(HaveOccurred())
			status, reason, msg := testkit.Condition(got, cond)
			g.Expect(status).To(Equal("True"), "%s %s: %s %s: %s", u.GetKind(), u.GetName(), cond, reason, msg)
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}
	t.Logf("%d alm-examples applied as they are: all Deployed (CronScaler Ready) %s after the last apply", len(examples), time.Since(start).Round(time.Millisecond))

	// The full examples name images of registries not reachable here, so
	// their Pods never start; yet they hold CPU requests (several replicas,
	// a database) that this two-core node needs for the upgrade's new
	// operator Pod and the WebApp with a database. They go; the others stay
	// for the upgrade to adopt.
	out, err := cluster.Kubectl("delete", "-n", examplesNamespace, "webapp/webapp-full", "webapp/webapp-sample", "nginx/nginx-full", "--wait=true", "--timeout=180s")
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), out)
}

// testBundleUpgrade: `operator-sdk run bundle-upgrade` to the next version
// replaces the CSV and the operator's Pod. The new image ships a new
// version of the nginx chart (setup): the new operator moves every Nginx to
// it in the waves of the default rollout policy, as the ChartRollout's
// history and the releases' Helm records show, and gives no other release
// a new revision; a WebApp's generated password and the data in its
// database survive.
func testBundleUpgrade(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "shop"
	ns := webAppNamespace
	cluster.CreateNamespace(t, ns)
	cluster.ClientPod(t, ns, realnode.NginxImage)
	host := name + "." + ns + ".svc.cluster.local"
	cluster.Apply(t, ns, realnode.WebAppManifest(name, 1))
	cluster.ExpectServing(t, ns, name, 1)
	password := cluster.DBPassword(g, ns, name)
	value := "order-" + rand.String(8)
	out, err := cluster.HTTPGet(ns, host, 80, "/write?v="+value)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("200 OK"))
	// A client edits a spec every 200 ms through the upgrade (dry runs:
	// nothing is stored); the edits the webhook refused are counted.
	cluster.Apply(t, ns, "{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: edited}, spec: {replicaCount: 0}}")
	g.Eventually(func(g Gomega) {
		status, _, msg := cluster.ConditionOf(g, testkit.NginxGVK, ns, "edited", "Deployed")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	// An Nginx that chose its image: the upgrade's new default is not for it.
	cluster.Apply(t, ns, fmt.Sprintf("{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: own-nginx}, spec: {replicaCount: 0, image: {repository: %s, tag: %q}}}",
		realnode.NginxRepo, realnode.NginxTag))
	g.Eventually(func(g Gomega) {
		status, _, msg := cluster.ConditionOf(g, testkit.NginxGVK, ns, "own-nginx", "Deployed")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	defaults := nginxWithDefaultImage(ctx, g)
	g.Expect(defaults).To(ContainElements(ns+"/edited", examplesNamespace+"/nginx-sample"))
	g.Expect(defaults).NotTo(ContainElement(ns + "/own-nginx"))
	// nginx-sample's Pods run the first default, by digest.
	expectNginxPods(ctx, g, examplesNamespace, "nginx-sample", digests[realnode.NginxImage])
	before, err := cluster.Releases(ctx)
	g.Expect(err).To(Succeed())
	t.Logf("before the upgrade: %d releases, revisions %v; Nginx on the default image: %v", len(before), before, defaults)
	caBefore := olmCA(ctx, g)
	editor := testkit.StartEditor(cluster.Client, testkit.NginxGVK, ns, "edited", "podAnnotations", 200*time.Millisecond)
	start := time.Now()
	out, err = operatorSDK("run", "bundle-upgrade", bundleImages[upgradeVersion],
		"--namespace", operatorNamespace, "--timeout", "5m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("operator-sdk run bundle-upgrade returned after %s", time.Since(start).Round(time.Millisecond))
	expectCSVSucceeded(t, operatorNamespace, upgradeVersion)
	g.Eventually(func() bool {
		_, err := cluster.Get(ctx, csvGVK, operatorNamespace, csvName(firstVersion))
		return apierrors.IsNotFound(err)
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "the old CSV is replaced")
	t.Logf("CSV %s replaced by %s, Succeeded %s after bundle-upgrade started", csvName(firstVersion), csvName(upgradeVersion), time.Since(start).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	edits := editor.Finish()
	t.Logf("through the upgrade: %d spec edits, %d refused, slowest admission %s", edits.Sent, len(edits.Refused), edits.Slowest.Round(time.Millisecond))
	for _, r := range edits.Refused {
		t.Logf("  refused: %s", r)
	}
	// OLM issues a new CA when the old CSV, the only owner of its
	// certificate's Secret, is deleted; every replica serves the new
	// certificate when the caBundles carry the new CA, not before.
	caAfter := olmCA(ctx, g)
	t.Logf("the webhook's CA before the upgrade %s, after %s", caBefore, caAfter)
	g.Expect(edits.Refused).To(BeEmpty(), "spec edits refused through the upgrade")
	// The webhook admits again once the configurations carry the CA of
	// the certificate the new Pod serves.
	probe := "{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: probe}, spec: {replicaCount: 0}}"
	g.Eventually(func(g Gomega) {
		out, err := cluster.KubectlIn(probe, "create", "--dry-run=server", "-n", ns, "-f", "-")
		g.Expect(err).NotTo(HaveOccurred(), "%s\n%s", out, webhookState(ctx))
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	t.Logf("the webhook admits %s after bundle-upgrade started; %s", time.Since(start).Round(time.Millisecond), webhookState(ctx))

	// The new operator has reconciled the WebApp once its log says so; by
	// then nothing may have a new revision.
	g.Eventually(func() string {
		// Every replica's log: the one leading the manager's Lease
		// reconciles.
		out, _ := cluster.Kubectl("logs", "-n", operatorNamespace, "-l", "control-plane=controller-manager", "-c", "manager",
			"--tail=-1", "--max-log-requests=4")
		return out
	}).WithTimeout(2*time.Minute).WithPolling(2*time.Second).Should(MatchRegexp(`Release reconciled.*"name":"shop","namespace":"olm-webapp"|Release reconciled.*"namespace":"olm-webapp".*"name":"shop"|"shop".*Release reconciled`), "the new operator reconciles the WebApp")
	expectNginxRollout(t, ctx, start)
	// Each Nginx moved to the new chart once; no other release got a new
	// revision.
	nginxes := nginxKeys(ctx, g)
	var moves map[string][]string
	movedOnce := func(g Gomega) {
		after, err := cluster.Releases(ctx)
		g.Expect(err).To(Succeed())
		moves = map[string][]string{}
		for key, revs := range before {
			if !slices.Contains(nginxes, key) {
				g.Expect(after[key]).To(Equal(revs), "%s: no new revision", key)
				continue
			}
			moves[key] = expectNginxMove(ctx, g, key, lastRevision(revs), lastRevision(after[key]), slices.Contains(defaults, key))
		}
		g.Expect(slices.Sorted(maps.Keys(moves))).To(Equal(nginxes), "every Nginx has a release from before the upgrade")
	}
	g.Eventually(movedOnce).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	g.Consistently(movedOnce).WithTimeout(10 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
	for _, key := range nginxes {
		t.Logf("  %s: new revisions %s", key, strings.Join(moves[key], ", "))
	}
	t.Logf("%s after bundle-upgrade started: each of %v on chart nginx-%s, those on the default image (%v) on the new default nginx, every other release as it was",
		time.Since(start).Round(time.Millisecond), nginxes, nginxUpgradeChartVersion, defaults)
	expectNginxPods(ctx, g, examplesNamespace, "nginx-sample", digests[nginxUpgradeImage])
	dep := &appsv1.Deployment{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "own-nginx"}, dep)).To(Succeed())
	g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal(realnode.NginxImage), "the Nginx that chose its image keeps it")
	g.Expect(cluster.DBPassword(g, ns, name)).To(Equal(password), "the generated password survives the upgrade")
	out, err = cluster.HTTPGet(ns, host, 80, "/read")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(value), "the data written before the upgrade")

	t.Log("an edit after the upgrade is a Helm upgrade by the new operator")
	edit := time.Now()
	g.Eventually(func(g Gomega) {
		out, err := cluster.KubectlIn(realnode.WebAppManifest(name, 2), "apply", "-n", ns, "-f", "-")
		g.Expect(err).NotTo(HaveOccurred(), "%s\n%s", out, webhookState(ctx))
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	t.Logf("edit admitted %s after the first try, %s after bundle-upgrade started", time.Since(edit).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	g.Eventually(func(g Gomega) {
		status, reason, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Deployed")
		g.Expect([]string{status, reason}).To(Equal([]string{"True", "UpgradeSuccessful"}), msg)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	cluster.ExpectServing(t, ns, name, 2)
	after, err := cluster.Releases(ctx)
	g.Expect(err).To(Succeed())
	g.Expect(after[ns+"/"+name]).To(HaveLen(len(before[ns+"/"+name]) + 1))
	g.Expect(cluster.DBPassword(g, ns, name)).To(Equal(password))
}

// expectNginxRollout waits until the ChartRollout of the upgrade's nginx
// chart is Complete and checks its history: the waves the default policy
// (docs/upgrading.md) gives the cluster's Nginx resources, none of them
// canaries, each wave started once the one before had finished, every
// release moved and none failed.
func expectNginxRollout(t *testing.T, ctx context.Context, upgradeStarted time.Time) {
	t.Helper()
	g := NewWithT(t)
	name := "nginx-" + nginxUpgradeChartVersion
	var cr platformv1alpha1.ChartRollout
	g.Eventually(func(g Gomega) {
		u, err := cluster.Get(ctx, chartRolloutGVK, "", name)
		g.Expect(err).NotTo(HaveOccurred(), "the new operator starts the rollout")
		cr = platformv1alpha1.ChartRollout{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cr)).To(Succeed())
		g.Expect(cr.Status.Phase).To(Equal(platformv1alpha1.PhaseComplete), "wave %d of %d: %s", cr.Status.Wave, cr.Status.Waves, cr.Status.Message)
	}).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	nginxes := nginxKeys(ctx, g)
	n := int32(len(nginxes))
	g.Expect(cr.Spec).To(Equal(platformv1alpha1.ChartRolloutSpec{Group: testkit.NginxGVK.Group, Kind: testkit.NginxGVK.Kind, Version: nginxUpgradeChartVersion}))
	g.Expect([]int32{cr.Status.Releases, cr.Status.Moved, cr.Status.Failed, cr.Status.Pinned, cr.Status.Attempt}).To(Equal([]int32{n, n, 0, 0, 1}),
		"releases, moved, failed, pinned, attempt of %d Nginx", n)
	sizes := defaultWaveSizes(len(nginxes))
	g.Expect(cr.Status.History).To(HaveLen(len(sizes)), "the waves of the default policy for %d releases: %v", n, sizes)
	g.Expect(cr.Status.Waves).To(BeEquivalentTo(len(sizes)))
	for i, w := range cr.Status.History {
		g.Expect(w.Wave).To(BeEquivalentTo(i+1), "history line %d", i)
		g.Expect([]int32{w.Releases, w.Moved, w.Failed}).To(Equal([]int32{int32(sizes[i]), int32(sizes[i]), 0}), "wave %d: releases, moved, failed", w.Wave)
		g.Expect(w.StartedAt).NotTo(BeNil(), "wave %d", w.Wave)
		g.Expect(w.FinishedAt).NotTo(BeNil(), "wave %d", w.Wave)
		g.Expect(w.FinishedAt.Before(w.StartedAt)).To(BeFalse(), "wave %d finished before it started", w.Wave)
		if i > 0 {
			prev := cr.Status.History[i-1]
			g.Expect(w.StartedAt.Before(prev.FinishedAt)).To(BeFalse(), "wave %d started %s, before wave %d finished %s",
				w.Wave, w.StartedAt.UTC().Format(time.RFC3339), prev.Wave, prev.FinishedAt.UTC().Format(time.RFC3339))
		}
		t.Logf("wave %d of %d: %d releases, %d moved, %d failed; started %s, finished %s (%s), %s after bundle-upgrade started",
			w.Wave, len(sizes), w.Releases, w.Moved, w.Failed, w.StartedAt.UTC().Format(time.TimeOnly), w.FinishedAt.UTC().Format(time.TimeOnly),
			w.FinishedAt.Sub(w.StartedAt.Time), w.FinishedAt.Sub(upgradeStarted).Round(time.Second))
	}
	t.Logf("ChartRollout %s Complete: %d Nginx in waves %v (%s)", name, n, sizes, cr.Status.Message)
}

// defaultWaveSizes is how many releases each wave of the default rollout
// policy moves when a kind has n releases and no canaries: the waves end
// at 1, 10%, 50% and 100% of n, shares rounded up, and a wave that would
// not grow the count is left out.
func defaultWaveSizes(n int) []int {
	var sizes []int
	done := 0
	for _, end := range []int{1, (n*10 + 99) / 100, (n*50 + 99) / 100, n} {
		if end = min(end, n); end > done {
			sizes = append(sizes, end-done)
			done = end
		}
	}
	return sizes
}

// expectNginxMove checks the Nginx of key ("namespace/name") after the
// upgrade, its release's last revision having been from before it and to
// now: the resource says it runs the new chart version, and the release
// has exactly one new revision at that chart, its last. A release on the
// default image (onDefault) runs the new default nginx from its first new
// revision on; one that chose its image keeps it and moves in that one
// revision. It returns the new revisions, described.
//
// A release that runs the default image may have a revision before its
// move: its wave admits it after the new operator's first reconcile of it,
// and until then the new RELATED_IMAGE_NGINX, a change of its values, is
// applied with the chart version the release runs (docs/upgrading.md,
// "Edits, new resources and pins during a rollout").
func expectNginxMove(ctx context.Context, g Gomega, key string, from, to int, onDefault bool) []string {
	ns, name, _ := strings.Cut(key, "/")
	res, err := cluster.Get(ctx, testkit.NginxGVK, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	version, _, _ := unstructured.NestedString(res.Object, "status", "chartVersion")
	g.Expect(version).To(Equal(nginxUpgradeChartVersion), "%s: status.chartVersion", key)
	g.Expect(to).To(BeNumerically(">", from), "%s: the upgrade moved it", key)
	var described []string
	for rev := from + 1; rev <= to; rev++ {
		rec, err := cluster.ReleaseRecord(ctx, ns, name, rev)
		g.Expect(err).NotTo(HaveOccurred(), "%s revision %d", key, rev)
		chart := rec.Chart.Metadata.Name + "-" + rec.Chart.Metadata.Version
		newImage := strings.Contains(rec.Manifest, digests[nginxUpgradeImage])
		described = append(described, fmt.Sprintf("v%d %s (%s, new default image: %t)", rev, chart, rec.Info.Status, newImage))
		g.Expect(newImage).To(Equal(onDefault), "%s revision %d runs the new default nginx only when it runs the default image", key, rev)
		if rev == to {
			g.Expect(chart).To(Equal("nginx-"+nginxUpgradeChartVersion), "%s: its last revision is the new chart", key)
		} else {
			g.Expect(chart).To(Equal("nginx-"+nginxChartVersion), "%s revision %d: before its move, the chart it ran", key, rev)
		}
	}
	// The new default image comes with the new chart, in the release's
	// wave: one revision, not an early one with the image and a second
	// with the chart.
	g.Expect(to-from).To(Equal(1), "%s: one revision, in its wave: %v", key, described)
	return described
}

// lastRevision is the highest revision among a release's revision
// Secrets, named sh.helm.release.v1.<release>.v<revision>.
func lastRevision(secrets []string) int {
	last := 0
	for _, s := range secrets {
		if n, err := strconv.Atoi(s[strings.LastIndex(s, ".v")+2:]); err == nil {
			last = max(last, n)
		}
	}
	return last
}

// nginxKeys lists every Nginx resource, "namespace/name", sorted.
func nginxKeys(ctx context.Context, g Gomega) []string {
	items, err := cluster.List(ctx, testkit.NginxGVK, "")
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, it := range items {
		out = append(out, it.GetNamespace()+"/"+it.GetName())
	}
	slices.Sort(out)
	return out
}

// nginxWithDefaultImage lists the Nginx resources ("namespace/name") that
// leave their image unset, so run the operator's RELATED_IMAGE_NGINX.
func nginxWithDefaultImage(ctx context.Context, g Gomega) []string {
	items, err := cluster.List(ctx, testkit.NginxGVK, "")
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, it := range items {
		if _, set, _ := unstructured.NestedMap(it.Object, "spec", "image"); !set {
			out = append(out, it.GetNamespace()+"/"+it.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// expectNginxPods waits until the Deployment of the Nginx name runs
// image (a reference by digest) and every one of its Pods is Ready on it.
func expectNginxPods(ctx context.Context, g Gomega, ns, name, image string) {
	g.Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal(image))
		g.Expect(testkit.DeploymentReady(dep)).To(BeTrue(), "status: %+v", dep.Status)
		var pods corev1.PodList
		g.Expect(cluster.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(int(*dep.Spec.Replicas)), "the Pods of the earlier image are gone")
		for _, pod := range pods.Items {
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.Name == "nginx" {
					g.Expect(cs.Ready).To(BeTrue(), "%s", pod.Name)
					g.Expect(cs.ImageID).To(HaveSuffix(digestOf(image)), "%s", pod.Name)
				}
			}
		}
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

// testCleanup removes the operator as docs/operations.md says: `make
// bundle-cleanup` refuses while resources of its kinds exist, naming them,
// and removes nothing; with DELETE_RESOURCES=1 it deletes them first, so
// their finalizers run, then runs `operator-sdk cleanup`. Nothing of the
// operator or its releases is left.
func testCleanup(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env := []string{"SSL_CERT_FILE=" + cluster.RegistryCA}
	out, err := cluster.RunEnv(env, "", "make", "--no-print-directory", "bundle-cleanup")
	g.Expect(err).To(HaveOccurred(), "make bundle-cleanup with resources present:\n%s", out)
	g.Expect(out).To(ContainSubstring("Refusing to continue"))
	g.Expect(out).To(ContainSubstring("NamespaceTenant team-"))
	g.Expect(out).To(ContainSubstring("nothing of the operator was removed"))
	items, err := cluster.List(ctx, csvGVK, operatorNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).NotTo(BeEmpty(), "the CSV is still there")
	t.Logf("make bundle-cleanup refused:\n%s", out)

	start := time.Now()
	out, err = cluster.RunEnv(env, "", "make", "--no-print-directory", "bundle-cleanup", "DELETE_RESOURCES=1", "UNINSTALL_TIMEOUT=3m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("make bundle-cleanup DELETE_RESOURCES=1 took %s:\n%s", time.Since(start).Round(time.Millisecond), out)

	g.Eventually(func(g Gomega) {
		for _, gvk := range []schema.GroupVersionKind{csvGVK, subscriptionGVK, catalogGVK} {
			items, err := cluster.List(ctx, gvk, operatorNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(items).To(BeEmpty(), "%s left in %s", gvk.Kind, operatorNamespace)
		}
		var pods corev1.PodList
		g.Expect(cluster.Client.List(ctx, &pods, client.InNamespace(operatorNamespace))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty(), "Pods left in %s (operator, registry)", operatorNamespace)
		var crds apiextensionsv1.CustomResourceDefinitionList
		g.Expect(cluster.Client.List(ctx, &crds)).To(Succeed())
		for _, c := range crds.Items {
			g.Expect(c.Spec.Group).NotTo(BeElementOf("web.acme.com", "tenancy.acme.com", "autoscaling.acme.com"), "CRD %s left", c.Name)
		}
		g.Expect(cluster.Releases(ctx)).To(BeEmpty(), "Helm release Secrets left")
		var hooks admissionregistrationv1.ValidatingWebhookConfigurationList
		g.Expect(cluster.Client.List(ctx, &hooks, client.MatchingLabels{"olm.owner.namespace": operatorNamespace})).To(Succeed())
		g.Expect(hooks.Items).To(BeEmpty(), "webhook configurations left")
		for _, tenantNS := range []string{"team-payments", "team-x"} {
			err := cluster.Client.Get(ctx, client.ObjectKey{Name: tenantNS}, &corev1.Namespace{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "tenant namespace %s left: %v", tenantNS, err)
		}
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	// The PVC of the WebApp's database is kept by design (Retain); it is
	// the user's data, not the operator's.
}

// webhookState lists the operator's webhook configurations with their
// owner CSV and a fingerprint of their caBundle, and the CA of each
// certificate Secret in the operator's namespace, for failure messages.
// olmCA returns a short hash of the CA OLM keeps in the webhook's Secret.
func olmCA(ctx context.Context, g Gomega) string {
	var sec corev1.Secret
	// Between the old CSV's deletion and OLM's new certificate the Secret
	// may be gone for a moment.
	g.Eventually(func() error {
		return cluster.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "platform-operator-controller-manager-service-cert"}, &sec)
	}).WithTimeout(time.Minute).Should(Succeed())
	sum := sha256.Sum256(sec.Data["olmCAKey"])
	return fmt.Sprintf("%x", sum[:4])
}

func webhookState(ctx context.Context) string {
	var b strings.Builder
	var hooks admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := cluster.Client.List(ctx, &hooks, client.MatchingLabels{"olm.owner.namespace": operatorNamespace}); err != nil {
		return err.Error()
	}
	for _, h := range hooks.Items {
		for _, w := range h.Webhooks {
			sum := sha256.Sum256(w.ClientConfig.CABundle)
			fmt.Fprintf(&b, "webhook %s of %s (%s): caBundle %x; ", w.Name, h.Labels["olm.owner"], h.Name, sum[:4])
		}
	}
	var secrets corev1.SecretList
	if err := cluster.Client.List(ctx, &secrets, client.InNamespace(operatorNamespace)); err != nil {
		return err.Error()
	}
	for _, sec := range secrets.Items {
		if _, ok := sec.Data["tls.crt"]; !ok {
			continue
		}
		fmt.Fprintf(&b, "secret %s (%s):", sec.Name, sec.Labels["olm.owner"])
		for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
			sum := sha256.Sum256(sec.Data[k])
			fmt.Fprintf(&b, " %s %x", k, sum[:4])
		}
		b.WriteString("; ")
	}
	return b.String()
}

// testWebhook: the admission webhook declared in the CSV, with the
// certificate OLM issued, refuses at apply a release name another resource
// holds and a spec the chart does not render with.
func testWebhook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var hooks admissionregistrationv1.ValidatingWebhookConfigurationList
	g.Expect(cluster.Client.List(ctx, &hooks, client.MatchingLabels{"olm.owner.namespace": operatorNamespace})).To(Succeed())
	g.Expect(hooks.Items).To(HaveLen(4), "one configuration per webhookdefinition of the CSV")
	for _, h := range hooks.Items {
		g.Expect(h.Webhooks).To(HaveLen(1))
		g.Expect(h.Webhooks[0].ClientConfig.CABundle).NotTo(BeEmpty(), h.Name)
	}

	const ns = "olm-webhook"
	cluster.CreateNamespace(t, ns)
	cluster.Apply(t, ns, "{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: shop}, spec: {replicaCount: 0}}")
	out, err := cluster.KubectlIn("{apiVersion: web.acme.com/v1alpha1, kind: WebApp, metadata: {name: shop}, "+
		"spec: {deploymentTier: dev, webAppImage: 'app:1', webAppHostname: shop.example.com}}", "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(`The WebApp "shop" is invalid: metadata.name: Forbidden: release shop in namespace ` +
		ns + " belongs to Nginx " + ns + "/shop; rename this WebApp"))
	t.Logf("refused: %s", testkit.LastLine(out))
	out, err = cluster.KubectlIn("{apiVersion: web.acme.com/v1alpha1, kind: Nginx, metadata: {name: ports}, "+
		"spec: {containerPort: 8081, statusPort: 8081}}", "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("containerPort and statusPort must differ"))
	out, err = cluster.Kubectl("delete", "namespace", ns, "--wait=true", "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

// testCatalogSubscription: the bundle published in a file-based catalog
// image (make catalog-build catalog-push), installed by a CatalogSource and
// a Subscription; the operator it installs runs an Nginx whose Pods serve.
func testCatalogSubscription(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	out, err := cluster.Run("", "make", "catalog-build", "catalog-push",
		"BUNDLE_IMG="+bundleRepo+":v"+firstVersion, "CATALOG_IMG="+catalogImage, "OPM_IMG="+opmImage)
	g.Expect(err).NotTo(HaveOccurred(), out)

	const catalogNamespace, subNamespace = "olm", "operators"
	start := time.Now()
	cluster.Apply(t, "", fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: platform-operator-catalog
  namespace: %s
spec:
  sourceType: grpc
  image: %s
  displayName: platform-operator
  grpcPodConfig:
    securityContextConfig: restricted
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata:
  name: platform-operator
  namespace: %s
spec:
  channel: alpha
  name: %s
  source: platform-operator-catalog
  sourceNamespace: %s
  installPlanApproval: Automatic
`, catalogNamespace, catalogImage, subNamespace, packageName, catalogNamespace))
	g.Eventually(func(g Gomega) {
		cs, err := cluster.Get(ctx, catalogGVK, catalogNamespace, "platform-operator-catalog")
		g.Expect(err).NotTo(HaveOccurred())
		state, _, _ := unstructured.NestedString(cs.Object, "status", "connectionState", "lastObservedState")
		g.Expect(state).To(Equal("READY"))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("CatalogSource READY %s after apply", time.Since(start).Round(time.Millisecond))
	expectCSVSucceeded(t, subNamespace, firstVersion)
	t.Logf("Subscription: CSV %s Succeeded in %s %s after apply", csvName(firstVersion), subNamespace, time.Since(start).Round(time.Millisecond))

	expectPinnedCSV(t, subNamespace, firstVersion)

	// An Nginx and a WebApp that name no operand image run what the CSV
	// lists. A name with "nginx" in it is the chart's fullname as it is.
	const ns, name, app = "olm-catalog-nginx", "catalog-nginx", "catalog-app"
	cluster.CreateNamespace(t, ns)
	cluster.Apply(t, ns, fmt.Sprintf(`apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: %s
spec:
  replicaCount: 1
---
apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata:
  name: %s
spec:
  deploymentTier: dev
  webAppImage: %s
  webAppHostname: catalog.example.test
`, name, app, realnode.AppImage))
	expectNginxPods(ctx, g, ns, name, digests[realnode.NginxImage])
	g.Eventually(func(g Gomega) {
		status, reason, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, app, "Ready")
		g.Expect(status).To(Equal("True"), "%s: %s", reason, msg)
	}).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	t.Logf("an Nginx and a WebApp without image fields Ready %s after apply", time.Since(start).Round(time.Millisecond))

	// What `kubectl get pods -A -o jsonpath` shows: every image the
	// operator and its operands run is in relatedImages (the WebApp's own
	// app is the user's image, not the operator's).
	listed := slices.Collect(maps.Values(relatedImagesOf(t, subNamespace, firstVersion)))
	out, err = cluster.Kubectl("get", "pods", "-n", ns, "-o", `jsonpath={range .items[*]}{range .spec.containers[*]}{.image}{"\n"}{end}{range .spec.initContainers[*]}{.image}{"\n"}{end}{end}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	operands := strings.Fields(out)
	out, err = cluster.Kubectl("get", "pods", "-n", subNamespace, "-l", "control-plane=controller-manager", "-o", `jsonpath={range .items[*]}{range .spec.containers[*]}{.image}{"\n"}{end}{end}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	operands = append(operands, strings.Fields(out)...)
	g.Expect(operands).To(ContainElements(digests[realnode.NginxImage], digests[realnode.PostgresImage], operatorImages[firstVersion]))
	for _, img := range operands {
		if img == realnode.AppImage {
			continue
		}
		g.Expect(listed).To(ContainElement(img), "a Pod runs an image relatedImages does not list")
	}
	t.Logf("the Pods of the operator, the Nginx and the WebApp run %v, all in relatedImages", slices.Compact(slices.Sorted(slices.Values(operands))))

	t.Log("uninstall in the order of docs/operations.md: the resources, then the Subscription and its CSV")
	out, err = cluster.Kubectl("delete", "nginx,webapp", "--all", "-n", ns, "--wait=true", "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("delete", "-n", subNamespace, "subscription/platform-operator", "csv/"+csvName(firstVersion), "--wait=true", "--timeout=120s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = cluster.Kubectl("delete", "-n", catalogNamespace, "catalogsource/platform-operator-catalog", "--wait=true", "--timeout=120s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: subNamespace, Name: operatorDeployment}, &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the operator's Deployment goes with its CSV: %v", err)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// testOLMUninstall: make olm-uninstall's script removes OLM.
func testOLMUninstall(t *testing.T) {
	g := NewWithT(t)
	out, err := olmScript("uninstall")
	g.Expect(err).NotTo(HaveOccurred(), out)
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		err := cluster.Client.Get(ctx, client.ObjectKey{Name: "olm"}, &corev1.Namespace{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace olm: %v", err)
		var crds apiextensionsv1.CustomResourceDefinitionList
		g.Expect(cluster.Client.List(ctx, &crds)).To(Succeed())
		for _, c := range crds.Items {
			g.Expect(c.Spec.Group).NotTo(Equal("operators.coreos.com"), "CRD %s left", c.Name)
		}
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

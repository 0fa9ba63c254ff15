package helmruntime

import (
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/release"
)

// latestReleaseSecret returns the release Secret of the highest revision.
func latestReleaseSecret(g Gomega, k8s client.Client, t *testing.T, ns, name string) corev1.Secret {
	secrets, err := releaseSecrets(t.Context(), k8s, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).NotTo(BeEmpty())
	version := func(s corev1.Secret) int {
		v, _ := strconv.Atoi(s.Labels["version"])
		return v
	}
	return slices.MaxFunc(secrets, func(a, b corev1.Secret) int { return version(a) - version(b) })
}

// TestReleaseDigestSkip covers the dry-run skip on a running runtime: an
// unchanged release is not rendered again, while drift of a child, an
// edited spec and a stale digest still converge.
func TestReleaseDigestSkip(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)
	skipped := func() float64 { return dryRunCount(ctrlmetrics.Registry, "Widget", actionpath.DryRunSkipped) }

	cr := helmtest.CR("Widget", ns, "digest", map[string]any{"greeting": "hi"}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	waitSettled(t, k8s, cr)

	t.Log("the release records the digest of the chart and the final values")
	v1 := latestReleaseSecret(g, k8s, t, ns, "digest")
	g.Expect(v1.Name).To(Equal("sh.helm.release.v1.digest.v1"))
	digest := v1.Labels[release.DigestLabel]
	g.Expect(digest).To(MatchRegexp(`^[0-9a-f]{40}$`))

	t.Log("a reconcile of the unchanged release skips the dry-run and creates no revision")
	before := skipped()
	cur, err := getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	cur.SetAnnotations(map[string]string{"test.acme.com/poke": "1"}) // any update event reconciles
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(skipped).WithTimeout(quickly).WithPolling(poll).Should(BeNumerically(">", before))
	waitSettled(t, k8s, cr)
	g.Expect(latestReleaseSecret(g, k8s, t, ns, "digest").Name).To(Equal(v1.Name))

	t.Log("drift of a child is still repaired, by the dependent watch")
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "digest-config"}, cm)).To(Succeed())
	cm.Data["greeting"] = "tampered"
	g.Expect(k8s.Update(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hi"))
	}).WithTimeout(quickly).WithPolling(poll).Should(Succeed())
	took := deleteAndTimeRecreation(t, k8s, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "digest-config"}}, quickly)
	t.Logf("deleted ConfigMap recreated after %s", took.Round(time.Millisecond))

	t.Log("an edited spec upgrades the release, which records the new digest")
	cur, err = getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cur.Object, "bonjour", "spec", "greeting")).To(Succeed())
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "bonjour"))
		v2 := latestReleaseSecret(g, k8s, t, ns, "digest")
		g.Expect(v2.Name).To(Equal("sh.helm.release.v1.digest.v2"))
		g.Expect(v2.Labels[release.DigestLabel]).To(SatisfyAll(MatchRegexp(`^[0-9a-f]{40}$`), Not(Equal(digest))))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	waitSettled(t, k8s, cr)

	// A changed digest does not mean an upgrade: this is why the dry-run of
	// a changed digest renders (digestActionClient.DryRunUpgrade).
	t.Log("a spec edit no template reads changes the digest, not the manifest: the dry-run renders, and no revision is stored")
	v2 := latestReleaseSecret(g, k8s, t, ns, "digest")
	rendered := func() float64 { return dryRunCount(ctrlmetrics.Registry, "Widget", actionpath.DryRunRendered) }
	before = rendered()
	cur, err = getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cur.Object, "read by no template", "spec", "unread")).To(Succeed())
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		latest := latestReleaseSecret(g, k8s, t, ns, "digest")
		g.Expect(latest.Name).To(Equal(v2.Name))
		g.Expect(latest.Labels[release.DigestLabel]).To(SatisfyAll(MatchRegexp(`^[0-9a-f]{40}$`), Not(Equal(v2.Labels[release.DigestLabel]))))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	g.Expect(rendered()).To(BeNumerically(">", before))
	waitSettled(t, k8s, cr)
	g.Expect(latestReleaseSecret(g, k8s, t, ns, "digest").Name).To(Equal(v2.Name), "no new revision")

	t.Log("a stale digest (an older operator's) means a real dry-run, which records the current digest without a new revision")
	v2 = latestReleaseSecret(g, k8s, t, ns, "digest")
	want := v2.Labels[release.DigestLabel]
	v2.Labels[release.DigestLabel] = "stale"
	g.Expect(k8s.Update(ctx, &v2)).To(Succeed()) // the release Secret is watched: this reconciles
	g.Eventually(func(g Gomega) {
		latest := latestReleaseSecret(g, k8s, t, ns, "digest")
		g.Expect(latest.Name).To(Equal(v2.Name))
		g.Expect(latest.Labels).To(HaveKeyWithValue(release.DigestLabel, want))
	}).WithTimeout(quickly).WithPolling(poll).Should(Succeed())

	g.Expect(k8s.Delete(ctx, cur)).To(Succeed())
	expectGone(t, k8s, cur)
}

// TestReleaseDigestChartChange drives the wrapped action client directly
// against the API server, the way the library's reconciler does, to show
// that a new chart (a new operator version) with unchanged values is
// rendered and upgraded, not skipped.
func TestReleaseDigestChartChange(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	httpClient, err := rest.HTTPClientFor(suite.cfg)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(suite.cfg, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	k := newTestKind("ChartChange")
	acg, err := k.libraryPath(suite.cfg, mapper, "digest", "release memo")
	g.Expect(err).NotTo(HaveOccurred())
	skipped := k.rt.dryRuns.WithLabelValues("ChartChange", actionpath.DryRunSkipped)
	rendered := k.rt.dryRuns.WithLabelValues("ChartChange", actionpath.DryRunRendered)

	// The release's owner: any object works for the action client.
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	g.Expect(k8s.Create(ctx, owner)).To(Succeed())
	owner.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))

	v1Chart, err := loader.Load("testdata/charts/app")
	g.Expect(err).NotTo(HaveOccurred())
	vals := func(ch *chart.Chart) map[string]interface{} {
		v, err := chartutil.CoalesceValues(ch, map[string]interface{}{"greeting": "hi"})
		g.Expect(err).NotTo(HaveOccurred())
		return v.AsMap()
	}
	dryRunUpgrade := func(ch *chart.Chart) (changed bool) {
		ac, err := acg.ActionClientFor(ctx, owner)
		g.Expect(err).NotTo(HaveOccurred())
		cur, err := ac.Get("rel")
		g.Expect(err).NotTo(HaveOccurred())
		spec, err := ac.Upgrade("rel", ns, ch, vals(ch), helmtest.DryRun)
		g.Expect(err).NotTo(HaveOccurred())
		return spec.Manifest != cur.Manifest
	}

	ac, err := acg.ActionClientFor(ctx, owner)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.Install("rel", ns, v1Chart, vals(v1Chart))
	g.Expect(err).NotTo(HaveOccurred())

	t.Log("the same chart and values: skipped")
	skipped0, rendered0 := testutil.ToFloat64(skipped), testutil.ToFloat64(rendered)
	g.Expect(dryRunUpgrade(v1Chart)).To(BeFalse())
	g.Expect(testutil.ToFloat64(skipped)).To(Equal(skipped0 + 1))
	g.Expect(testutil.ToFloat64(rendered)).To(Equal(rendered0))

	t.Log("a new chart that renders differently: rendered, and the upgrade applies it")
	v2Chart, err := loader.Load("testdata/charts/app")
	g.Expect(err).NotTo(HaveOccurred())
	for _, tpl := range v2Chart.Templates {
		if tpl.Name == "templates/configmap.yaml" {
			tpl.Data = append(slices.Clone(tpl.Data), []byte("  chartVersion: \"2\"\n")...)
		}
	}
	v2Chart.Metadata.Version = "0.2.0"
	g.Expect(dryRunUpgrade(v2Chart)).To(BeTrue())
	g.Expect(testutil.ToFloat64(rendered)).To(Equal(rendered0 + 1))
	ac, err = acg.ActionClientFor(ctx, owner)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := ac.Upgrade("rel", ns, v2Chart, vals(v2Chart))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(2))
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rel-config"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("chartVersion", "2"))

	t.Log("then the new chart is skipped, and the old one is not")
	g.Expect(dryRunUpgrade(v2Chart)).To(BeFalse())
	g.Expect(testutil.ToFloat64(skipped)).To(Equal(skipped0 + 2))
	g.Expect(dryRunUpgrade(v1Chart)).To(BeTrue())
	g.Expect(testutil.ToFloat64(rendered)).To(Equal(rendered0 + 2))

	_, err = ac.Uninstall("rel")
	g.Expect(err).NotTo(HaveOccurred())
}

// TestReleaseDigestRenderError: a spec edit whose chart fails to render
// fails at the library's dry-run, before any upgrade: the resource is
// Irreconcilable (ErrorGettingReleaseState), ReleaseFailed is Unknown, the
// Event says the render failed, and no revision is stored. This is the
// other reason the dry-run of a changed digest renders
// (digestActionClient.DryRunUpgrade): answered without rendering, the
// error would come from the upgrade, as a failed upgrade (ReleaseFailed
// True, UpgradeError, the upgrade backoff).
func TestReleaseDigestRenderError(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	cr := helmtest.CR("Widget", ns, "unrendered", map[string]any{"greeting": "hi"}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	waitSettled(t, k8s, cr)
	v1 := latestReleaseSecret(g, k8s, t, ns, "unrendered")

	t.Log("replicas that make the Deployment invalid YAML fail the dry-run")
	cur, err := getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cur.Object, "1: 2", "spec", "replicas")).To(Succeed())
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conditionOf(cur, "Irreconcilable")).To(SatisfyAll(
			HaveKeyWithValue("status", "True"),
			HaveKeyWithValue("reason", "ErrorGettingReleaseState"),
			HaveKeyWithValue("message", ContainSubstring("YAML parse error on app/templates/deployment.yaml"))))
		g.Expect(conditionStatus(cur, "ReleaseFailed")).To(Equal("Unknown"))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventsOf(ctx, k8s, cr)).To(ContainElement(HaveField("Reason", actionpath.ReasonUpgradeDryRunFailed)))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	events, err := eventsOf(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(events).NotTo(ContainElement(HaveField("Reason", actionpath.ReasonUpgradeFailed)), "no upgrade was tried")
	g.Expect(latestReleaseSecret(g, k8s, t, ns, "unrendered").Name).To(Equal(v1.Name), "no revision")

	t.Log("the spec fixed upgrades")
	cur, err = getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cur.Object, int64(2), "spec", "replicas")).To(Succeed())
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(latestReleaseSecret(g, k8s, t, ns, "unrendered").Name).To(Equal("sh.helm.release.v1.unrendered.v2"))
		cur, err := getCR(ctx, k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conditionStatus(cur, "Irreconcilable")).To(Equal("False"))
		g.Expect(conditionStatus(cur, "ReleaseFailed")).To(Equal("False"))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())

	g.Expect(k8s.Delete(ctx, cur)).To(Succeed())
	expectGone(t, k8s, cur)
}

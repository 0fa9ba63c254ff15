package helmruntime

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

const (
	// eventually bounds waits for things the runtime does on its own.
	eventually = 30 * time.Second
	// quickly bounds waits for repairs that must be near-immediate.
	quickly = 10 * time.Second
	poll    = 100 * time.Millisecond

	uninstallFinalizer = "uninstall-helm-release"
)

// maxConcurrentReconciles reads controller-runtime's gauge for a controller.
func maxConcurrentReconciles(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "controller_runtime_max_concurrent_reconciles" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no max_concurrent_reconciles gauge for controller %q", controller)
	return 0
}

// TestNamespacedKindLifecycle covers a namespaced kind with dependent watches
// on: install, repair of deleted and drifted children, upgrade, uninstall.
func TestNamespacedKindLifecycle(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	cr := helmtest.CR("Widget", ns, "web", map[string]any{"greeting": "hi", "enforced": "by-user"}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)

	// Install: children exist, values come from the spec, override values
	// win over the spec, and the release lives in the CR's namespace.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hi"))
	g.Expect(cm.Data).To(HaveKeyWithValue("enforced", "from-operator"))
	g.Expect(cm.Data).To(HaveKeyWithValue("releaseNamespace", ns))
	g.Expect(cm.OwnerReferences).To(ConsistOf(HaveField("Kind", "Widget")))
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
	secrets, err := releaseSecrets(ctx, k8s, ns, "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(HaveLen(1))
	g.Expect(secrets[0].Name).To(Equal("sh.helm.release.v1.web.v1"))

	// The controller runs with --max-concurrent-reconciles (no per-watch value).
	g.Expect(maxConcurrentReconciles(t, "widget-controller")).To(BeNumerically("==", testDefaultMaxConcurrentReconciles))

	// A deleted child comes back through the dependent watch, long before
	// the one-hour reconcile period. Settle first, so that no reconcile
	// caused by the runtime's own writes can take the credit.
	waitSettled(t, k8s, cr)
	took := deleteAndTimeRecreation(t, k8s, &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta}, quickly)
	t.Logf("deleted ConfigMap recreated after %s", took.Round(time.Millisecond))
	took = deleteAndTimeRecreation(t, k8s, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, quickly)
	t.Logf("deleted Deployment recreated after %s", took.Round(time.Millisecond))

	// Drift on a child is patched back.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	cm.Data["greeting"] = "tampered"
	g.Expect(k8s.Update(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hi"))
	}).WithTimeout(quickly).WithPolling(poll).Should(Succeed())

	// Editing the spec upgrades the release.
	cur, err := getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cur.Object, "bonjour", "spec", "greeting")).To(Succeed())
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "bonjour"))
		secrets, err := releaseSecrets(ctx, k8s, ns, "web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(secrets).To(ContainElement(HaveField("Name", "sh.helm.release.v1.web.v2")))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())

	// Deleting the CR uninstalls the release: children and release gone
	// (envtest runs no garbage collector, so this is Helm's uninstall).
	g.Expect(k8s.Delete(ctx, cur)).To(Succeed())
	expectGone(t, k8s, cur)
	expectGone(t, k8s, cm)
	expectGone(t, k8s, dep)
	secrets, err = releaseSecrets(ctx, k8s, ns, "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(BeEmpty())
}

// TestDependentWatchesDisabled covers a kind with watchDependentResources:
// false, a one-hour reconcilePeriod and a label selector.
func TestDependentWatchesDisabled(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	managed := map[string]string{"test.acme.com/managed": "true"}
	cr := helmtest.CR("Gadget", ns, "quiet", map[string]any{}, managed)
	ignored := helmtest.CR("Gadget", ns, "ignored", map[string]any{}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	g.Expect(k8s.Create(ctx, ignored)).To(Succeed())
	expectDeployed(t, k8s, cr)
	waitSettled(t, k8s, cr)

	// Nothing watches the children, and the period is an hour away: a
	// deleted child stays deleted.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quiet-config"}}
	g.Expect(k8s.Delete(ctx, cm)).To(Succeed())
	g.Consistently(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))
	}).WithTimeout(8 * time.Second).WithPolling(200 * time.Millisecond).Should(BeTrue())

	// The selector keeps the unlabelled resource out of reach entirely.
	cur, err := getCR(ctx, k8s, ignored)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cur.GetFinalizers()).To(BeEmpty())
	g.Expect(cur.Object).NotTo(HaveKey("status"))
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "ignored-config"}, &corev1.ConfigMap{}))).To(BeTrue())

	// Any reconcile of the CR itself repairs the release.
	cur, err = getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	cur.SetAnnotations(map[string]string{"test.acme.com/poke": "1"})
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	g.Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	}).WithTimeout(quickly).WithPolling(poll).Should(Succeed())

	g.Expect(k8s.Delete(ctx, cur)).To(Succeed())
	g.Expect(k8s.Delete(ctx, ignored)).To(Succeed())
	expectGone(t, k8s, cur)
	expectGone(t, k8s, cm)
}

// TestPerWatchReconcilePeriod covers a kind with watchDependentResources:
// false and reconcilePeriod: 2s (the operator-wide period is one hour), and
// its maxConcurrentReconciles: 3.
func TestPerWatchReconcilePeriod(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	cr := helmtest.CR("Ticker", ns, "tick", map[string]any{"greeting": "tock"}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)

	g.Expect(maxConcurrentReconciles(t, "ticker-controller")).To(BeNumerically("==", 3))

	// Without dependent watches only the two-second period brings the child
	// back. The first recreation happens at some resync; deleting again
	// right after it, the next resync is about one period away.
	waitSettled(t, k8s, cr)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tick-config"}}
	took := deleteAndTimeRecreation(t, k8s, cm, quickly)
	t.Logf("deleted ConfigMap recreated by a periodic resync after %s", took.Round(time.Millisecond))
	g.Expect(took).To(BeNumerically("<", 5*time.Second))
	took = deleteAndTimeRecreation(t, k8s, cm, quickly)
	t.Logf("deleted again right after a resync: recreated after %s", took.Round(time.Millisecond))
	g.Expect(took).To(And(BeNumerically(">", time.Second), BeNumerically("<", 5*time.Second)))

	g.Expect(k8s.Delete(ctx, cr)).To(Succeed())
	expectGone(t, k8s, cr)
	expectGone(t, k8s, cm)
}

// TestClusterScopedKind covers a cluster-scoped kind: its release is stored
// in the release namespace and installed "into" it, while the chart's
// namespaced objects land in the namespace the chart names.
func TestClusterScopedKind(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()

	name := "acme-" + rand.String(5)
	tenantNS := "tenant-" + name
	cr := helmtest.CR("Tenant", "", name, map[string]any{"namespace": tenantNS}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)

	// The chart's Namespace and the ConfigMap inside it exist; Helm saw the
	// release namespace as .Release.Namespace.
	g.Expect(k8s.Get(ctx, types.NamespacedName{Name: tenantNS}, &corev1.Namespace{})).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "tenant-info"}}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("tenant", name))
	g.Expect(cm.Data).To(HaveKeyWithValue("releaseNamespace", testReleaseNamespace))
	g.Expect(cm.OwnerReferences).To(ConsistOf(HaveField("Kind", "Tenant")))

	// The release Secret is in the release namespace, owned by the Tenant.
	secrets, err := releaseSecrets(ctx, k8s, testReleaseNamespace, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(HaveLen(1))
	g.Expect(secrets[0].OwnerReferences).To(ConsistOf(HaveField("Kind", "Tenant")))
	var all corev1.SecretList
	g.Expect(k8s.List(ctx, &all, client.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
	g.Expect(all.Items).To(HaveLen(1), "the release must not be stored anywhere else")

	// Dependent watches work for children of a cluster-scoped owner.
	waitSettled(t, k8s, cr)
	took := deleteAndTimeRecreation(t, k8s, &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta}, quickly)
	t.Logf("deleted tenant ConfigMap recreated after %s", took.Round(time.Millisecond))

	// Deleting the Tenant uninstalls the release. envtest runs no namespace
	// controller, so the chart's Namespace stays Terminating instead of
	// disappearing.
	g.Expect(k8s.Delete(ctx, cr)).To(Succeed())
	expectGone(t, k8s, cr)
	expectGone(t, k8s, cm)
	g.Eventually(func(g Gomega) {
		nsObj := &corev1.Namespace{}
		err := k8s.Get(ctx, types.NamespacedName{Name: tenantNS}, nsObj)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(nsObj.DeletionTimestamp).NotTo(BeNil())
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	secrets, err = releaseSecrets(ctx, k8s, testReleaseNamespace, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(BeEmpty())
}

package helmruntime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/helmconfig"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// The helpers and fakes the package's tests share: action paths built
// without a manager, and what the integration tests do on the suite's API
// server (namespaces, custom resources, their conditions and releases).

// newTestKind returns the state of kind the action path is built from,
// for tests that build action paths without a manager: no API client,
// Events dropped.
func newTestKind(kind string) *kindRuntime {
	rt := &runtimeState{
		log:         logr.Discard(),
		activity:    actionpath.NewActivity(clock.RealClock{}),
		dryRuns:     actionpath.NewDryRunCounter(),
		staleAfter:  actionpath.DefaultStalePendingTimeout,
		hookTimeout: helmconfig.DefaultHookTimeout,
	}
	return &kindRuntime{
		rt:       rt,
		watch:    watchconfig.ResolvedWatch{GVK: schema.GroupVersionKind{Kind: kind}},
		nsFor:    watchconfig.ReleaseNamespaceMapper(false, ""),
		recorder: &record.FakeRecorder{}, // no channel: Events are dropped
		log:      logr.Discard(),
	}
}

// libraryPath returns a getter of k's releases: the library's, built by
// helmconfig as the runtime builds it, under the layers of k's path named
// layers (see actionpath.Layers) and the bottom layers every path has
// (release namespace, capabilities).
func (k *kindRuntime) libraryPath(cfg *rest.Config, mapper meta.RESTMapper, layers ...string) (helmclient.ActionClientGetter, error) {
	caps := helmconfig.NewCapabilities(helmconfig.CapabilitiesMaxAge)
	base, err := helmconfig.NewActionClientGetter(helmconfig.Config{
		REST: cfg, Mapper: mapper, ReleaseNamespace: k.nsFor,
		Capabilities: caps, HookTimeout: k.rt.hookTimeout,
	})
	if err != nil {
		return nil, err
	}
	path := actionpath.Layers(actionpath.Kind{
		Kind:             k.watch.GVK.Kind,
		Log:              k.log,
		Recorder:         k.recorder,
		ReleaseNamespace: k.nsFor,
		Activity:         k.rt.activity,
		Charts:           &release.ChartDigests{},
		DryRuns:          k.rt.dryRuns,
		Capabilities:     caps,
		ShardID:          k.rt.shardID,
		StaleAfter:       k.rt.staleAfter,
	})
	var picked []actionpath.Layer
	for _, name := range append(layers, "release namespace", "capabilities") {
		i := slices.IndexFunc(path, func(l actionpath.Layer) bool { return l.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("the action path has no layer %q", name)
		}
		picked = append(picked, path[i])
	}
	return actionpath.NewWithLayers(base, k.nsFor, picked...), nil
}

// dryRunCount reads the dry-run counter of kind and result from reg.
func dryRunCount(reg prometheus.Gatherer, kind, result string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "helmruntime_dry_run_upgrades_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// deleteAndTimeRecreation deletes obj and waits up to within for an object
// with the same name but a new UID; it returns how long that took.
func deleteAndTimeRecreation(t *testing.T, k8s client.Client, obj client.Object, within time.Duration) time.Duration {
	t.Helper()
	g := NewWithT(t)
	key := client.ObjectKeyFromObject(obj)
	g.Expect(k8s.Get(t.Context(), key, obj)).To(Succeed())
	oldUID := obj.GetUID()
	g.Expect(k8s.Delete(t.Context(), obj)).To(Succeed())
	deleted := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(t.Context(), key, obj)).To(Succeed())
		g.Expect(obj.GetUID()).NotTo(Equal(oldUID))
	}).WithTimeout(within).WithPolling(poll).Should(Succeed(), "%T %s was not recreated", obj, key)
	return time.Since(deleted)
}

// expectDeployed waits until cr reports Deployed=True.
func expectDeployed(t *testing.T, k8s client.Client, cr *unstructured.Unstructured) {
	t.Helper()
	started := time.Now()
	NewWithT(t).Eventually(func(g Gomega) {
		cur, err := getCR(t.Context(), k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cur.GetFinalizers()).To(ContainElement(uninstallFinalizer))
		g.Expect(conditionStatus(cur, "Deployed")).To(Equal("True"), "status: %v", cur.Object["status"])
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	t.Logf("%s %s deployed after %s", cr.GetKind(), cr.GetName(), time.Since(started).Round(time.Millisecond))
}

// expectGone waits until obj no longer exists.
func expectGone(t *testing.T, k8s client.Client, obj client.Object) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(t.Context(), client.ObjectKeyFromObject(obj), obj))
	}).WithTimeout(eventually).WithPolling(poll).Should(BeTrue(), "%T %s still exists", obj, client.ObjectKeyFromObject(obj))
}

// getCR fetches the current state of cr.
func getCR(ctx context.Context, k8s client.Client, cr *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(cr.GroupVersionKind())
	err := k8s.Get(ctx, client.ObjectKeyFromObject(cr), cur)
	return cur, err
}

// libraryActionClientGetter is helm-operator-plugins' own action client
// getter, without the runtime's layers.
func libraryActionClientGetter(t *testing.T, opts ...helmclient.ActionConfigGetterOption) helmclient.ActionClientGetter {
	g := NewWithT(t)
	httpClient, err := rest.HTTPClientFor(suite.cfg)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(suite.cfg, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	configs, err := helmclient.NewActionConfigGetter(suite.cfg, mapper, opts...)
	g.Expect(err).NotTo(HaveOccurred())
	acg, err := helmclient.NewActionClientGetter(configs)
	g.Expect(err).NotTo(HaveOccurred())
	return acg
}

// newTestNamespace creates a namespace of its own for one test. envtest runs
// no namespace controller, so namespaces are left behind (they would only go
// Terminating anyway).
func newTestNamespace(t *testing.T, k8s client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-%s", strings.ToLower(strings.TrimPrefix(t.Name(), "Test")), rand.String(5)),
	}}
	if len(ns.Name) > 63 {
		ns.Name = ns.Name[len(ns.Name)-63:]
	}
	NewWithT(t).Expect(k8s.Create(t.Context(), ns)).To(Succeed())
	return ns.Name
}

// releaseSecrets lists the Helm release Secrets of release name in namespace.
func releaseSecrets(ctx context.Context, k8s client.Client, namespace, name string) ([]corev1.Secret, error) {
	var list corev1.SecretList
	err := k8s.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{"owner": "helm", "name": name})
	return list.Items, err
}

// waitSettled waits until cr's resourceVersion stays the same for a while, so
// that no reconcile triggered by the runtime's own writes is still pending.
func waitSettled(t *testing.T, k8s client.Client, cr *unstructured.Unstructured) {
	t.Helper()
	const quiet = 2 * time.Second
	var last string
	var since time.Time
	NewWithT(t).Eventually(func(g Gomega) {
		cur, err := getCR(t.Context(), k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		if rv := cur.GetResourceVersion(); rv != last {
			last, since = rv, time.Now()
		}
		g.Expect(time.Since(since)).To(BeNumerically(">=", quiet))
	}).WithTimeout(eventually).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// conditionOf returns obj's condition of type condType; nil when it has none.
func conditionOf(obj *unstructured.Unstructured, condType string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			return m
		}
	}
	return nil
}

// conditionStatus returns the status of obj's condition of type condType;
// "" when it has none.
func conditionStatus(obj *unstructured.Unstructured, condType string) string {
	s, _ := conditionOf(obj, condType)["status"].(string)
	return s
}

package helmruntime

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// TestUpgradeReadsWhatOthersChanged: an upgrade answers its read of an
// object from the cache only while the object is as the runtime's last
// write left it. An object someone edited since (here with drift repair
// off, so that nothing else puts it back) is read from the API server,
// and the upgrade's three-way patch sets the fields the chart renders
// back, as Helm's does; the object the upgrade changes gets its change.
func TestUpgradeReadsWhatOthersChanged(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	cr := helmtest.CR("Widget", ns, "edited", map[string]any{"greeting": "hi", "image": "nginx:1.27"}, nil)
	cr.SetAnnotations(map[string]string{watchconfig.DriftAnnotation: "off"})
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	waitSettled(t, k8s, cr)

	dep := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: ns, Name: "edited"}
	g.Expect(k8s.Get(ctx, key, dep)).To(Succeed())
	dep.Spec.Template.Spec.Containers[0].Image = "nginx:tampered"
	g.Expect(k8s.Update(ctx, dep)).To(Succeed())
	// The runtime's cache hears of the edit within moments; the upgrade
	// must not start before, or it races the edit as any client would.
	time.Sleep(time.Second)

	cur, err := getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cur.Object, "hello", "spec", "greeting")).To(Succeed())
	g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	cm := &corev1.ConfigMap{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edited-config"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello"))
		g.Expect(k8s.Get(ctx, key, dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1.27"))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
}

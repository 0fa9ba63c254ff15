package admission

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWebhookConfinesReleases: a resource whose spec makes its chart place
// an object outside its namespace (a manifest or a hook), or render a
// cluster-scoped object its kind may not create, is refused at apply with
// the object named; what the kind's allowance lists, and a NamespaceTenant
// (whose shipped entry allows its Namespace), are admitted.
//
// The test serves a chart of its own as the Nginx kind (the webhook is
// registered for the shipped kinds only); its values live under affinity,
// the one field of the Nginx schema kept as written.
func TestWebhookConfinesReleases(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	ctx := t.Context()
	ns, other := newNamespace(t, c), newNamespace(t, c)
	shared := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "adm-shared-"}}
	g.Expect(c.Create(ctx, shared)).To(Succeed())

	watches := filepath.Join(t.TempDir(), "watches.yaml")
	g.Expect(os.WriteFile(watches, []byte(fmt.Sprintf(`
- group: web.acme.com
  version: v1alpha1
  kind: Nginx
  chart: %s
  confinement:
    namespaces: [%s]
- group: tenancy.acme.com
  version: v1alpha1
  kind: NamespaceTenant
  chart: helm-charts/namespace-tenant
  confinement:
    clusterScopedKinds: [Namespace]
`, filepath.Join("extensions", "internal", "admission", "testdata", "charts", "confined"), shared.Name)), 0o600)).To(Succeed())
	o := webhookOptions()
	o.WatchesFile = watches
	defer startWebhookWith(t, o)()

	confined := func(name, values string) error {
		return c.Create(ctx, obj(ns, "Nginx", name, spec(t, `{affinity: `+values+`}`)))
	}

	t.Run("a ConfigMap in another namespace", func(t *testing.T) {
		refused(NewWithT(t), confined("away", fmt.Sprintf(`{namespace: %s}`, other)),
			"spec: Forbidden",
			fmt.Sprintf(`ConfigMap "away-confined" in namespace %q is outside the resource's namespace %q: Nginx releases place their objects in their own namespace only`, other, ns),
			fmt.Sprintf(`list %q under confinement.namespaces of the Nginx entry of watches.yaml`, other))
	})

	t.Run("a hook in another namespace", func(t *testing.T) {
		refused(NewWithT(t), confined("hooked", fmt.Sprintf(`{hookNamespace: %s}`, other)),
			fmt.Sprintf(`ConfigMap "hooked-hook" in namespace %q is outside the resource's namespace %q`, other, ns))
	})

	t.Run("a ClusterRole", func(t *testing.T) {
		refused(NewWithT(t), confined("wide", `{clusterRole: true}`),
			"spec: Forbidden",
			fmt.Sprintf(`ClusterRole "%s-wide-confined" is cluster-scoped, and Nginx releases may not create cluster-scoped objects of kind rbac.authorization.k8s.io/ClusterRole`, ns),
			`list rbac.authorization.k8s.io/ClusterRole under confinement.clusterScopedKinds of the Nginx entry of watches.yaml`)
	})

	t.Run("an edit that moves an object out", func(t *testing.T) {
		g := NewWithT(t)
		web := obj(ns, "Nginx", "moved", spec(t, `{affinity: {}}`))
		g.Expect(c.Create(ctx, web)).To(Succeed())
		web.Object["spec"] = spec(t, fmt.Sprintf(`{affinity: {namespace: %s}}`, other))
		refused(g, c.Update(ctx, web), fmt.Sprintf(`ConfigMap "moved-confined" in namespace %q is outside`, other))
	})

	t.Run("the resource's namespace, and a namespace the allowance lists", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(confined("home", fmt.Sprintf(`{namespace: %s}`, ns))).To(Succeed())
		g.Expect(confined("allowed", fmt.Sprintf(`{namespace: %s}`, shared.Name))).To(Succeed())
	})

	t.Run("a NamespaceTenant creates its Namespace", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Create(ctx, obj("", "NamespaceTenant", "conf-"+ns,
			spec(t, fmt.Sprintf(`{namespaceName: team-%s, adminUsername: sam, deploymentTier: dev}`, ns))))).To(Succeed())
	})
}

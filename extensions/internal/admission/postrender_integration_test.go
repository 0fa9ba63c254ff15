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

// TestWebhookJudgesPostRenderedObjects: the webhook renders a resource as
// the runtime installs it, the kind's post-render patches applied, so it
// refuses what only the patches make wrong: an object a patch moves out
// of the resource's namespace, one a patch renames onto an object that is
// not the release's, and a patch that fails on what the chart renders.
// What the patches leave alone is admitted.
//
// The test serves a chart of its own as the Nginx kind (see
// TestWebhookConfinesReleases).
func TestWebhookJudgesPostRenderedObjects(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	ctx := t.Context()
	ns, other := newNamespace(t, c), newNamespace(t, c)
	taken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}}
	g.Expect(c.Create(ctx, taken)).To(Succeed())

	watches := filepath.Join(t.TempDir(), "watches.yaml")
	g.Expect(os.WriteFile(watches, []byte(fmt.Sprintf(`
- group: web.acme.com
  version: v1alpha1
  kind: Nginx
  chart: %s
  postRender:
    patches:
    - target: {kind: ConfigMap, name: away-confined}
      patch: |
        - {op: add, path: /metadata/namespace, value: %s}
    - target: {kind: ConfigMap, name: clash-confined}
      patch: |
        - {op: replace, path: /metadata/name, value: taken}
    - target: {kind: ConfigMap, name: broken-confined}
      patch: |
        - {op: remove, path: /data/absent}
    - target: {kind: ConfigMap}
      patch: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: any, labels: {team: platform}}
`, filepath.Join("extensions", "internal", "admission", "testdata", "charts", "confined"), other)), 0o600)).To(Succeed())
	o := webhookOptions()
	o.WatchesFile = watches
	defer startWebhookWith(t, o)()

	create := func(name string) error {
		return c.Create(ctx, obj(ns, "Nginx", name, spec(t, `{affinity: {}}`)))
	}

	t.Run("a patch that moves an object to another namespace", func(t *testing.T) {
		refused(NewWithT(t), create("away"),
			"spec: Forbidden",
			fmt.Sprintf(`ConfigMap "away-confined" in namespace %q is outside the resource's namespace %q`, other, ns))
	})

	t.Run("a patch that renames an object onto another's", func(t *testing.T) {
		refused(NewWithT(t), create("clash"),
			"Forbidden", fmt.Sprintf("ConfigMap %s/taken exists and belongs to no release of this operator", ns))
	})

	t.Run("a patch that fails on the rendered object", func(t *testing.T) {
		refused(NewWithT(t), create("broken"),
			"spec: Invalid", "does not render with this spec", "post-render patches of watches.yaml")
	})

	t.Run("objects the patches leave in place", func(t *testing.T) {
		NewWithT(t).Expect(create("home")).To(Succeed())
	})
}

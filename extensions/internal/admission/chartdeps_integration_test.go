package admission

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/acme/platform-operator/test/testkit"
)

// TestWebhookRendersSubcharts: the webhook's render check renders a chart
// with dependencies as an install does (a vendored subchart, aliases, a
// condition, a library chart, a CRD in crds/), so a value of a subchart
// that its own values.schema.json refuses is refused at apply with the
// subchart and the field named, and a good one is admitted. A resource
// that turns the subchart off does not turn it off for the next one
// (Helm edits the chart it renders; each render has its own copy). The
// chart renders an object of its own CRD, which the API server does not
// serve yet (the runtime installs crds/ first): it is placed by the scope
// the CRD declares, not refused as of a kind nobody serves.
//
// The test serves the chart as the Nginx kind (the webhook is registered
// for the shipped kinds only); the subchart's values live under affinity,
// the one field of the Nginx schema kept as written, so the alias behind
// the condition is affinity.
func TestWebhookRendersSubcharts(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)

	dir := t.TempDir()
	chart := testkit.BuildDependencyChart(t, dir, testkit.DependencyChart{Name: "deps", OptionalAlias: "affinity", CRDGroup: "deps.admission.example.com", Widget: true})
	watches := filepath.Join(dir, "watches.yaml")
	g.Expect(os.WriteFile(watches, []byte(fmt.Sprintf(`
- group: web.acme.com
  version: v1alpha1
  kind: Nginx
  chart: %s
  crds: create
`, chart)), 0o600)).To(Succeed())
	o := webhookOptions()
	o.WatchesFile = watches
	defer startWebhookWith(t, o)()

	t.Run("the subchart off", func(t *testing.T) {
		NewWithT(t).Expect(c.Create(ctx, obj(ns, "Nginx", "off", spec(t, `{affinity: {}}`)))).To(Succeed())
	})

	t.Run("a subchart value of the wrong type", func(t *testing.T) {
		refused(NewWithT(t), c.Create(ctx, obj(ns, "Nginx", "bad", spec(t, `{affinity: {enabled: true, replicaCount: three}}`))),
			"spec: Invalid value",
			"values don't meet the specifications of the schema(s) in the following chart(s):\naffinity:\n- at '/replicaCount': got string, want integer")
	})

	t.Run("a subchart value below its minimum", func(t *testing.T) {
		refused(NewWithT(t), c.Create(ctx, obj(ns, "Nginx", "negative", spec(t, `{affinity: {enabled: true, replicaCount: -1}}`))),
			"affinity:\n- at '/replicaCount': minimum: got -1, want 0")
	})

	t.Run("a good subchart value", func(t *testing.T) {
		NewWithT(t).Expect(c.Create(ctx, obj(ns, "Nginx", "good", spec(t, `{affinity: {enabled: true, replicaCount: 3}}`)))).To(Succeed())
	})
}

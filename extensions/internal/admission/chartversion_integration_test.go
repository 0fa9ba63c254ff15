package admission

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWebhookChecksChartVersionPins: a kind that ships two versions of
// its chart (watches.yaml chartVersions). A resource may pin either
// (platform.acme.com/chart-version) and is rendered with the version it
// pins; a pin to a version the kind does not ship is refused, naming the
// ones it does, on create and on an update that only edits the pin.
//
// The default version, 0.2.0, is helm-charts/nginx with its version bumped
// and one template added that refuses replicaCount 7; 0.1.0 is
// helm-charts/nginx itself, which renders it.
func TestWebhookChecksChartVersionPins(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)

	next := filepath.Join(t.TempDir(), "nginx")
	g.Expect(os.CopyFS(next, os.DirFS(filepath.Join("helm-charts", "nginx")))).To(Succeed())
	chartYAML := filepath.Join(next, "Chart.yaml")
	meta, err := os.ReadFile(chartYAML)
	g.Expect(err).NotTo(HaveOccurred())
	bumped := regexp.MustCompile(`(?m)^version: 0\.1\.0$`).ReplaceAll(meta, []byte("version: 0.2.0"))
	g.Expect(string(bumped)).NotTo(Equal(string(meta)), "helm-charts/nginx is version 0.1.0")
	g.Expect(os.WriteFile(chartYAML, bumped, 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(next, "templates", "refuse.yaml"),
		[]byte(`{{- if eq (int .Values.replicaCount) 7 }}{{ fail "version 0.2.0 refuses replicaCount 7" }}{{ end }}`+"\n"), 0o600)).To(Succeed())

	watches := filepath.Join(t.TempDir(), "watches.yaml")
	g.Expect(os.WriteFile(watches, []byte(fmt.Sprintf(`
- group: web.acme.com
  version: v1alpha1
  kind: Nginx
  chart: %s
  chartVersions:
  - %s
`, next, filepath.Join("helm-charts", "nginx"))), 0o600)).To(Succeed())
	o := webhookOptions()
	o.WatchesFile = watches
	defer startWebhookWith(t, o)()

	pinned := func(name, version string, replicas int) *unstructured.Unstructured {
		u := obj(ns, "Nginx", name, spec(t, fmt.Sprintf(`{replicaCount: %d}`, replicas)))
		if version != "" {
			u.SetAnnotations(map[string]string{"platform.acme.com/chart-version": version})
		}
		return u
	}
	const pinField = "metadata.annotations[platform.acme.com/chart-version]: Invalid value"
	const shipped = `annotation platform.acme.com/chart-version: chart version "%s" is not shipped by this operator; it ships 0.1.0, 0.2.0`

	t.Run("a resource without a pin renders with the default version", func(t *testing.T) {
		g := NewWithT(t)
		refused(g, c.Create(ctx, pinned("unpinned", "", 7)), "spec: Invalid value", "version 0.2.0 refuses replicaCount 7")
		g.Expect(c.Create(ctx, pinned("unpinned", "", 2))).To(Succeed())
	})

	t.Run("a pin to a shipped version renders with that version", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Create(ctx, pinned("old", "0.1.0", 7))).To(Succeed())
		g.Expect(c.Create(ctx, pinned("new", "0.2.0", 2))).To(Succeed())
		refused(g, c.Create(ctx, pinned("new-seven", "0.2.0", 7)), "version 0.2.0 refuses replicaCount 7")
	})

	t.Run("a pin to a version the kind does not ship", func(t *testing.T) {
		g := NewWithT(t)
		refused(g, c.Create(ctx, pinned("unknown", "9.9.9", 2)), pinField, fmt.Sprintf(shipped, "9.9.9"))
		refused(g, c.Create(ctx, pinned("spaced", " 0.1.0", 2)), pinField, fmt.Sprintf(shipped, " 0.1.0"))
	})

	t.Run("updates of a pinned resource", func(t *testing.T) {
		g := NewWithT(t)
		u := pinned("moved", "0.1.0", 2)
		g.Expect(c.Create(ctx, u)).To(Succeed())
		update := func(edit func(*unstructured.Unstructured)) error {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
			edited := u.DeepCopy()
			edit(edited)
			return c.Update(ctx, edited)
		}
		replicas := func(n int64) func(*unstructured.Unstructured) {
			return func(u *unstructured.Unstructured) {
				g.Expect(unstructured.SetNestedField(u.Object, n, "spec", "replicaCount")).To(Succeed())
			}
		}
		pin := func(version string) func(*unstructured.Unstructured) {
			return func(u *unstructured.Unstructured) {
				u.SetAnnotations(map[string]string{"platform.acme.com/chart-version": version})
			}
		}
		// A spec edit renders with the version the resource pins.
		g.Expect(update(replicas(7))).To(Succeed())
		// An edit of the pin alone is sent and checked: the version...
		refused(g, update(pin("0.3.0")), pinField, fmt.Sprintf(shipped, "0.3.0"))
		// ...and the spec with the version's chart.
		refused(g, update(pin("0.2.0")), "version 0.2.0 refuses replicaCount 7")
		g.Expect(update(replicas(3))).To(Succeed())
		g.Expect(update(pin("0.2.0"))).To(Succeed())
	})
}

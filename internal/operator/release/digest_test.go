package release

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

func TestReleaseDigest(t *testing.T) {
	base := map[string]interface{}{"greeting": "hi", "nested": map[string]interface{}{"a": 1, "b": "x"}}
	baseDigest, ok, err := Digest(DigestChart(helmtest.Chart(nil)), base, testCapabilities)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(ok).To(BeTrue())
	NewWithT(t).Expect(baseDigest).To(HaveLen(40)) // fits a label value

	cases := []struct {
		name  string
		chart *chart.Chart
		vals  map[string]interface{}
		// same: the digest equals baseDigest.
		same bool
		// skippable: the chart renders from chart and values alone.
		skippable bool
	}{{
		name:  "same content in a new chart object and a new values map",
		chart: helmtest.Chart(nil), vals: map[string]interface{}{"nested": map[string]interface{}{"b": "x", "a": 1}, "greeting": "hi"},
		same: true, skippable: true,
	}, {
		name:  "an edited value",
		chart: helmtest.Chart(nil), vals: map[string]interface{}{"greeting": "bonjour", "nested": map[string]interface{}{"a": 1, "b": "x"}},
		skippable: true,
	}, {
		name:  "an added value",
		chart: helmtest.Chart(nil), vals: map[string]interface{}{"greeting": "hi", "nested": map[string]interface{}{"a": 1, "b": "x", "c": nil}},
		skippable: true,
	}, {
		name:  "an edited template (a new operator version)",
		chart: helmtest.Chart(func(c *chart.Chart) { c.Templates[0].Data = []byte("greeting: {{ .Values.greeting | quote }}") }), vals: base,
		skippable: true,
	}, {
		name:  "a new chart version with the same templates",
		chart: helmtest.Chart(func(c *chart.Chart) { c.Metadata.Version = "1.0.1" }), vals: base,
		skippable: true,
	}, {
		name:  "edited chart defaults",
		chart: helmtest.Chart(func(c *chart.Chart) { c.Values["replicas"] = 2 }), vals: base,
		skippable: true,
	}, {
		name:  "an edited schema",
		chart: helmtest.Chart(func(c *chart.Chart) { c.Schema = []byte(`{"type":"object","required":["greeting"]}`) }), vals: base,
		skippable: true,
	}, {
		name:  "an edited file",
		chart: helmtest.Chart(func(c *chart.Chart) { c.Files = []*chart.File{{Name: "README.md", Data: []byte("x")}} }), vals: base,
		skippable: true,
	}, {
		name: "an added dependency",
		chart: helmtest.Chart(func(c *chart.Chart) {
			c.AddDependency(helmtest.Chart(func(d *chart.Chart) { d.Metadata.Name = "sub" }))
		}), vals: base,
		skippable: true,
	}, {
		name: "a template calling lookup",
		chart: helmtest.Chart(func(c *chart.Chart) {
			c.Templates = append(c.Templates, &chart.File{Name: "templates/x.yaml", Data: []byte(`{{ $s := lookup "v1" "Secret" "" "x" }}`)})
		}), vals: base,
	}, {
		name: "a dependency calling lookup",
		chart: helmtest.Chart(func(c *chart.Chart) {
			c.AddDependency(helmtest.Chart(func(d *chart.Chart) {
				d.Metadata.Name = "sub"
				d.Templates[0].Data = []byte(`{{ (lookup "v1" "Namespace" "" "x").metadata.name }}`)
			}))
		}), vals: base,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d, ok, err := Digest(DigestChart(tc.chart), tc.vals, testCapabilities)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(Equal(tc.skippable))
			if tc.same {
				g.Expect(d).To(Equal(baseDigest))
			} else {
				g.Expect(d).NotTo(Equal(baseDigest))
			}
		})
	}
}

// testCapabilities are a server's capabilities in digest tests.
var testCapabilities = &chartutil.Capabilities{
	KubeVersion: chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"},
	APIVersions: chartutil.VersionSet{"v1", "apps/v1", "apps/v1/Deployment"},
}

// TestReleaseDigestCapabilities shows that the capabilities are part of
// the digest of charts that read them, and only of those.
func TestReleaseDigestCapabilities(t *testing.T) {
	g := NewWithT(t)
	vals := map[string]interface{}{"greeting": "hi"}
	withCRD := &chartutil.Capabilities{
		KubeVersion: testCapabilities.KubeVersion,
		APIVersions: append(slices.Clone(testCapabilities.APIVersions), "monitoring.example.com/v1"),
	}
	upgraded := &chartutil.Capabilities{
		KubeVersion: chartutil.KubeVersion{Version: "v1.36.0", Major: "1", Minor: "36"},
		APIVersions: testCapabilities.APIVersions,
	}
	reordered := &chartutil.Capabilities{
		KubeVersion: testCapabilities.KubeVersion,
		APIVersions: chartutil.VersionSet{"apps/v1/Deployment", "v1", "apps/v1"},
	}
	digest := func(chrt *chart.Chart, caps *chartutil.Capabilities) string {
		d, ok, err := Digest(DigestChart(chrt), vals, caps)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue())
		return d
	}

	plain := helmtest.Chart(nil)
	g.Expect(digest(plain, withCRD)).To(Equal(digest(plain, testCapabilities)))
	g.Expect(digest(plain, nil)).To(Equal(digest(plain, testCapabilities)))

	for name, chrt := range map[string]*chart.Chart{
		"a template": helmtest.Chart(func(c *chart.Chart) {
			c.Templates[0].Data = []byte(`{{ if .Capabilities.APIVersions.Has "monitoring.example.com/v1" }}x{{ end }}`)
		}),
		"a dependency": helmtest.Chart(func(c *chart.Chart) {
			c.AddDependency(helmtest.Chart(func(d *chart.Chart) {
				d.Metadata.Name = "sub"
				d.Templates[0].Data = []byte(`{{ .Capabilities.KubeVersion.Minor }}`)
			}))
		}),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			base := digest(chrt, testCapabilities)
			g.Expect(digest(chrt, withCRD)).NotTo(Equal(base))
			g.Expect(digest(chrt, upgraded)).NotTo(Equal(base))
			g.Expect(digest(chrt, nil)).NotTo(Equal(base))
			g.Expect(digest(chrt, reordered)).To(Equal(base))
		})
	}
}

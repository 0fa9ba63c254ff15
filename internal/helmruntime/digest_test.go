package helmruntime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
)

// digestChart returns a small chart; edit changes a copy of it.
func digestChart(edit func(*chart.Chart)) *chart.Chart {
	c := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("greeting: {{ .Values.greeting }}")}},
		Values:    map[string]interface{}{"greeting": "hello", "replicas": 1},
		Schema:    []byte(`{"type":"object"}`),
	}
	if edit != nil {
		edit(c)
	}
	return c
}

func TestReleaseDigest(t *testing.T) {
	base := map[string]interface{}{"greeting": "hi", "nested": map[string]interface{}{"a": 1, "b": "x"}}
	baseDigest, ok, err := ReleaseDigest(digestChart(nil), base, testCapabilities)
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
		chart: digestChart(nil), vals: map[string]interface{}{"nested": map[string]interface{}{"b": "x", "a": 1}, "greeting": "hi"},
		same: true, skippable: true,
	}, {
		name:  "an edited value",
		chart: digestChart(nil), vals: map[string]interface{}{"greeting": "bonjour", "nested": map[string]interface{}{"a": 1, "b": "x"}},
		skippable: true,
	}, {
		name:  "an added value",
		chart: digestChart(nil), vals: map[string]interface{}{"greeting": "hi", "nested": map[string]interface{}{"a": 1, "b": "x", "c": nil}},
		skippable: true,
	}, {
		name:  "an edited template (a new operator version)",
		chart: digestChart(func(c *chart.Chart) { c.Templates[0].Data = []byte("greeting: {{ .Values.greeting | quote }}") }), vals: base,
		skippable: true,
	}, {
		name:  "a new chart version with the same templates",
		chart: digestChart(func(c *chart.Chart) { c.Metadata.Version = "1.0.1" }), vals: base,
		skippable: true,
	}, {
		name:  "edited chart defaults",
		chart: digestChart(func(c *chart.Chart) { c.Values["replicas"] = 2 }), vals: base,
		skippable: true,
	}, {
		name:  "an edited schema",
		chart: digestChart(func(c *chart.Chart) { c.Schema = []byte(`{"type":"object","required":["greeting"]}`) }), vals: base,
		skippable: true,
	}, {
		name:  "an edited file",
		chart: digestChart(func(c *chart.Chart) { c.Files = []*chart.File{{Name: "README.md", Data: []byte("x")}} }), vals: base,
		skippable: true,
	}, {
		name: "an added dependency",
		chart: digestChart(func(c *chart.Chart) {
			c.AddDependency(digestChart(func(d *chart.Chart) { d.Metadata.Name = "sub" }))
		}), vals: base,
		skippable: true,
	}, {
		name: "a template calling lookup",
		chart: digestChart(func(c *chart.Chart) {
			c.Templates = append(c.Templates, &chart.File{Name: "templates/x.yaml", Data: []byte(`{{ $s := lookup "v1" "Secret" "" "x" }}`)})
		}), vals: base,
	}, {
		name: "a dependency calling lookup",
		chart: digestChart(func(c *chart.Chart) {
			c.AddDependency(digestChart(func(d *chart.Chart) {
				d.Metadata.Name = "sub"
				d.Templates[0].Data = []byte(`{{ (lookup "v1" "Namespace" "" "x").metadata.name }}`)
			}))
		}), vals: base,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d, ok, err := ReleaseDigest(tc.chart, tc.vals, testCapabilities)
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
		d, ok, err := ReleaseDigest(chrt, vals, caps)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue())
		return d
	}

	plain := digestChart(nil)
	g.Expect(digest(plain, withCRD)).To(Equal(digest(plain, testCapabilities)))
	g.Expect(digest(plain, nil)).To(Equal(digest(plain, testCapabilities)))

	for name, chrt := range map[string]*chart.Chart{
		"a template": digestChart(func(c *chart.Chart) {
			c.Templates[0].Data = []byte(`{{ if .Capabilities.APIVersions.Has "monitoring.example.com/v1" }}x{{ end }}`)
		}),
		"a dependency": digestChart(func(c *chart.Chart) {
			c.AddDependency(digestChart(func(d *chart.Chart) {
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

// fakeReleaseClient is an action client over Helm's in-memory release
// storage. Its "rendering" is the template of the chart's first file with
// the greeting value appended, so tests control whether a dry-run renders
// the deployed manifest.
type fakeReleaseClient struct {
	helmclient.ActionInterface // only the methods below are called
	cfg                        *action.Configuration
	gets, dryRuns, upgrades    int
}

func newFakeReleaseClient() *fakeReleaseClient {
	return &fakeReleaseClient{cfg: &action.Configuration{Releases: storage.Init(driver.NewMemory())}}
}

func render(chrt *chart.Chart, vals map[string]interface{}) string {
	return fmt.Sprintf("%s|%v", chrt.Templates[0].Data, vals["greeting"])
}

func (f *fakeReleaseClient) Config() *action.Configuration { return f.cfg }

func (f *fakeReleaseClient) Get(name string, _ ...helmclient.GetOption) (*release.Release, error) {
	f.gets++
	return f.cfg.Releases.Last(name)
}

func (f *fakeReleaseClient) Install(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	i := action.NewInstall(f.cfg)
	for _, o := range opts {
		if err := o(i); err != nil {
			return nil, err
		}
	}
	rel := &release.Release{Name: name, Namespace: ns, Version: 1, Chart: chrt, Config: vals, Manifest: render(chrt, vals),
		Info: &release.Info{Status: release.StatusDeployed}, Labels: maps.Clone(i.Labels)}
	return rel, f.cfg.Releases.Create(rel)
}

func (f *fakeReleaseClient) Upgrade(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	u := action.NewUpgrade(f.cfg)
	for _, o := range opts {
		if err := o(u); err != nil {
			return nil, err
		}
	}
	if u.DryRun {
		f.dryRuns++
		return &release.Release{Name: name, Namespace: ns, Manifest: render(chrt, vals), Info: &release.Info{Status: release.StatusPendingUpgrade}}, nil
	}
	f.upgrades++
	cur, err := f.cfg.Releases.Last(name)
	if err != nil {
		return nil, err
	}
	cur.Info.Status = release.StatusSuperseded
	labels := maps.Clone(cur.Labels)
	maps.Copy(labels, u.Labels)
	rel := &release.Release{Name: name, Namespace: ns, Version: cur.Version + 1, Chart: chrt, Config: vals, Manifest: render(chrt, vals),
		Info: &release.Info{Status: release.StatusDeployed}, Labels: labels}
	return rel, f.cfg.Releases.Create(rel)
}

// dryRun is the library's dry-run upgrade option.
func dryRun(u *action.Upgrade) error {
	u.DryRun, u.DryRunOption = true, "server"
	return nil
}

// newDigestClient wraps inner like ActionClientFor does, one per
// reconcile: the digest layer over the release memo.
func newDigestClient(inner helmclient.ActionInterface) helmclient.ActionInterface {
	k := newTestKind("Test")
	ac, err := stack(context.Background(), target{obj: &corev1.ConfigMap{}}, inner, []layer{k.digests, rememberRelease})
	if err != nil {
		panic(err)
	}
	return ac
}

func TestDigestActionClient(t *testing.T) {
	g := NewWithT(t)
	chrt := digestChart(nil)
	vals := map[string]interface{}{"greeting": "hi"}
	digest, _, err := ReleaseDigest(chrt, vals, nil)
	g.Expect(err).NotTo(HaveOccurred())
	inner := newFakeReleaseClient()

	t.Log("install records the digest of the chart and the final values")
	rel, err := newDigestClient(inner).Install("web", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Labels).To(HaveKeyWithValue(ReleaseDigestLabel, digest))

	t.Log("a reconcile of the unchanged release reads it once and skips the dry-run")
	c := newDigestClient(inner)
	inner.gets = 0
	cur, err := c.Get("web") // the library's status read
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Get("web") // its release-state read
	g.Expect(err).NotTo(HaveOccurred())
	spec, err := c.Upgrade("web", "ns", digestChart(nil), map[string]interface{}{"greeting": "hi"}, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(spec.Manifest).To(Equal(cur.Manifest))
	g.Expect(inner.dryRuns).To(BeZero())
	g.Expect(inner.gets).To(Equal(1))

	t.Log("an edited value goes to the dry-run, and the upgrade records the new digest")
	edited := map[string]interface{}{"greeting": "bonjour"}
	c = newDigestClient(inner)
	spec, err = c.Upgrade("web", "ns", chrt, edited, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(1))
	g.Expect(spec.Manifest).NotTo(Equal(cur.Manifest))
	rel, err = c.Upgrade("web", "ns", chrt, edited)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(2))
	editedDigest, _, _ := ReleaseDigest(chrt, edited, nil)
	g.Expect(rel.Labels).To(HaveKeyWithValue(ReleaseDigestLabel, editedDigest))
	t.Log("the client reads the release again after changing it")
	got, err := c.Get("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Version).To(Equal(2))

	t.Log("a new chart (a new operator version) goes to the dry-run")
	newChart := digestChart(func(c *chart.Chart) { c.Templates[0].Data = []byte("greeting: {{ .Values.greeting | quote }}") })
	_, err = newDigestClient(inner).Upgrade("web", "ns", newChart, edited, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(2))

	t.Log("a release that is not deployed (failed) goes to the dry-run")
	failed, err := inner.cfg.Releases.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	failed.Info.Status = release.StatusFailed
	_, err = newDigestClient(inner).Upgrade("web", "ns", chrt, edited, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(3))
	failed.Info.Status = release.StatusDeployed

	t.Log("a chart that renders the same records its digest on the deployed revision; the next dry-run is skipped")
	sameRender := digestChart(func(c *chart.Chart) { c.Metadata.Version = "1.0.1" })
	sameDigest, _, _ := ReleaseDigest(sameRender, edited, nil)
	_, err = newDigestClient(inner).Upgrade("web", "ns", sameRender, edited, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(4))
	stored, err := inner.cfg.Releases.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored.Version).To(Equal(2)) // no new revision
	g.Expect(stored.Labels).To(HaveKeyWithValue(ReleaseDigestLabel, sameDigest))
	_, err = newDigestClient(inner).Upgrade("web", "ns", sameRender, edited, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(4))
	g.Expect(inner.upgrades).To(Equal(1))

	t.Log("a release installed without a digest gets one after its first dry-run")
	_, err = inner.Install("old", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = newDigestClient(inner).Upgrade("old", "ns", chrt, vals, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(5))
	_, err = newDigestClient(inner).Upgrade("old", "ns", chrt, vals, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(5))

	t.Log("a chart calling lookup always goes to the dry-run")
	lookup := digestChart(func(c *chart.Chart) { c.Templates[0].Data = []byte(`{{ lookup "v1" "Secret" "" "x" }}`) })
	_, err = newDigestClient(inner).Install("live", "ns", lookup, vals)
	g.Expect(err).NotTo(HaveOccurred())
	for range 2 {
		_, err = newDigestClient(inner).Upgrade("live", "ns", lookup, vals, dryRun)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(inner.dryRuns).To(Equal(7))

	t.Log("a missing release is reported as such, and remembered until an install")
	c = newDigestClient(inner)
	inner.gets = 0
	for range 2 {
		_, err = c.Get("none")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	}
	g.Expect(inner.gets).To(Equal(1))
	_, err = c.Install("none", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Get("none")
	g.Expect(err).NotTo(HaveOccurred())
}

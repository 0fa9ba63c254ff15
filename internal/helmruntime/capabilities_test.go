package helmruntime

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery/cached/memory"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// fakeServer is a discovery client of a server with apps/v1 and
// serverVersions counts the version requests: one per fetch.
func fakeServer() (*discoveryfake.FakeDiscovery, func() int) {
	fake := &discoveryfake.FakeDiscovery{
		Fake:               &clienttesting.Fake{},
		FakedServerVersion: &version.Info{GitVersion: "v1.35.4", Major: "1", Minor: "35"},
	}
	fake.Resources = []*metav1.APIResourceList{{
		GroupVersion: "apps/v1",
		APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true}},
	}}
	return fake, func() int {
		n := 0
		for _, a := range fake.Actions() {
			if a.GetResource().Resource == "version" {
				n++
			}
		}
		return n
	}
}

func TestCapabilitiesCache(t *testing.T) {
	g := NewWithT(t)
	fake, fetches := fakeServer()
	dc := memory.NewMemCacheClient(fake)
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	c := newCapabilitiesCache(30 * time.Second)
	c.now = func() time.Time { return now }

	caps, err := c.get(dc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(caps.KubeVersion.Version).To(Equal("v1.35.4"))
	g.Expect(caps.APIVersions.Has("apps/v1")).To(BeTrue())
	g.Expect(caps.APIVersions.Has("apps/v1/Deployment")).To(BeTrue())
	g.Expect(fetches()).To(Equal(1))

	t.Log("within the max age: shared, and every caller gets its own copy")
	caps.APIVersions[0] = "changed/v1"
	now = now.Add(29 * time.Second)
	again, err := c.get(dc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fetches()).To(Equal(1))
	g.Expect(again.APIVersions).NotTo(ContainElement("changed/v1"))

	t.Log("a new API is seen once the max age has passed")
	fake.Resources = append(fake.Resources, &metav1.APIResourceList{
		GroupVersion: "monitoring.example.com/v1",
		APIResources: []metav1.APIResource{{Name: "monitors", Kind: "Monitor", Namespaced: true}},
	})
	now = now.Add(time.Second)
	caps, err = c.get(dc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fetches()).To(Equal(2))
	g.Expect(caps.APIVersions.Has("monitoring.example.com/v1")).To(BeTrue())

	t.Log("or at once after invalidate")
	c.invalidate()
	_, err = c.get(dc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fetches()).To(Equal(3))
}

// TestCapabilitiesActionClient covers when the shared capabilities are
// dropped: after a chart with CRDs, and after releases that add APIs.
func TestCapabilitiesActionClient(t *testing.T) {
	crdManifest := "---\n# Source: x/templates/crd.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: monitors.monitoring.example.com\n"
	apiServiceManifest := "---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1.metrics.example.com\n"
	plainManifest := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    note: \"kind: CustomResourceDefinition\"\n"
	withCRDs := &chart.Chart{Metadata: &chart.Metadata{Name: "x"}, Files: []*chart.File{{Name: "crds/monitor.yaml", Data: []byte("kind: CustomResourceDefinition")}}}
	plain := &chart.Chart{Metadata: &chart.Metadata{Name: "x"}}

	cases := []struct {
		name        string
		chart       *chart.Chart
		manifest    string
		upgrade     bool
		dryRun      bool
		invalidated bool
	}{
		{name: "install of a plain chart", chart: plain, manifest: plainManifest},
		{name: "install of a chart with crds/", chart: withCRDs, manifest: plainManifest, invalidated: true},
		{name: "install of a CRD template", chart: plain, manifest: crdManifest, invalidated: true},
		{name: "install of an APIService", chart: plain, manifest: apiServiceManifest, invalidated: true},
		{name: "upgrade of a plain chart", chart: plain, manifest: plainManifest, upgrade: true},
		{name: "upgrade to a CRD template", chart: plain, manifest: crdManifest, upgrade: true, invalidated: true},
		{name: "dry-run upgrade to a CRD template", chart: plain, manifest: crdManifest, upgrade: true, dryRun: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			fake, fetches := fakeServer()
			dc := memory.NewMemCacheClient(fake)
			cache := newCapabilitiesCache(time.Hour)
			_, err := cache.get(dc)
			g.Expect(err).NotTo(HaveOccurred())

			rec := &recordingActionClient{manifest: tc.manifest}
			rec.cfg.Capabilities, err = cache.get(dc)
			g.Expect(err).NotTo(HaveOccurred())
			ac, err := stack(t.Context(), target{}, rec, []layer{cache.layer})
			g.Expect(err).NotTo(HaveOccurred())
			if tc.upgrade {
				var opts []helmclient.UpgradeOption
				if tc.dryRun {
					opts = append(opts, dryRun)
				}
				_, err = ac.Upgrade("x", "ns", tc.chart, nil, opts...)
			} else {
				_, err = ac.Install("x", "ns", tc.chart, nil)
				// Helm fetches the capabilities itself after installing crds/.
				g.Expect(rec.capsAtInstall == nil).To(Equal(len(tc.chart.CRDObjects()) > 0))
			}
			g.Expect(err).NotTo(HaveOccurred())
			_, err = cache.get(dc)
			g.Expect(err).NotTo(HaveOccurred())
			want := 1
			if tc.invalidated {
				want = 2
			}
			g.Expect(fetches()).To(Equal(want))
		})
	}
}

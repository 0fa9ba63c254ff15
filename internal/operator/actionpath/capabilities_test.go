package actionpath

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/client-go/discovery/cached/memory"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/helmconfig"
)

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
			fake, fetches := helmtest.Server()
			dc := memory.NewMemCacheClient(fake)
			cache := helmconfig.NewCapabilities(time.Hour)
			_, err := cache.Get(dc)
			g.Expect(err).NotTo(HaveOccurred())

			rec := &recordingActionClient{manifest: tc.manifest}
			rec.cfg.Capabilities, err = cache.Get(dc)
			g.Expect(err).NotTo(HaveOccurred())
			ac := stack(t.Context(), target{}, rec, []Layer{{Name: "capabilities", Wrap: capabilities(cache)}})
			if tc.upgrade {
				var opts []helmclient.UpgradeOption
				if tc.dryRun {
					opts = append(opts, helmtest.DryRun)
				}
				_, err = ac.Upgrade("x", "ns", tc.chart, nil, opts...)
			} else {
				_, err = ac.Install("x", "ns", tc.chart, nil)
				// Helm fetches the capabilities itself after installing crds/.
				g.Expect(rec.capsAtInstall == nil).To(Equal(len(tc.chart.CRDObjects()) > 0))
			}
			g.Expect(err).NotTo(HaveOccurred())
			_, err = cache.Get(dc)
			g.Expect(err).NotTo(HaveOccurred())
			want := 1
			if tc.invalidated {
				want = 2
			}
			g.Expect(fetches()).To(Equal(want))
		})
	}
}

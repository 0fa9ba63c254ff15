package release

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	hrelease "helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

// helmRecord is rel's record as Helm's driver writes it: its JSON, one
// gzip member at best compression, base64.
func helmRecord(g Gomega, rel *hrelease.Release) []byte {
	b, err := json.Marshal(rel)
	g.Expect(err).NotTo(HaveOccurred())
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = zw.Write(b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(zw.Close()).To(Succeed())
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// TestDecodeRecord: the runtime's records (the chart's member, then the
// rest), Helm's (one member), records without gzip and of releases
// without a chart all decode to what Helm's driver decodes (decodeRecord);
// each read gets a chart of its own, and a second chart's records their
// chart.
func TestDecodeRecord(t *testing.T) {
	g := NewWithT(t)
	first := testRecord("hello")
	other := testRecord("other chart")
	other.Chart = helmtest.Chart(nil)
	other.Chart.Metadata.Version = "9.9.9"
	noChart := testRecord("no chart")
	noChart.Chart = nil
	plain, err := json.Marshal(first)
	g.Expect(err).NotTo(HaveOccurred())

	ours := func(rel *hrelease.Release) []byte {
		data, err := EncodeRecord(rel)
		g.Expect(err).NotTo(HaveOccurred())
		return data
	}
	for name, data := range map[string][]byte{
		"ours":              ours(first),
		"ours, again":       ours(first),
		"ours, other chart": ours(other),
		"ours, no chart":    ours(noChart),
		"helm's":            helmRecord(g, first),
		"not gzipped":       []byte(base64.StdEncoding.EncodeToString(plain)),
	} {
		got, err := DecodeRecord(data)
		g.Expect(err).NotTo(HaveOccurred(), name)
		var want *hrelease.Release
		if name == "not gzipped" {
			want = &hrelease.Release{}
			g.Expect(json.Unmarshal(plain, want)).To(Succeed())
		} else {
			want = decodeRecord(g, data)
		}
		g.Expect(got).To(Equal(want), name)
	}

	a, err := DecodeRecord(ours(first))
	g.Expect(err).NotTo(HaveOccurred())
	a.Chart.Metadata.Version = "edited"
	a.Chart.Values["edited"] = true
	b, err := DecodeRecord(ours(first))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Chart.Metadata.Version).NotTo(Equal("edited"), "each read decodes to a chart of its own")
	g.Expect(b.Chart.Values).NotTo(HaveKey("edited"))

	_, err = DecodeRecord([]byte("not base64!"))
	g.Expect(err).To(HaveOccurred())
}

// BenchmarkDecodeRecord: a record of the full Nginx sample, as Helm's
// driver decodes it and as DecodeRecord does.
func BenchmarkDecodeRecord(b *testing.B) {
	rel := nginxRecord(b)
	data, err := EncodeRecord(rel)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("helm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			zipped, _ := base64.StdEncoding.DecodeString(string(data))
			if _, err := decodeWhole(zipped); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRecord(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// nginxRecord is a deployed release of helm-charts/nginx with its
// defaults.
func nginxRecord(b *testing.B) *hrelease.Release {
	chrt, err := loader.LoadDir("../../../helm-charts/nginx")
	if err != nil {
		b.Fatal(err)
	}
	return &hrelease.Release{
		Name: "web", Namespace: "acc", Version: 2, Chart: chrt,
		Config:   map[string]interface{}{"replicaCount": 2},
		Manifest: "---\n# Source: nginx/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n",
		Info:     &hrelease.Info{Status: hrelease.StatusDeployed, Description: "Upgrade complete"},
	}
}

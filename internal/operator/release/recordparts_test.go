package release

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	hrelease "helm.sh/helm/v3/pkg/release"
)

// TestRecordParts: a record of the runtime's encoding, held as parts,
// decodes to what Helm's driver decodes from it, whichever record of the
// chart was held first (the dictionary), with a chart of its own per
// decode; a record of Helm's encoding is not split.
func TestRecordParts(t *testing.T) {
	g := NewWithT(t)
	var held []RecordParts
	var want []*hrelease.Release
	for i, greeting := range []string{"hello", "bonjour", strings.Repeat("hallo ", 500), ""} {
		rel := testRecord(greeting)
		rel.Name = fmt.Sprintf("release-%d", i)
		rel.Version = i + 1
		data, err := EncodeRecord(rel)
		g.Expect(err).NotTo(HaveOccurred())
		p, ok := SplitRecord(data)
		g.Expect(ok).To(BeTrue(), greeting)
		g.Expect(len(p.packed)).To(BeNumerically("<", len(data)/4), "held in a fraction of the record")
		held = append(held, p)
		want = append(want, decodeRecord(g, data))
	}
	for i, p := range held {
		got, ok := p.Decode()
		g.Expect(ok).To(BeTrue())
		g.Expect(got).To(Equal(want[i]), "record %d", i)
		got.Chart.Metadata.Version = "edited"
		again, _ := p.Decode()
		g.Expect(again.Chart.Metadata.Version).NotTo(Equal("edited"), "each decode gets a chart of its own")
	}

	// Charts whose members end at each offset within a base64 group: the
	// split decodes from the member's last whole group on.
	residues := map[int]bool{}
	for i := 0; i < 12 && len(residues) < 3; i++ {
		rel := testRecord("versions")
		rel.Chart.Metadata.Version = "1.0." + strings.Repeat("1", i)
		data, err := EncodeRecord(rel)
		g.Expect(err).NotTo(HaveOccurred())
		for range 2 { // the chart's first record, then one of a chart held
			p, ok := SplitRecord(data)
			g.Expect(ok).To(BeTrue())
			got, ok := p.Decode()
			g.Expect(ok).To(BeTrue())
			g.Expect(got).To(Equal(decodeRecord(g, data)), "chart version %s", rel.Chart.Metadata.Version)
			residues[len(p.ref.gz)%3] = true
		}
	}
	g.Expect(residues).To(HaveLen(3), "members ending at every offset of a base64 group")

	_, ok := SplitRecord(helmRecord(g, testRecord("helm's")))
	g.Expect(ok).To(BeFalse(), "Helm's own encoding")
	_, ok = SplitRecord([]byte(base64.StdEncoding.EncodeToString([]byte(`{"name":"plain"}`))))
	g.Expect(ok).To(BeFalse(), "not gzipped")
	_, ok = RecordParts{}.Decode()
	g.Expect(ok).To(BeFalse(), "the zero value")
}

// BenchmarkRecordParts: holding a record of the Nginx chart as parts (on
// every write) and decoding it (on every read answered from memory),
// against DecodeRecord's read of the whole record; and the bytes held.
func BenchmarkRecordParts(b *testing.B) {
	rel := nginxRecord(b)
	data, err := EncodeRecord(rel)
	if err != nil {
		b.Fatal(err)
	}
	// Another release of the chart first, whose rest is the dictionary.
	other := *rel
	other.Name, other.Config = "other", map[string]interface{}{"replicaCount": 3}
	otherData, err := EncodeRecord(&other)
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := SplitRecord(otherData); !ok {
		b.Fatal("not split")
	}
	p, ok := SplitRecord(data)
	if !ok {
		b.Fatal("not split")
	}
	b.Logf("record %d bytes, held %d", len(data), len(p.packed))
	b.Run("split", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := SplitRecord(data); !ok {
				b.Fatal("not split")
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := p.Decode(); !ok {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRecord(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

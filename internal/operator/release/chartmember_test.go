package release

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

// copyChart returns a copy of c that shares nothing a test changes.
func copyChart(t *testing.T, c *chart.Chart) *chart.Chart {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var out chart.Chart
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestChartKey: two charts have one key when their JSON is the same, and
// a change of any part the JSON holds, nil for empty among them, gives
// another key.
func TestChartKey(t *testing.T) {
	g := NewWithT(t)
	m := newChartMemberCache()
	key := func(c *chart.Chart) chartKey {
		k, err := m.keyOf(c)
		g.Expect(err).NotTo(HaveOccurred())
		return k
	}
	base := helmtest.Chart(nil)
	base.Schema = []byte(`{"type":"object"}`)
	base.Files = []*chart.File{{Name: "README.md", Data: []byte("hello")}}
	g.Expect(key(copyChart(t, base))).To(Equal(key(base)), "a copy")

	edits := map[string]func(c *chart.Chart){
		"a template's data":      func(c *chart.Chart) { c.Templates[0].Data = append(c.Templates[0].Data, ' ') },
		"a template's name":      func(c *chart.Chart) { c.Templates[0].Name += "x" },
		"a template more":        func(c *chart.Chart) { c.Templates = append(c.Templates, &chart.File{Name: "t", Data: []byte("x")}) },
		"templates swapped":      func(c *chart.Chart) { c.Templates = append(c.Templates, &chart.File{Name: "t", Data: []byte("x")}) },
		"a value":                func(c *chart.Chart) { c.Values["greeting"] = "other" },
		"the version":            func(c *chart.Chart) { c.Metadata.Version = "9.9.9" },
		"a lock":                 func(c *chart.Chart) { c.Lock = &chart.Lock{Digest: "sha256:1"} },
		"the schema":             func(c *chart.Chart) { c.Schema = []byte(`{"type":"array"}`) },
		"no schema":              func(c *chart.Chart) { c.Schema = nil },
		"an empty schema":        func(c *chart.Chart) { c.Schema = []byte{} },
		"a file's data":          func(c *chart.Chart) { c.Files[0].Data = []byte("hellO") },
		"a file's data nil":      func(c *chart.Chart) { c.Files[0].Data = nil },
		"a file's data empty":    func(c *chart.Chart) { c.Files[0].Data = []byte{} },
		"no files":               func(c *chart.Chart) { c.Files = nil },
		"an empty list of files": func(c *chart.Chart) { c.Files = []*chart.File{} },
		"bytes moved from name to data": func(c *chart.Chart) {
			c.Files[0].Name, c.Files[0].Data = "README.m", []byte("dhello")
		},
		"a file moved to the templates": func(c *chart.Chart) {
			c.Templates, c.Files = append(c.Templates, c.Files...), nil
		},
	}
	seen := map[chartKey]string{key(base): "the chart"}
	for name, edit := range edits {
		c := copyChart(t, base)
		edit(c)
		if name == "templates swapped" {
			c.Templates[0], c.Templates[len(c.Templates)-1] = c.Templates[len(c.Templates)-1], c.Templates[0]
		}
		k := key(c)
		g.Expect(seen).NotTo(HaveKey(k), "%s: a key of its own", name)
		seen[k] = name
	}
}

// TestChartMemberFollowsEdits: a chart changed in place after its member
// was kept gets the member of what it holds now.
func TestChartMemberFollowsEdits(t *testing.T) {
	g := NewWithT(t)
	m := newChartMemberCache()
	rel := testRecord("hello")
	before, n, err := m.member(rel.Chart)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := json.Marshal(rel.Chart)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(len(b)))

	rel.Chart.Templates[0].Data = append(rel.Chart.Templates[0].Data, []byte("\n# edited\n")...)
	after, n, err := m.member(rel.Chart)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).NotTo(Equal(before))
	b, err = json.Marshal(rel.Chart)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(len(b)))
}

// TestRecordJSONLen: the length CheckRecord bounds a record by is that of
// the release's JSON, with a chart or without, with or without more.
func TestRecordJSONLen(t *testing.T) {
	g := NewWithT(t)
	noChart := testRecord("hello")
	noChart.Chart = nil
	for name, rel := range map[string]*hrelease.Release{
		"a release":    testRecord("hello"),
		"no chart":     noChart,
		"only a chart": {Chart: helmtest.Chart(nil)},
		"nothing":      {},
	} {
		b, err := json.Marshal(rel)
		g.Expect(err).NotTo(HaveOccurred())
		n, err := recordJSONLen(rel)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(len(b)), name)
	}
}

package valuesschema

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// nginx loads the nginx chart, whose schema is the spec of the Nginx kind.
func nginx(t testing.TB) *chart.Chart {
	t.Helper()
	chrt, err := loader.LoadDir("../../../helm-charts/nginx")
	if err != nil {
		t.Fatal(err)
	}
	return chrt
}

// sampleValues is the spec of the full Nginx sample
// (config/samples/web_v1alpha1_nginx_full.yaml), every optional part on.
func sampleValues(t testing.TB) map[string]interface{} {
	t.Helper()
	b, err := os.ReadFile("../../../config/samples/web_v1alpha1_nginx_full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cr struct {
		Spec map[string]interface{} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &cr); err != nil {
		t.Fatal(err)
	}
	return cr.Spec
}

// values parses YAML values as Helm reads a values file.
func values(t testing.TB, s string) map[string]interface{} {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// subSchema is the schema of the dependency of withDependencies.
const subSchema = `{
  "type": "object",
  "properties": {
    "enabled": {"type": "boolean"},
    "size": {"type": "integer", "minimum": 1},
    "mode": {"enum": ["fast", "safe"]}
  }
}`

// withDependencies returns a parent chart with a schema of its own and
// the same subchart three times: as db, enabled by db.enabled (default
// on); as cache, enabled by cache.enabled (default off); and under the
// tag extra, as extra, importing its exports.limits as extraLimits.
func withDependencies() *chart.Chart {
	sub := func() *chart.Chart {
		return &chart.Chart{
			Metadata: &chart.Metadata{APIVersion: "v2", Name: "store", Version: "0.1.0"},
			Values:   map[string]interface{}{"size": 1, "mode": "safe", "exports": map[string]interface{}{"limits": map[string]interface{}{"size": 1}}},
			Schema:   []byte(subSchema),
		}
	}
	parent := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "app", Version: "1.0.0", Dependencies: []*chart.Dependency{
			{Name: "store", Version: "0.1.0", Alias: "db", Condition: "db.enabled"},
			{Name: "store", Version: "0.1.0", Alias: "cache", Condition: "cache.enabled"},
			{Name: "store", Version: "0.1.0", Alias: "extra", Tags: []string{"extra"},
				ImportValues: []interface{}{map[string]interface{}{"child": "exports.limits", "parent": "extraLimits"}}},
		}},
		Values: map[string]interface{}{
			"replicas": 1,
			"db":       map[string]interface{}{"enabled": true},
			"cache":    map[string]interface{}{"enabled": false},
			"tags":     map[string]interface{}{"extra": false},
		},
		Schema: []byte(`{"type": "object", "properties": {"replicas": {"type": "integer", "maximum": 10},
			"extraLimits": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 5}}}}}`),
	}
	parent.AddDependency(sub())
	return parent
}

// largeExports is withDependencies with a subchart whose exports the
// parent's schema refuses.
func largeExports() *chart.Chart {
	c := withDependencies()
	c.Dependencies()[0].Values["exports"] = map[string]interface{}{"limits": map[string]interface{}{"size": 9}}
	return c
}

// vendored returns a chart with the subchart of withDependencies in its
// charts/ but not in its Chart.yaml.
func vendored() *chart.Chart {
	c := withDependencies()
	c.Metadata.Dependencies = nil
	return c
}

// TestValidateAgainstSchema: for the same chart and values, the verdict
// and the error's text are Helm's (chartutil.ValidateAgainstSchema), for
// the nginx chart, a chart with dependencies (processed for the values,
// as Helm's action does before it validates), and schemas that do not
// compile.
func TestValidateAgainstSchema(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "port.json")
	if err := os.WriteFile(ref, []byte(`{"type": "integer", "maximum": 65535}`), 0o600); err != nil {
		t.Fatal(err)
	}
	withSchema := func(schema string) func() *chart.Chart {
		return func() *chart.Chart {
			return &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "plain", Version: "0.1.0"}, Schema: []byte(schema)}
		}
	}
	nginx := func() *chart.Chart { return nginx(t) }
	cases := []struct {
		name  string
		chart func() *chart.Chart
		// values are the chart's values, not coalesced: both validators
		// get the same.
		values map[string]interface{}
		// fails: Helm's validation fails.
		fails bool
	}{
		{name: "the full Nginx sample", chart: nginx, values: sampleValues(t)},
		{name: "a value of the wrong type", chart: nginx, values: values(t, "replicaCount: three"), fails: true},
		{name: "a value out of range", chart: nginx, values: values(t, "replicaCount: 5000"), fails: true},
		{name: "a value outside an enum, deep", chart: nginx, values: values(t, "image: {pullPolicy: Sometimes}"), fails: true},
		{name: "a property the schema does not know", chart: nginx, values: values(t, "replicas: 2"), fails: true},
		{name: "failures at several places", chart: nginx, values: values(t, "replicaCount: -1\nservice: {type: Nowhere}\nextra: 1"), fails: true},
		{name: "dependencies that pass", chart: withDependencies, values: values(t, "replicas: 2\ndb: {size: 3}\ncache: {mode: fast}")},
		{name: "the parent's and two dependencies' failures", chart: withDependencies,
			values: values(t, "replicas: 20\ndb: {size: 0}\ncache: {enabled: true, mode: slow}"), fails: true},
		// Helm's action stops before: its dependency processing and its
		// coalescing refuse such values when Chart.yaml lists the
		// dependency.
		{name: "a dependency's values that are no object", chart: vendored, values: values(t, "store: [1, 2]"), fails: true},
		{name: "a dependency's values that are null", chart: withDependencies, values: values(t, "db: null")},
		{name: "a schema that is no JSON", chart: withSchema(`{"type": `), fails: true},
		{name: "a schema that does not compile", chart: withSchema(`{"type": 5}`), fails: true},
		{name: "a file reference", chart: withSchema(`{"properties": {"port": {"$ref": "file://` + ref + `"}}}`),
			values: values(t, "port: 70000"), fails: true},
		{name: "a file reference that is missing", chart: withSchema(`{"properties": {"port": {"$ref": "file://` + dir + `/missing.json"}}}`),
			values: values(t, "port: 80"), fails: true},
		{name: "an urn nothing resolves: anything goes", chart: withSchema(`{"properties": {"port": {"$ref": "urn:example:port"}}}`),
			values: values(t, "port: nope")},
	}
	s := New(0, logr.Discard())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			chrt := tc.chart()
			g.Expect(chartutil.ProcessDependenciesWithMerge(chrt, tc.values)).To(Succeed())
			helm := chartutil.ValidateAgainstSchema(chrt, tc.values)
			ours := s.ValidateAgainstSchema(chrt, tc.values)
			if !tc.fails {
				g.Expect(helm).NotTo(HaveOccurred())
				g.Expect(ours).NotTo(HaveOccurred())
				return
			}
			g.Expect(helm).To(HaveOccurred())
			g.Expect(ours).To(HaveOccurred())
			g.Expect(lines(ours)).To(Equal(lines(helm)))
			t.Logf("%s", ours)
		})
	}
}

// lines are the lines of err's message, sorted: the validator reports
// the failures of one object's properties in the order it meets them in
// a map, Helm's as ours, so only the set of lines is the same from run to
// run.
func lines(err error) []string {
	l := strings.Split(fmt.Sprint(err), "\n")
	slices.Sort(l)
	return l
}

// TestValidateAgainstSchemaMessage: the error names the chart and the
// failing value, as users read it in a resource's conditions.
func TestValidateAgainstSchemaMessage(t *testing.T) {
	g := NewWithT(t)
	s := New(0, logr.Discard())
	g.Expect(s.CheckValues(nginx(t), values(t, "image: {pullPolicy: Sometimes}"))).To(MatchError(
		`values don't meet the specifications of the schema(s) in the following chart(s):
nginx:
- at '/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'
`))
	g.Expect(s.CheckValues(withDependencies(), values(t, "db: {size: 0}"))).To(MatchError(
		`values don't meet the specifications of the schema(s) in the following chart(s):
db:
- at '/size': minimum: got 0, want 1
`))
}

// TestCheckValues: the judgement of an action's values is the one Helm's
// install and upgrade make (chartutil.ToRenderValuesWithSchemaValidation
// after the dependency processing): chart defaults coalesced in, disabled
// dependencies skipped, aliases and imported values as Helm makes them.
// The chart is left as it was, so that the action that follows on it
// does what it does without the check.
func TestCheckValues(t *testing.T) {
	cases := []struct {
		name   string
		chart  func() *chart.Chart
		values string
		fails  bool
	}{
		{name: "the chart's defaults", chart: withDependencies},
		{name: "a default that fails, overridden", chart: func() *chart.Chart {
			c := withDependencies()
			c.Values["replicas"] = 50
			return c
		}, values: "replicas: 3"},
		{name: "a default that fails", chart: func() *chart.Chart {
			c := withDependencies()
			c.Values["replicas"] = 50
			return c
		}, fails: true},
		{name: "a disabled dependency is not judged", chart: withDependencies, values: "cache: {size: 0}"},
		{name: "an enabled one is", chart: withDependencies, values: "cache: {enabled: true, size: 0}", fails: true},
		{name: "one disabled by its condition", chart: withDependencies, values: "db: {enabled: false, mode: slow}"},
		{name: "one enabled by its tag", chart: withDependencies, values: "tags: {extra: true}\nextra: {mode: slow}", fails: true},
		{name: "an imported value that passes", chart: withDependencies, values: "tags: {extra: true}"},
		{name: "an imported value the parent judges", chart: largeExports, values: "tags: {extra: true}", fails: true},
		{name: "a value not imported from a disabled dependency", chart: largeExports},
		{name: "the nginx chart", chart: func() *chart.Chart { return nginx(t) }, values: "replicaCount: 2"},
		{name: "the nginx chart, failing", chart: func() *chart.Chart { return nginx(t) }, values: "replicaCount: 2000", fails: true},
	}
	s := New(0, logr.Discard())
	opts := chartutil.ReleaseOptions{Name: "app", Namespace: "ns", Revision: 1, IsInstall: true}
	// helm is what Helm's action does with chrt and vals.
	helm := func(chrt *chart.Chart, vals map[string]interface{}) (chartutil.Values, error) {
		if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
			return nil, err
		}
		return chartutil.ToRenderValuesWithSchemaValidation(chrt, vals, opts, nil, false)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vals := values(t, tc.values)
			alone := tc.chart()
			want, helmErr := helm(alone, vals)
			g.Expect(helmErr != nil).To(Equal(tc.fails), "Helm's verdict: %v", helmErr)

			checked := tc.chart()
			err := s.CheckValues(checked, vals)
			g.Expect(fmt.Sprint(err)).To(Equal(fmt.Sprint(helmErr)))
			g.Expect(checked).To(Equal(tc.chart()), "the chart as it was")
			got, gotErr := helm(checked, vals)
			g.Expect(fmt.Sprint(gotErr)).To(Equal(fmt.Sprint(helmErr)), "the action after the check")
			g.Expect(fmt.Sprint(got["Values"])).To(Equal(fmt.Sprint(want["Values"])), "the action after the check")
			g.Expect(checked.Metadata).To(Equal(alone.Metadata), "the action after the check")
			g.Expect(checked.Values).To(Equal(alone.Values), "the action after the check")
			g.Expect(dependencyNames(checked)).To(Equal(dependencyNames(alone)), "the action after the check")
		})
	}
	NewWithT(t).Expect(s.CheckValues(nil, nil)).To(HaveOccurred(), "no chart: Helm's to refuse")
}

// dependencyNames names the dependencies chrt has.
func dependencyNames(chrt *chart.Chart) []string {
	var names []string
	for _, d := range chrt.Dependencies() {
		names = append(names, d.Name())
	}
	return names
}

// TestCompiledOnce: a schema is compiled once, whichever chart (a copy,
// a reload) carries it; at most max are kept, the least recently used
// dropped; a schema that does not compile is not kept.
func TestCompiledOnce(t *testing.T) {
	g := NewWithT(t)
	s := New(2, logr.Discard())
	first, again := nginx(t), nginx(t)
	g.Expect(s.ValidateAgainstSchema(first, sampleValues(t))).To(Succeed())
	compiled, err := s.schema(first.Schema)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.schema(again.Schema)).To(BeIdenticalTo(compiled), "the same text, another chart")
	g.Expect(s.compiled).To(HaveLen(1))

	g.Expect(s.ValidateAgainstSchema(withDependencies(), nil)).To(Succeed())
	g.Expect(s.compiled).To(HaveLen(2))
	g.Expect(s.schema(first.Schema)).To(BeIdenticalTo(compiled), "used again: the dependency's is now the oldest")
	_, err = s.schema([]byte(`{"type": "string"}`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.compiled).To(HaveLen(2))
	g.Expect(s.compiled).To(HaveKey(string(first.Schema)))
	g.Expect(s.compiled).NotTo(HaveKey(subSchema))

	_, err = s.schema([]byte(`{"type": 5}`))
	g.Expect(err).To(HaveOccurred())
	g.Expect(s.compiled).NotTo(HaveKey(`{"type": 5}`))
	g.Expect(s.compiled).To(HaveKey(string(first.Schema)))
}

// TestConcurrentUse: validations at once, of one schema and of several,
// give each the verdict it gets alone (run with -race).
func TestConcurrentUse(t *testing.T) {
	g := NewWithT(t)
	s := New(2, logr.Discard())
	charts := []*chart.Chart{nginx(t), withDependencies(), {Metadata: &chart.Metadata{Name: "plain"}, Schema: []byte(`{"required": ["x"]}`)}}
	// At most one failure an object: see lines.
	vals := []map[string]interface{}{sampleValues(t), values(t, "replicaCount: three"), values(t, "db: {size: 0}"), {}}
	want := map[string]string{}
	for i, c := range charts {
		for j, v := range vals {
			want[fmt.Sprint(i, j)] = fmt.Sprint(chartutil.ValidateAgainstSchema(c, v))
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]string{}
	for range 4 {
		for i, c := range charts {
			for j, v := range vals {
				wg.Go(func() {
					err := fmt.Sprint(s.ValidateAgainstSchema(c, v))
					mu.Lock()
					defer mu.Unlock()
					if prev, ok := got[fmt.Sprint(i, j)]; ok && prev != err {
						t.Errorf("chart %d, values %d: %q, then %q", i, j, prev, err)
					}
					got[fmt.Sprint(i, j)] = err
				})
			}
		}
	}
	wg.Wait()
	g.Expect(got).To(Equal(want))
}

// BenchmarkValidate measures the values check of one action, the full
// Nginx sample against the nginx chart: Helm's (helm: the render values,
// the schema compiled and the values validated), against ours (ours: the
// check with the schema compiled once, then Helm's render values without
// its validation); and the validation alone, Helm's and ours. Figures:
// docs/benchmarks.md.
func BenchmarkValidate(b *testing.B) {
	chrt, vals := nginx(b), sampleValues(b)
	s := New(0, logr.Discard())
	opts := chartutil.ReleaseOptions{Name: "nginx-full", Namespace: "web", Revision: 1, IsInstall: true}
	coalesced, err := chartutil.CoalesceValues(chrt, vals)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("action/helm", func(b *testing.B) {
		for b.Loop() {
			if _, err := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals, opts, nil, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("action/ours", func(b *testing.B) {
		for b.Loop() {
			if err := s.CheckValues(chrt, vals); err != nil {
				b.Fatal(err)
			}
			if _, err := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals, opts, nil, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate/helm", func(b *testing.B) {
		for b.Loop() {
			if err := chartutil.ValidateAgainstSchema(chrt, coalesced); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate/ours", func(b *testing.B) {
		for b.Loop() {
			if err := s.ValidateAgainstSchema(chrt, coalesced); err != nil {
				b.Fatal(err)
			}
		}
	})
}

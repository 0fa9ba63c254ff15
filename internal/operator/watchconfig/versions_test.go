package watchconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/acme/platform-operator/internal/operator/rollout"
)

// versionedChart creates chart name at version in a directory of its own
// under dir and returns its path.
func versionedChart(t *testing.T, dir, name, version string) string {
	t.Helper()
	parent := filepath.Join(dir, name+"-"+version)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := chartutil.Create(name, parent)
	if err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(path, "Chart.yaml")
	data, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	data = regexp.MustCompile(`(?m)^version: .*$`).ReplaceAll(data, []byte("version: "+version))
	if err := os.WriteFile(meta, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadVersions writes the watches file content and reads its chart
// versions as Load does.
func loadVersions(t *testing.T, dir, content string) ([]ChartVersions, error) {
	t.Helper()
	path := filepath.Join(dir, "watches.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ws, err := watches.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return LoadChartVersions(path, ws)
}

func TestLoadChartVersions(t *testing.T) {
	dir := t.TempDir()
	web := versionedChart(t, dir, "web", "0.2.0")
	web1 := versionedChart(t, dir, "web", "0.1.0")
	web10 := versionedChart(t, dir, "web", "0.10.0")
	other := versionedChart(t, dir, "other", "0.1.0")
	web1Again := versionedChart(t, filepath.Join(dir, "again"), "web", "0.1.0")

	t.Run("entries with and without further versions", func(t *testing.T) {
		g := NewWithT(t)
		vs, err := loadVersions(t, dir, fmt.Sprintf(`
- {group: a.com, version: v1, kind: A, chart: %s}
- group: a.com
  version: v1
  kind: B
  chart: %s
  chartVersions: [%s, %s]
`, other, web, web10, web1))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(vs).To(HaveLen(2))

		g.Expect(vs[0].Default).To(Equal("0.1.0"))
		g.Expect(vs[0].Shipped()).To(Equal([]string{"0.1.0"}))

		g.Expect(vs[1].Default).To(Equal("0.2.0"), "the entry's chart")
		g.Expect(vs[1].Shipped()).To(Equal([]string{"0.1.0", "0.2.0", "0.10.0"}), "in semantic version order")
		c, ok := vs[1].Chart("0.1.0")
		g.Expect(ok).To(BeTrue())
		g.Expect(c.Metadata.Name).To(Equal("web"))
		g.Expect(c.Metadata.Version).To(Equal("0.1.0"))
		_, ok = vs[1].Chart("0.3.0")
		g.Expect(ok).To(BeFalse())

		resolved := make([]ResolvedWatch, 2)
		SetVersions(resolved, vs, []rollout.Policy{rollout.DefaultPolicy(), {Strategy: rollout.StrategyAllAtOnce}})
		g.Expect(resolved[1].Versions.Default).To(Equal("0.2.0"))
		g.Expect(resolved[1].Rollout.Strategy).To(Equal(rollout.StrategyAllAtOnce))
	})

	for _, tc := range []struct {
		name string
		// versions is the chartVersions of entry 1 (B), whose chart is web 0.2.0.
		versions []string
		// want are parts of the error.
		want []string
	}{
		{name: "a chart of another name", versions: []string{other},
			want: []string{"entry 1 (B): chartVersions[0]: " + other + ` is chart "other", not "web": every version must be of the entry's chart`}},
		{name: "the entry's own version again", versions: []string{web},
			want: []string{"entry 1 (B): chartVersions[0]: " + web + " is version 0.2.0, which another chart of the entry already is"}},
		{name: "a version listed twice", versions: []string{web1, web1Again},
			want: []string{"entry 1 (B): chartVersions[1]: " + web1Again + " is version 0.1.0"}},
		{name: "a path without a chart", versions: []string{web1, filepath.Join(dir, "missing")},
			want: []string{"entry 1 (B): chartVersions[1]: ", "missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			list, err := json.Marshal(tc.versions)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = loadVersions(t, t.TempDir(), fmt.Sprintf(`
- {group: a.com, version: v1, kind: A, chart: %s}
- {group: a.com, version: v1, kind: B, chart: %s, chartVersions: %s}
`, other, web, list))
			g.Expect(err).To(HaveOccurred())
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

func TestCheckPin(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	vs, err := loadVersions(t, dir, fmt.Sprintf("- {group: a.com, version: v1, kind: B, chart: %s, chartVersions: [%s]}\n",
		versionedChart(t, dir, "web", "1.2.0"), versionedChart(t, dir, "web", "1.1.0")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(vs[0].CheckPin("1.1.0")).To(Succeed())
	g.Expect(vs[0].CheckPin("1.2.0")).To(Succeed())
	g.Expect(vs[0].CheckPin("1.3.0")).To(MatchError(
		`annotation platform.acme.com/chart-version: chart version "1.3.0" is not shipped by this operator; it ships 1.1.0, 1.2.0`))
	g.Expect(vs[0].CheckPin(" 1.1.0")).To(MatchError(ContainSubstring(`chart version " 1.1.0" is not shipped`)), "taken as written")
	g.Expect(vs[0].CheckPin("")).To(HaveOccurred())
}

// Versions that are not semantic versions sort after those that are, by
// text.
func TestShippedOrder(t *testing.T) {
	v := ChartVersions{Charts: map[string]*chart.Chart{}}
	for _, s := range []string{"beta", "1.0.0", "alpha", "0.9.1"} {
		v.Charts[s] = nil
	}
	NewWithT(t).Expect(v.Shipped()).To(Equal([]string{"0.9.1", "1.0.0", "alpha", "beta"}))
}

func TestLoadRollouts(t *testing.T) {
	write := func(t *testing.T, s string) string {
		p := filepath.Join(t.TempDir(), "watches.yaml")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("entries with and without", func(t *testing.T) {
		g := NewWithT(t)
		ps, err := LoadRollouts(write(t, `
- {group: a.com, version: v1, kind: A, chart: x}
- group: a.com
  version: v1
  kind: B
  chart: x
  rollout:
    waves: [2, 50%, 100%]
    maxFailures: "1"
    pause: 10m
    waveTimeout: 1h
- {group: a.com, version: v1, kind: C, chart: x, rollout: {strategy: all-at-once}}
- {group: a.com, version: v1, kind: D, chart: x, rollout: {}}
`))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ps).To(HaveLen(4))
		g.Expect(ps[0]).To(Equal(rollout.DefaultPolicy()))
		g.Expect(ps[1]).To(Equal(rollout.Policy{
			Strategy: rollout.StrategyWaves, Waves: []rollout.Step{{Count: 2}, {Percent: 50}, {Percent: 100}},
			MaxFailures: rollout.Threshold{Count: 1}, Pause: 10 * time.Minute, WaveTimeout: time.Hour,
		}))
		g.Expect(ps[2].Strategy).To(Equal(rollout.StrategyAllAtOnce))
		g.Expect(ps[3]).To(Equal(rollout.DefaultPolicy()), "an empty rollout is the default")
	})
	for _, tc := range []struct {
		name, rollout, want string
	}{
		{"unknown strategy", `{strategy: blue-green}`, `entry 1 (B): rollout: strategy: "blue-green" is not one of waves, all-at-once`},
		{"waves short of 100%", `{waves: [1, 10%]}`, "entry 1 (B): rollout: waves: the last wave is 10%"},
		{"maxFailures", `{maxFailures: "ten"}`, `entry 1 (B): rollout: maxFailures: "ten" is not a number`},
		{"pause", `{pause: 2d}`, `entry 1 (B): rollout: pause: "2d" is not a duration`},
		{"not an object", `[waves]`, "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := LoadRollouts(write(t, "- {group: a.com, version: v1, kind: A, chart: x}\n- {group: a.com, version: v1, kind: B, chart: x, rollout: "+tc.rollout+"}\n"))
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
	t.Run("no file", func(t *testing.T) {
		_, err := LoadRollouts(filepath.Join(t.TempDir(), "watches.yaml"))
		NewWithT(t).Expect(err).To(MatchError(os.ErrNotExist))
	})
}

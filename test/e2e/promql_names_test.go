package e2e

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// promqlNotMetrics are the words of PromQL that are not metric names where
// promqlMetricNames may meet them: aggregation operators, keywords, set
// operators and literals. Functions are known by the "(" that follows them.
var promqlNotMetrics = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"offset": true, "bool": true, "and": true, "or": true, "unless": true, "atan2": true,
	"start": true, "end": true, "inf": true, "nan": true,
}

var (
	// promqlStrings are quoted strings, escapes included.
	promqlStrings = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	// promqlMatchers are label matchers and range or subquery selectors
	// (strings are gone: they hold no braces or brackets any more).
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	// promqlLabelLists are the label lists of grouping and vector matching.
	promqlLabelLists = regexp.MustCompile(`(?i)\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	// grafanaVariables are dashboard variables ($job, ${kind}, [[x]]).
	grafanaVariables = regexp.MustCompile(`\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]`)
	// promqlTokens are numbers and durations (skipped) and identifiers
	// with what follows them (a "(" makes a function).
	promqlTokens = regexp.MustCompile(`[0-9][0-9A-Za-z_.]*|\.[0-9][0-9A-Za-z_]*|([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?`)
)

// promqlMetricNames returns the metric names a PromQL expression selects,
// sorted and once each. It strips strings, label matchers, range selectors,
// grouping label lists, dashboard variables, numbers and durations, then
// keeps every identifier that is not a function (followed by "("), an
// operator or a keyword. It reads metric names only where they stand
// before their matchers, not as {__name__="..."}.
func promqlMetricNames(expr string) []string {
	s := grafanaVariables.ReplaceAllString(expr, " ")
	s = promqlStrings.ReplaceAllString(s, " ")
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlLabelLists.ReplaceAllString(s, " ")
	seen := map[string]bool{}
	for _, m := range promqlTokens.FindAllStringSubmatch(s, -1) {
		name, call := m[1], m[2]
		if name == "" || call != "" || promqlNotMetrics[strings.ToLower(name)] {
			continue
		}
		seen[name] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func TestPromQLMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{expr: `up`, want: []string{"up"}},
		{expr: `helmruntime_releases{readiness="failed"} > 0`, want: []string{"helmruntime_releases"}},
		// Label lists of grouping and vector matching; a range; functions.
		{
			expr: `sum by (namespace, controller) (rate(a_total[10m])) / sum without(le) (rate(b_total[10m])) > 0.1`,
			want: []string{"a_total", "b_total"},
		},
		{
			expr: `a * on(instance) group_left(pod, node) b unless ignoring (job) c or d and bool e`,
			want: []string{"a", "b", "c", "d", "e"},
		},
		// A string that looks like a metric, braces and brackets in
		// strings, an offset, a subquery, numbers in every form.
		{
			expr: `x{job="not_a_metric", path=~"/a{1,2}[x]", q='it\'s'} unless x offset 15m or max_over_time(y[1h:5m]) > 1e3 * 0x1F + .5 + Inf`,
			want: []string{"x", "y"},
		},
		// Aggregations with their parameter; histogram_quantile.
		{
			expr: `histogram_quantile(0.99, sum by (le) (rate(lag_seconds_bucket[30m]))) > topk(3, z)`,
			want: []string{"lag_seconds_bucket", "z"},
		},
		// absent, and a grouping clause after the aggregated expression.
		{expr: `absent(up{job="a"}) or sum(w) by (kind)`, want: []string{"up", "w"}},
		// Dashboard variables in matchers, ranges and elsewhere.
		{
			expr: `sum by (kind) (increase(r_total{job=~"$job", kind=~"${kind}"}[$__rate_interval])) / $scale`,
			want: []string{"r_total"},
		},
		// Recording-rule style names with colons.
		{expr: `job:requests:rate5m > 0`, want: []string{"job:requests:rate5m"}},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			NewWithT(t).Expect(promqlMetricNames(tc.expr)).To(Equal(tc.want))
		})
	}
}

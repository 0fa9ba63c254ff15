package benchkit

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var out []time.Duration
		for _, v := range vs {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{name: "none", sorted: nil, p: 50, want: 0},
		{name: "one value is every percentile", sorted: ms(7), p: 99, want: 7 * time.Millisecond},
		{name: "p50 of 1..100 is the 50th value (nearest rank)", sorted: ms(hundred...), p: 50, want: 50 * time.Millisecond},
		{name: "p99 of 1..100 is the 99th value", sorted: ms(hundred...), p: 99, want: 99 * time.Millisecond},
		{name: "p100 is the maximum", sorted: ms(hundred...), p: 100, want: 100 * time.Millisecond},
		{name: "p50 of four values rounds the rank up: the 2nd", sorted: ms(1, 2, 3, 4), p: 50, want: 2 * time.Millisecond},
		{name: "p99 of four values is the last", sorted: ms(1, 2, 3, 4), p: 99, want: 4 * time.Millisecond},
		{name: "a tiny percentile is the first value", sorted: ms(5, 6), p: 0.1, want: 5 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Percentile(tc.sorted, tc.p)).To(Equal(tc.want))
		})
	}
}

func TestSorted(t *testing.T) {
	in := []time.Duration{3, 1, 2}
	NewWithT(t).Expect(Sorted(in)).To(Equal([]time.Duration{1, 2, 3}))
	NewWithT(t).Expect(in).To(Equal([]time.Duration{3, 1, 2})) // a copy
}

func TestSumMetric(t *testing.T) {
	text := `# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="h",method="GET"} 170
rest_client_requests_total{code="201",host="h",method="POST"} 19
rest_client_requests_total_other 5
controller_runtime_reconcile_total{controller="nginx-controller",result="success"} 12
controller_runtime_reconcile_total{controller="nginx-controller",result="error"} 1
process_cpu_seconds_total 4.5
`
	cases := []struct {
		name    string
		metric  string
		filters []string
		want    float64
	}{
		{name: "all samples of a labelled metric, not a longer name", metric: "rest_client_requests_total", want: 189},
		{name: "filtered by a label", metric: "rest_client_requests_total", filters: []string{`method="GET"`}, want: 170},
		{name: "every filter must match", metric: "controller_runtime_reconcile_total", filters: []string{`controller="nginx-controller"`, `result="success"`}, want: 12},
		{name: "an unlabelled metric", metric: "process_cpu_seconds_total", want: 4.5},
		{name: "a missing metric is 0", metric: "nope", want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(SumMetric(text, tc.metric, tc.filters...)).To(Equal(tc.want))
		})
	}
}

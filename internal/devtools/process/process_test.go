package process

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const exposition = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="nginx-controller",result="success"} 7
controller_runtime_reconcile_total{controller="nginx-controller",result="error"} 2
controller_runtime_reconcile_total{controller="webapp-controller",result="success"} 5
# HELP rest_client_requests_total Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 11
# HELP workqueue_depth Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="nginx"} 3
# HELP cronscaler_scale_lag_seconds Lag
# TYPE cronscaler_scale_lag_seconds histogram
cronscaler_scale_lag_seconds_bucket{le="0.5"} 4
cronscaler_scale_lag_seconds_bucket{le="1"} 6
cronscaler_scale_lag_seconds_bucket{le="+Inf"} 6
cronscaler_scale_lag_seconds_sum 2.5
cronscaler_scale_lag_seconds_count 6
`

func TestSum(t *testing.T) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(exposition))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cases := []struct {
		name   string
		metric string
		labels []string
		want   float64
	}{
		// Every series of a counter.
		{"all series", "controller_runtime_reconcile_total", nil, 14},
		// Only those with every label given.
		{"one label", "controller_runtime_reconcile_total", []string{"controller=nginx-controller"}, 9},
		{"two labels", "controller_runtime_reconcile_total", []string{"controller=nginx-controller", "result=error"}, 2},
		{"no match", "controller_runtime_reconcile_total", []string{"controller=none"}, 0},
		// A name that is only a prefix of another does not match it.
		{"prefix", "rest_client_requests", nil, 0},
		{"gauge", "workqueue_depth", []string{"name=nginx"}, 3},
		// Histogram series by their exposition names.
		{"bucket", "cronscaler_scale_lag_seconds_bucket", []string{"le=0.5"}, 4},
		{"bucket +Inf", "cronscaler_scale_lag_seconds_bucket", []string{"le=+Inf"}, 6},
		{"sum", "cronscaler_scale_lag_seconds_sum", nil, 2.5},
		{"count", "cronscaler_scale_lag_seconds_count", nil, 6},
		{"absent", "nothing_total", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Sum(families, tc.metric, tc.labels...)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
	quoted, err := Sum(families, "workqueue_depth", `name="nginx"`)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(quoted).To(Equal(3.0))
	_, err = Sum(families, "workqueue_depth", "nginx")
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("not key=value")))
}

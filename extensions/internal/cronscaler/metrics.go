package cronscaler

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Values of the trigger label of scalesTotal.
const (
	// triggerSchedule: the first application of a job's fire (including
	// catch-up after downtime and the first reconcile of a new CronScaler).
	triggerSchedule = "schedule"
	// triggerDrift: the count was changed outside the CronScaler and is put
	// back.
	triggerDrift = "drift"
	// triggerRestore: restoreOnDelete on deletion.
	triggerRestore = "restore"
)

var (
	// scalesTotal counts writes of a target's replica count by result
	// (success, error) and trigger.
	scalesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cronscaler_scales_total",
		Help: "Replica count changes made by CronScalers, by result (success, error) and trigger (schedule, drift, restore).",
	}, []string{"result", "trigger"})

	// scaleLag is the delay between a job's scheduled fire time and the
	// moment its replica count was in place on the target.
	scaleLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "cronscaler_scale_lag_seconds",
		Help:    "Seconds from a job's scheduled fire time to the target having its replica count. Fires before the CronScaler existed are not observed.",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600},
	})
)

func init() {
	metrics.Registry.MustRegister(scalesTotal, scaleLag)
}

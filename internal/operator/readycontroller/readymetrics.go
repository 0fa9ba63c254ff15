package readycontroller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acme/platform-operator/internal/operator/readiness"
)

// Values of the readiness label of helmruntime_releases.
const (
	releasesReady    = "ready"
	releasesNotReady = "not_ready"
	releasesFailed   = "failed"
)

var releasesDesc = prometheus.NewDesc(
	"helmruntime_releases",
	"Releases of this process's shard by kind and readiness: ready (Ready=True), failed (Ready=False with reason Failed or ReleaseFailed) or not_ready (any other Ready, paused included). Only the leader counts; other replicas report nothing.",
	[]string{"kind", "readiness"}, nil)

// States is the collector of helmruntime_releases: it counts, when
// scraped, the Ready conditions the kinds' trackers last read or wrote.
// It outlives the managers; each new manager's trackers replace the
// previous ones.
type States struct {
	mu       sync.Mutex
	trackers map[string]*Tracker
}

func NewStates() *States { return &States{trackers: map[string]*Tracker{}} }

func (s *States) Track(kind string, t *Tracker) {
	s.mu.Lock()
	s.trackers[kind] = t
	s.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (s *States) Describe(ch chan<- *prometheus.Desc) { ch <- releasesDesc }

// Collect implements prometheus.Collector.
func (s *States) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	trackers := make(map[string]*Tracker, len(s.trackers))
	for k, t := range s.trackers {
		trackers[k] = t
	}
	s.mu.Unlock()
	for kind, t := range trackers {
		counts := map[string]int{releasesReady: 0, releasesNotReady: 0, releasesFailed: 0}
		t.mu.Lock()
		for _, e := range t.entries {
			if e.held.known() {
				counts[e.held.readiness]++
			}
		}
		t.mu.Unlock()
		for r, n := range counts {
			ch <- prometheus.MustNewConstMetric(releasesDesc, prometheus.GaugeValue, float64(n), kind, r)
		}
	}
}

// readinessOf classifies a status by its Ready condition.
func readinessOf(st map[string]any) string {
	c := findCondition(st, ConditionReady)
	switch {
	case c == nil:
		return releasesNotReady
	case c["status"] == string(metav1.ConditionTrue):
		return releasesReady
	case c["reason"] == readiness.ReasonFailed || c["reason"] == readiness.ReasonReleaseFailed:
		return releasesFailed
	}
	return releasesNotReady
}

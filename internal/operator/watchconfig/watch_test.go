package watchconfig

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/acme/platform-operator/internal/operator/rollout"
)

func TestResolveWatch(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "test.acme.com", Version: "v1", Kind: "Widget"}
	chrt := &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "0.1.0"}}
	defaults := WatchDefaults{ReconcilePeriod: time.Minute, MaxConcurrentReconciles: 4, MaxReleaseHistory: 10}
	base := func() watches.Watch {
		return watches.Watch{GroupVersionKind: gvk, ChartPath: "charts/app", Chart: chrt}
	}
	// want builds the expected result from the defaults plus edits.
	want := func(edit func(*ResolvedWatch)) ResolvedWatch {
		rw := ResolvedWatch{
			GVK:                     gvk,
			ChartPath:               "charts/app",
			Chart:                   chrt,
			WatchDependentResources: true,
			ReconcilePeriod:         time.Minute,
			MaxConcurrentReconciles: 4,
			MaxReleaseHistory:       10,
		}
		if edit != nil {
			edit(&rw)
		}
		return rw
	}

	tests := []struct {
		name    string
		edit    func(*watches.Watch)
		want    ResolvedWatch
		wantErr string
	}{{
		// Nothing set: dependent watches on, operator-wide period,
		// parallelism and history, no overrides, match-all selector.
		name: "all defaults",
		want: want(nil),
	}, {
		// watchDependentResources: false turns dependent watches off (the
		// library option is SkipDependentWatches, i.e. the inverse).
		name: "watchDependentResources false",
		edit: func(w *watches.Watch) { w.WatchDependentResources = ptr.To(false) },
		want: want(func(rw *ResolvedWatch) { rw.WatchDependentResources = false }),
	}, {
		// An explicit true is the same as the default.
		name: "watchDependentResources true",
		edit: func(w *watches.Watch) { w.WatchDependentResources = ptr.To(true) },
		want: want(nil),
	}, {
		// reconcilePeriod replaces --reconcile-period for this kind.
		name: "reconcilePeriod",
		edit: func(w *watches.Watch) { w.ReconcilePeriod = &metav1.Duration{Duration: 5 * time.Second} },
		want: want(func(rw *ResolvedWatch) { rw.ReconcilePeriod = 5 * time.Second }),
	}, {
		// An explicit zero period disables periodic resyncs for this kind.
		name: "reconcilePeriod zero",
		edit: func(w *watches.Watch) { w.ReconcilePeriod = &metav1.Duration{} },
		want: want(func(rw *ResolvedWatch) { rw.ReconcilePeriod = 0 }),
	}, {
		// maxConcurrentReconciles replaces --max-concurrent-reconciles.
		name: "maxConcurrentReconciles",
		edit: func(w *watches.Watch) { w.MaxConcurrentReconciles = ptr.To(9) },
		want: want(func(rw *ResolvedWatch) { rw.MaxConcurrentReconciles = 9 }),
	}, {
		// overrideValues are passed through (already env-expanded by Load).
		name: "overrideValues",
		edit: func(w *watches.Watch) { w.OverrideValues = map[string]string{"image.tag": "1.2.3"} },
		want: want(func(rw *ResolvedWatch) { rw.OverrideValues = map[string]string{"image.tag": "1.2.3"} }),
	}, {
		// selector is passed through.
		name: "selector",
		edit: func(w *watches.Watch) {
			w.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
		},
		want: want(func(rw *ResolvedWatch) {
			rw.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
		}),
	}, {
		name:    "missing chart",
		edit:    func(w *watches.Watch) { w.Chart = nil },
		wantErr: `chart "charts/app" is not loaded`,
	}, {
		name:    "missing kind",
		edit:    func(w *watches.Watch) { w.Kind = "" },
		wantErr: "version and kind must be set",
	}, {
		name:    "negative reconcilePeriod",
		edit:    func(w *watches.Watch) { w.ReconcilePeriod = &metav1.Duration{Duration: -time.Second} },
		wantErr: "reconcilePeriod must not be negative",
	}, {
		name:    "zero maxConcurrentReconciles",
		edit:    func(w *watches.Watch) { w.MaxConcurrentReconciles = ptr.To(0) },
		wantErr: "maxConcurrentReconciles must be at least 1",
	}, {
		name: "invalid selector",
		edit: func(w *watches.Watch) {
			w.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "tier", Operator: "Near", Values: []string{"gold"},
			}}}
		},
		wantErr: "invalid selector",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := base()
			if tc.edit != nil {
				tc.edit(&w)
			}
			got, err := Resolve(w, defaults)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			want := tc.want
			want.Remediation = DefaultRemediation()
			want.Rollout = rollout.DefaultPolicy()
			want.Versions = ChartVersions{Default: chrt.Metadata.Version, Charts: map[string]*chart.Chart{chrt.Metadata.Version: chrt}}
			g.Expect(got).To(Equal(want))
		})
	}
}

func TestResolveWatchDoesNotAlias(t *testing.T) {
	g := NewWithT(t)
	w := watches.Watch{
		GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Widget"},
		Chart:            &chart.Chart{Metadata: &chart.Metadata{Name: "app"}},
		OverrideValues:   map[string]string{"a": "1"},
		Selector:         &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}},
	}
	rw, err := Resolve(w, WatchDefaults{MaxConcurrentReconciles: 1})
	g.Expect(err).NotTo(HaveOccurred())
	w.OverrideValues["a"] = "2"
	w.Selector.MatchLabels["x"] = "z"
	g.Expect(rw.OverrideValues).To(HaveKeyWithValue("a", "1"))
	g.Expect(rw.Selector.MatchLabels).To(HaveKeyWithValue("x", "y"))
}

package helmruntime

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WatchDefaults holds the operator-wide settings a watches.yaml entry falls
// back to when it does not set its own.
type WatchDefaults struct {
	// ReconcilePeriod is used when the entry has no reconcilePeriod.
	ReconcilePeriod time.Duration
	// MaxConcurrentReconciles is used when the entry has no
	// maxConcurrentReconciles.
	MaxConcurrentReconciles int
	// MaxReleaseHistory has no per-entry field; it applies to every entry.
	MaxReleaseHistory int
}

// WatchDefaults returns the per-watch fallbacks carried by the options.
func (o *Options) WatchDefaults() WatchDefaults {
	return WatchDefaults{
		ReconcilePeriod:         o.ReconcilePeriod,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		MaxReleaseHistory:       o.MaxReleaseHistory,
	}
}

// ResolvedWatch is one watches.yaml entry with every default applied: the
// exact settings its controller runs with.
type ResolvedWatch struct {
	// GVK is the custom resource kind reconciled by the entry.
	GVK schema.GroupVersionKind
	// ChartPath is the chart path as written in the watches file.
	ChartPath string
	// Chart is the loaded chart.
	Chart *chart.Chart
	// WatchDependentResources reports whether the objects a release renders
	// are watched, so that drift or deletion triggers a reconcile at once.
	WatchDependentResources bool
	// ReconcilePeriod is the resync period; 0 disables periodic resyncs.
	ReconcilePeriod time.Duration
	// MaxConcurrentReconciles is the number of parallel reconciles.
	MaxConcurrentReconciles int
	// MaxReleaseHistory is the number of release revisions kept; 0 keeps all.
	MaxReleaseHistory int
	// OverrideValues are chart values forced by the operator ("a.b.c": value).
	OverrideValues map[string]string
	// Selector restricts reconciliation to custom resources whose labels match;
	// the empty selector matches everything.
	Selector metav1.LabelSelector
}

// ResolveWatch applies defaults to one watches.yaml entry. An explicit value
// in the entry always wins, even when it is the zero value (for instance
// "reconcilePeriod: 0s" disables periodic resyncs for that kind).
func ResolveWatch(w watches.Watch, d WatchDefaults) (ResolvedWatch, error) {
	rw := ResolvedWatch{
		GVK:                     w.GroupVersionKind,
		ChartPath:               w.ChartPath,
		Chart:                   w.Chart,
		WatchDependentResources: true,
		ReconcilePeriod:         d.ReconcilePeriod,
		MaxConcurrentReconciles: d.MaxConcurrentReconciles,
		MaxReleaseHistory:       d.MaxReleaseHistory,
		OverrideValues:          maps.Clone(w.OverrideValues),
	}
	if w.WatchDependentResources != nil {
		rw.WatchDependentResources = *w.WatchDependentResources
	}
	if w.ReconcilePeriod != nil {
		rw.ReconcilePeriod = w.ReconcilePeriod.Duration
	}
	if w.MaxConcurrentReconciles != nil {
		rw.MaxConcurrentReconciles = *w.MaxConcurrentReconciles
	}
	if w.Selector != nil {
		rw.Selector = *w.Selector.DeepCopy()
	}

	var errs []error
	if rw.GVK.Version == "" || rw.GVK.Kind == "" {
		errs = append(errs, fmt.Errorf("version and kind must be set, got %q", rw.GVK.String()))
	}
	if rw.Chart == nil {
		errs = append(errs, fmt.Errorf("chart %q is not loaded", rw.ChartPath))
	}
	if rw.ReconcilePeriod < 0 {
		errs = append(errs, fmt.Errorf("reconcilePeriod must not be negative, got %s", rw.ReconcilePeriod))
	}
	if rw.MaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("maxConcurrentReconciles must be at least 1, got %d", rw.MaxConcurrentReconciles))
	}
	if rw.MaxReleaseHistory < 0 {
		errs = append(errs, fmt.Errorf("max release history must not be negative, got %d", rw.MaxReleaseHistory))
	}
	if _, err := metav1.LabelSelectorAsSelector(&rw.Selector); err != nil {
		errs = append(errs, fmt.Errorf("invalid selector: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return ResolvedWatch{}, fmt.Errorf("watch %s: %w", w.GroupVersionKind, err)
	}
	return rw, nil
}

// ResolveWatches resolves every entry of a watches file; see [ResolveWatch].
func ResolveWatches(ws []watches.Watch, d WatchDefaults) ([]ResolvedWatch, error) {
	out := make([]ResolvedWatch, 0, len(ws))
	for _, w := range ws {
		rw, err := ResolveWatch(w, d)
		if err != nil {
			return nil, err
		}
		out = append(out, rw)
	}
	return out, nil
}

package watchconfig

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"time"

	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/postrender"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/rollout"
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
	// Drift is the entry's drift policy (LoadDrift reads it).
	Drift Drift
	// ImageDefaults are the images of the chart's image blocks that a
	// resource leaves unset (LoadImageDefaults reads them).
	ImageDefaults []release.ImageDefault
	// Confinement is what the kind's releases may place outside their
	// resource's namespace (LoadConfinement reads it).
	Confinement release.Confinement
	// Remediation is what happens to a revision that does not become
	// Ready in time (LoadRemediation reads it).
	Remediation Remediation
	// ServiceAccountName, when set, is the ServiceAccount of each
	// release's namespace the runtime acts as for the kind's releases
	// (LoadServiceAccountNames reads it).
	ServiceAccountName string
	// PostRender applies the kind's post-render patches to what its chart
	// renders (LoadPostRender reads them); nil changes nothing.
	PostRender *postrender.Renderer
	// CRDs is what happens to the CRDs in the chart's crds/ directories
	// (LoadCRDPolicies reads it); "" is CRDsCreate.
	CRDs CRDPolicy
	// Versions are the chart versions the kind ships, Chart's the default
	// (LoadChartVersions reads them).
	Versions ChartVersions
	// Rollout is how the kind's releases move to a new default chart
	// version (LoadRollouts reads it).
	Rollout rollout.Policy
}

// ResolveWatch applies defaults to one watches.yaml entry. An explicit value
// in the entry always wins, even when it is the zero value (for instance
// "reconcilePeriod: 0s" disables periodic resyncs for that kind).
func Resolve(w watches.Watch, d WatchDefaults) (ResolvedWatch, error) {
	rw := ResolvedWatch{
		GVK:                     w.GroupVersionKind,
		ChartPath:               w.ChartPath,
		Chart:                   w.Chart,
		WatchDependentResources: true,
		ReconcilePeriod:         d.ReconcilePeriod,
		MaxConcurrentReconciles: d.MaxConcurrentReconciles,
		MaxReleaseHistory:       d.MaxReleaseHistory,
		OverrideValues:          maps.Clone(w.OverrideValues),
		Remediation:             DefaultRemediation(),
		Rollout:                 rollout.DefaultPolicy(),
	}
	if w.Chart != nil && w.Chart.Metadata != nil {
		rw.Versions = ChartVersions{Default: w.Chart.Metadata.Version, Charts: map[string]*chart.Chart{w.Chart.Metadata.Version: w.Chart}}
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
	errs = append(errs, CheckSettings(WatchDefaults{
		ReconcilePeriod:         rw.ReconcilePeriod,
		MaxConcurrentReconciles: rw.MaxConcurrentReconciles,
		MaxReleaseHistory:       rw.MaxReleaseHistory,
	}, WatchFieldNames)...)
	if _, err := metav1.LabelSelectorAsSelector(&rw.Selector); err != nil {
		errs = append(errs, fmt.Errorf("invalid selector: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return ResolvedWatch{}, fmt.Errorf("watch %s: %w", w.GroupVersionKind, err)
	}
	return rw, nil
}

// ResolveWatches resolves every entry of a watches file; see [Resolve].
func ResolveAll(ws []watches.Watch, d WatchDefaults) ([]ResolvedWatch, error) {
	out := make([]ResolvedWatch, 0, len(ws))
	for _, w := range ws {
		rw, err := Resolve(w, d)
		if err != nil {
			return nil, err
		}
		out = append(out, rw)
	}
	return out, nil
}

// DefaultMaxConcurrentReconciles is the default parallelism per kind: four
// reconciles per CPU. A Helm reconcile spends most of its time waiting for
// the API server (existence checks, creates, release records, status), so
// one per CPU leaves both idle; docs/benchmarks.md has the measurements.
func DefaultMaxConcurrentReconciles() int {
	return 4 * runtime.NumCPU()
}

// Defaults are the fallbacks of an operator started without flags.
func Defaults() WatchDefaults {
	return WatchDefaults{
		ReconcilePeriod:         DefaultReconcilePeriod,
		MaxConcurrentReconciles: DefaultMaxConcurrentReconciles(),
		MaxReleaseHistory:       DefaultMaxReleaseHistory,
	}
}

// SettingNames are how a user spells the per-kind settings where they are
// set: watches.yaml fields or flags.
type SettingNames struct {
	ReconcilePeriod, MaxConcurrentReconciles, MaxReleaseHistory string
}

// WatchFieldNames name the settings of a watches.yaml entry (the release
// history has no field of its own: it comes from the flag).
var WatchFieldNames = SettingNames{
	ReconcilePeriod:         "reconcilePeriod",
	MaxConcurrentReconciles: "maxConcurrentReconciles",
	MaxReleaseHistory:       "max release history",
}

// CheckSettings returns what is wrong with the per-kind settings s, each
// named as names say.
func CheckSettings(s WatchDefaults, names SettingNames) []error {
	var errs []error
	if s.ReconcilePeriod < 0 {
		errs = append(errs, fmt.Errorf("%s must not be negative, got %s", names.ReconcilePeriod, s.ReconcilePeriod))
	}
	if s.MaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", names.MaxConcurrentReconciles, s.MaxConcurrentReconciles))
	}
	if s.MaxReleaseHistory < 0 {
		errs = append(errs, fmt.Errorf("%s must not be negative, got %d", names.MaxReleaseHistory, s.MaxReleaseHistory))
	}
	return errs
}

// Values returns the inputs of the watch's chart values besides a spec:
// its chart, override values, image defaults and the values the chart
// declares as generated. The runtime and the admission check compute a
// release's values from it alike.
func (rw ResolvedWatch) Values() (release.Values, error) {
	gvs, err := manifest.CompileGeneratedValues(rw.Chart)
	if err != nil {
		return release.Values{}, fmt.Errorf("generated values of %s: %w", rw.ChartPath, err)
	}
	return release.Values{Chart: rw.Chart, Overrides: rw.OverrideValues, Images: rw.ImageDefaults, Generated: gvs}, nil
}

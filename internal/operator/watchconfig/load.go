package watchconfig

import (
	"fmt"

	"github.com/operator-framework/helm-operator-plugins/pkg/watches"

	"github.com/acme/platform-operator/internal/operator/postrender"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/rollout"
)

// File is a watches file as both processes read it: the library's entries
// and, in the same order, each field this operator adds to an entry.
type File struct {
	// Watches are the library's entries (watches.Load).
	Watches []watches.Watch
	// Drifts are the drift policies (LoadDrift).
	Drifts []Drift
	// Images are the image defaults (LoadImageDefaults).
	Images [][]release.ImageDefault
	// Confinements are the allowances (LoadConfinement).
	Confinements []release.Confinement
	// Remediations are the remediations (LoadRemediation).
	Remediations []Remediation
	// ServiceAccounts are the identities of the releases, "" for the
	// operator's own (LoadServiceAccountNames).
	ServiceAccounts []string
	// CRDPolicies are what happens to the charts' crds/ (LoadCRDPolicies).
	CRDPolicies []CRDPolicy
	// PostRenders are the post-render patches (LoadPostRender).
	PostRenders []*postrender.Renderer
	// Versions are the chart versions each entry ships (LoadChartVersions).
	Versions []ChartVersions
	// Rollouts are the rollout policies (LoadRollouts).
	Rollouts []rollout.Policy
	// Ignored name what the file sets that neither reads (IgnoredFields).
	Ignored []string
}

// Load reads the watches file at path, every field of every entry, with
// image defaults expanded from env. A field that is wrong in any entry
// fails the whole file: both processes refuse to start on it alike.
func Load(path string, env Env) (File, error) {
	var f File
	var err error
	wrap := func(err error) (File, error) {
		return File{}, fmt.Errorf("load watches file %q: %w", path, err)
	}
	if f.Watches, err = watches.Load(path); err != nil {
		return wrap(err)
	}
	if f.Drifts, err = LoadDrift(path); err != nil {
		return wrap(err)
	}
	if f.Images, err = LoadImageDefaults(path, env); err != nil {
		return wrap(err)
	}
	if f.Confinements, err = LoadConfinement(path); err != nil {
		return wrap(err)
	}
	if f.Remediations, err = LoadRemediation(path); err != nil {
		return wrap(err)
	}
	if f.ServiceAccounts, err = LoadServiceAccountNames(path); err != nil {
		return wrap(err)
	}
	if f.CRDPolicies, err = LoadCRDPolicies(path); err != nil {
		return wrap(err)
	}
	if f.PostRenders, err = LoadPostRender(path); err != nil {
		return wrap(err)
	}
	if f.Versions, err = LoadChartVersions(path, f.Watches); err != nil {
		return wrap(err)
	}
	if f.Rollouts, err = LoadRollouts(path); err != nil {
		return wrap(err)
	}
	if f.Ignored, err = IgnoredFields(path); err != nil {
		return wrap(err)
	}
	return f, nil
}

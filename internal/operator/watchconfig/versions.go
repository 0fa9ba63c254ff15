package watchconfig

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/rollout"
)

// Chart versions side by side, and how releases move between them.
//
// An entry's chart is the kind's default version: new resources install
// it, and a rollout moves the others to it (rollout). chartVersions names
// further versions of the same chart that the operator ships, each a chart
// directory: a resource may pin one (rollout.PinAnnotation), and a release
// that runs one and has not moved yet keeps rendering with it.

// ChartVersions are the versions of a kind's chart the operator ships.
type ChartVersions struct {
	// Default is the version of the entry's chart.
	Default string
	// Charts are the shipped charts by version, the default's included.
	Charts map[string]*chart.Chart
}

// Chart returns the shipped chart of version.
func (v ChartVersions) Chart(version string) (*chart.Chart, bool) {
	c, ok := v.Charts[version]
	return c, ok
}

// Shipped lists the shipped versions, lowest first.
func (v ChartVersions) Shipped() []string {
	out := make([]string, 0, len(v.Charts))
	for k := range v.Charts {
		out = append(out, k)
	}
	slices.SortFunc(out, compareVersions)
	return out
}

// CheckPin returns an error naming the shipped versions when version is
// not one of them.
func (v ChartVersions) CheckPin(version string) error {
	if _, ok := v.Charts[strings.TrimSpace(version)]; ok && strings.TrimSpace(version) == version {
		return nil
	}
	return fmt.Errorf("annotation %s: chart version %q is not shipped by this operator; it ships %s", rollout.PinAnnotation, version, strings.Join(v.Shipped(), ", "))
}

// compareVersions orders chart versions as semantic versions, and
// versions that are not as text after them.
func compareVersions(a, b string) int {
	va, ea := semver.NewVersion(a)
	vb, eb := semver.NewVersion(b)
	switch {
	case ea == nil && eb == nil:
		return va.Compare(vb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// entryVersions is what LoadChartVersions and LoadRollouts read of an entry.
type entryVersions struct {
	Kind          string         `json:"kind"`
	ChartVersions []string       `json:"chartVersions"`
	Rollout       *rollout.Field `json:"rollout"`
}

func readEntryVersions(path string) ([]entryVersions, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []entryVersions
	if err := yaml.Unmarshal(b, &entries); err != nil {
		return nil, err
	}
	return entries, nil
}

// LoadChartVersions reads the chartVersions of every entry of the watches
// file at path, ws being its entries as watches.Load read them: each path
// a chart of the same name as the entry's chart and of a version of its
// own. A chart that does not load, or repeats a version, is an error
// naming the entry.
func LoadChartVersions(path string, ws []watches.Watch) ([]ChartVersions, error) {
	entries, err := readEntryVersions(path)
	if err != nil {
		return nil, err
	}
	out := make([]ChartVersions, len(ws))
	for i, w := range ws {
		if w.Chart == nil || w.Chart.Metadata == nil {
			continue
		}
		cv := ChartVersions{Default: w.Chart.Metadata.Version, Charts: map[string]*chart.Chart{w.Chart.Metadata.Version: w.Chart}}
		if i < len(entries) {
			for j, p := range entries[i].ChartVersions {
				c, err := loader.Load(p)
				if err != nil {
					return nil, fmt.Errorf("entry %d (%s): chartVersions[%d]: %w", i, entries[i].Kind, j, err)
				}
				if c.Metadata.Name != w.Chart.Metadata.Name {
					return nil, fmt.Errorf("entry %d (%s): chartVersions[%d]: %s is chart %q, not %q: every version must be of the entry's chart", i, entries[i].Kind, j, p, c.Metadata.Name, w.Chart.Metadata.Name)
				}
				if _, dup := cv.Charts[c.Metadata.Version]; dup {
					return nil, fmt.Errorf("entry %d (%s): chartVersions[%d]: %s is version %s, which another chart of the entry already is", i, entries[i].Kind, j, p, c.Metadata.Version)
				}
				cv.Charts[c.Metadata.Version] = c
			}
		}
		out[i] = cv
	}
	return out, nil
}

// LoadRollouts reads the rollout field of every entry of the watches file
// at path; an entry without one gets rollout.DefaultPolicy. A field that
// does not parse is an error naming the entry.
func LoadRollouts(path string) ([]rollout.Policy, error) {
	entries, err := readEntryVersions(path)
	if err != nil {
		return nil, err
	}
	out := make([]rollout.Policy, len(entries))
	for i, e := range entries {
		if e.Rollout == nil {
			out[i] = rollout.DefaultPolicy()
			continue
		}
		p, err := e.Rollout.Parse()
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s): rollout: %w", i, e.Kind, err)
		}
		out[i] = p
	}
	return out, nil
}

// SetVersions gives each resolved watch its chart versions and rollout
// policy.
func SetVersions(resolved []ResolvedWatch, versions []ChartVersions, policies []rollout.Policy) {
	for i := range resolved {
		if i < len(versions) {
			resolved[i].Versions = versions[i]
		}
		if i < len(policies) {
			resolved[i].Rollout = policies[i]
		}
	}
}

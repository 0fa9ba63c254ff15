package watchconfig

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/release"
)

// The library loads watches.yaml (watches.Load) and ignores what it does
// not know. What this operator adds to an entry is read here, and what
// neither reads is reported, never silently dropped.

// LoadDrift reads the drift field of every entry of the watches file at
// path, in the order of the entries. The library's loader, which reads
// the other fields, ignores it.
func LoadDrift(path string) ([]Drift, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []struct {
		Drift Drift `json:"drift"`
	}
	if err := yaml.Unmarshal(b, &entries); err != nil {
		return nil, err
	}
	out := make([]Drift, len(entries))
	for i, e := range entries {
		if err := e.Drift.Validate(); err != nil {
			return nil, fmt.Errorf("entry %d: drift: %w", i, err)
		}
		e.Drift.Mode, _ = ParseDriftMode(string(e.Drift.Mode))
		out[i] = e.Drift
	}
	return out, nil
}

// LoadImageDefaults reads the imageDefaults field of every entry of the
// watches file at path, in the order of the entries: for each image block
// of the chart's values ("image", "metrics.image"), the image a resource
// that leaves the block unset runs. Values are expanded from env as
// overrideValues are ("$RELATED_IMAGE_NGINX"); a block whose value expands
// to nothing keeps the chart's default image. A value that is not an
// image reference pinned by tag or digest is an error.
func LoadImageDefaults(path string, env Env) ([][]release.ImageDefault, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []struct {
		Kind          string            `json:"kind"`
		ImageDefaults map[string]string `json:"imageDefaults"`
	}
	if err := yaml.Unmarshal(b, &entries); err != nil {
		return nil, err
	}
	out := make([][]release.ImageDefault, len(entries))
	for i, e := range entries {
		paths := slices.Sorted(maps.Keys(e.ImageDefaults))
		for _, p := range paths {
			if p == "" || slices.Contains(strings.Split(p, "."), "") {
				return nil, fmt.Errorf("entry %d (%s): imageDefaults: %q is not a values path such as image or metrics.image", i, e.Kind, p)
			}
			raw := e.ImageDefaults[p]
			ref := os.Expand(raw, env.Getenv)
			if ref == "" {
				continue
			}
			img, err := release.ParseImage(ref)
			if err != nil {
				return nil, fmt.Errorf("entry %d (%s): imageDefaults %s: %s: %w", i, e.Kind, p, raw, err)
			}
			out[i] = append(out[i], release.ImageDefault{Path: p, Image: img})
		}
	}
	return out, nil
}

// SetImageDefaults gives each resolved watch the image defaults of its
// entry (LoadImageDefaults), after checking that each names an image block
// of the watch's chart.
func SetImageDefaults(resolved []ResolvedWatch, defaults [][]release.ImageDefault) error {
	for i := range resolved {
		if i >= len(defaults) {
			break
		}
		if err := release.CheckImageDefaults(resolved[i].Chart, defaults[i]); err != nil {
			return fmt.Errorf("watch %s: imageDefaults: %w", resolved[i].GVK, err)
		}
		resolved[i].ImageDefaults = defaults[i]
	}
	return nil
}

// knownFields are the fields of a watches.yaml entry this operator reads:
// the library's, and drift, imageDefaults, confinement, remediation and
// serviceAccountName, crds, postRender, chartVersions and rollout.
var knownFields = map[string]bool{
	"group": true, "version": true, "kind": true, "chart": true,
	"watchDependentResources": true, "overrideValues": true, "reconcilePeriod": true,
	"maxConcurrentReconciles": true, "selector": true, "drift": true, "imageDefaults": true,
	"confinement": true, "remediation": true, "serviceAccountName": true, "crds": true,
	"postRender": true, "chartVersions": true, "rollout": true,
}

// IgnoredFields names the fields of the entries of the watches file at path
// that this operator does not read, with why when it knows the field
// (operator-sdk's dryRunOption), one message per field.
func IgnoredFields(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []map[string]any
	if err := yaml.Unmarshal(b, &entries); err != nil {
		return nil, err
	}
	var out []string
	for i, e := range entries {
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if knownFields[k] {
				continue
			}
			msg := fmt.Sprintf("entry %d (%v): field %q is not read by this operator", i, e["kind"], k)
			if k == "dryRunOption" {
				msg += "; the dry-run upgrade that decides whether a release changed always runs on the API server (operator-sdk's \"server\")"
			}
			out = append(out, msg)
		}
	}
	return out, nil
}

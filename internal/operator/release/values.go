package release

import (
	"fmt"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// Values are the inputs of a kind's chart values besides a resource's
// spec: its chart, the override values and image defaults of its watch,
// and the values the chart declares as generated.
type Values struct {
	Chart     *chart.Chart
	Overrides map[string]string
	Images    []ImageDefault
	Generated []manifest.CompiledValue
}

// Fill returns the value of a generated value the spec leaves empty.
type Fill func(manifest.CompiledValue) (string, error)

// Compute returns the values a release of spec is rendered with: the
// chart's defaults under what Translate returns for spec. The admission
// check calls it; the runtime's values translator calls Translate, and
// the library's reconciler does the first and last steps around it (see
// Translate), so both render with one chain of steps.
func (v Values) Compute(spec map[string]interface{}, fill Fill, read ReadSource) (chartutil.Values, error) {
	vals, err := v.Translate(spec, fill, read)
	if err != nil {
		return nil, err
	}
	return chartutil.CoalesceValues(v.Chart, vals)
}

// Translate returns the values of spec before the chart's defaults, on a
// copy of spec, in four steps:
//
//  0. the values of the Secret and ConfigMap keys that spec.valuesFrom
//     names, read through read, are merged over the spec's in order, and
//     valuesFrom itself is removed
//     (ApplyValuesFrom; read may be nil for a spec without valuesFrom);
//  1. the override values are set (ApplyOverrides);
//  2. every generated value the spec leaves empty is filled by fill
//     (FillGenerated; the runtime fills from the stored release, a kept
//     Secret or crypto/rand, the admission check with placeholders);
//  3. every image block the spec leaves unset gets the operator's
//     default image (ApplyImageDefaults).
//
// A spec of nil is an empty one. The library's reconciler sets the
// override values on the custom resource before it calls the runtime's
// translator, and coalesces what the translator returns with the chart's
// defaults: setting the same overrides again changes nothing, so the
// reconciler's values are Compute's.
func (v Values) Translate(spec map[string]interface{}, fill Fill, read ReadSource) (map[string]interface{}, error) {
	vals, _, err := v.TranslateNoting(spec, fill, read)
	return vals, err
}

// TranslateNoting is Translate, which also returns the paths of the image
// blocks that took the operator's default image.
func (v Values) TranslateNoting(spec map[string]interface{}, fill Fill, read ReadSource) (map[string]interface{}, []string, error) {
	vals := runtime.DeepCopyJSON(spec)
	if vals == nil {
		vals = map[string]interface{}{}
	}
	vals, err := ApplyValuesFrom(vals, read)
	if err != nil {
		return nil, nil, err
	}
	if err := ApplyOverrides(vals, v.Overrides); err != nil {
		return nil, nil, err
	}
	if err := FillGenerated(vals, v.Generated, fill); err != nil {
		return nil, nil, err
	}
	defaulted, err := ApplyImageDefaults(vals, v.Images)
	if err != nil {
		return nil, nil, err
	}
	return vals, defaulted, nil
}

// ApplyOverrides sets the override values ("a.b.c": value, environment
// variables expanded) on vals, as the library does.
func ApplyOverrides(vals map[string]interface{}, overrides map[string]string) error {
	for key, value := range overrides {
		if err := strvals.ParseInto(key+"="+os.ExpandEnv(value), vals); err != nil {
			return fmt.Errorf("override value %s: %w", key, err)
		}
	}
	return nil
}

// FillGenerated sets every value of generated that vals leave empty to
// what fill returns.
func FillGenerated(vals map[string]interface{}, generated []manifest.CompiledValue, fill Fill) error {
	for _, gv := range missing(vals, generated) {
		value, err := fill(gv)
		if err != nil {
			return err
		}
		if err := setNestedString(vals, gv.Segments, value); err != nil {
			return fmt.Errorf("set generated value %s: %w", gv.Path, err)
		}
	}
	return nil
}

// missing returns the generated values that vals leave empty.
func missing(vals map[string]interface{}, generated []manifest.CompiledValue) []manifest.CompiledValue {
	var missing []manifest.CompiledValue
	for _, gv := range generated {
		if s, _ := NestedString(vals, gv.Segments); s == "" {
			missing = append(missing, gv)
		}
	}
	return missing
}

// Placeholder fills a generated value with a placeholder of its declared
// length, for a render whose output nobody keeps (the admission check):
// no generated value can then appear in an answer.
func Placeholder(gv manifest.CompiledValue) (string, error) {
	return strings.Repeat("x", gv.Length), nil
}

// NestedString returns the string at path in m; "" and false when a step
// is missing or not a map, or the leaf is not a string.
func NestedString(m map[string]interface{}, path []string) (string, bool) {
	var cur interface{} = m
	for _, p := range path {
		mm, ok := cur.(map[string]interface{})
		if !ok {
			return "", false
		}
		if cur, ok = mm[p]; !ok {
			return "", false
		}
	}
	s, ok := cur.(string)
	return s, ok
}

// setNestedString sets the string at path in m, creating missing maps.
func setNestedString(m map[string]interface{}, path []string, value string) error {
	cur := m
	for i, p := range path[:len(path)-1] {
		next, ok := cur[p]
		if !ok || next == nil {
			nm := map[string]interface{}{}
			cur[p] = nm
			cur = nm
			continue
		}
		if cur, ok = next.(map[string]interface{}); !ok {
			return fmt.Errorf("%s is not a map", strings.Join(path[:i+1], "."))
		}
	}
	cur[path[len(path)-1]] = value
	return nil
}

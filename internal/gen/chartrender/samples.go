// Samples: a chart-backed kind's chart rendered the ways we know
// it is used: with the spec of every sample resource of the kind in
// config/samples, and with every values file in the chart's ci/ directory.
// What those renders contain is what the generators derive from: the
// ClusterServiceVersion's "resources created" (internal/gen/csvgen) and the
// runtime's RBAC rules (internal/gen/rbacgen).

package chartrender

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// SampleRender is one render of a chart and the values it came from.
type SampleRender struct {
	// From names the values: "sample <file>/<name>" or "ci/<file>".
	From   string
	Result *Result
	// Namespace is the namespace the chart was rendered for: the
	// sample's, or DefaultNamespace.
	Namespace string
}

// Sample is one sample resource and the file it is in.
type Sample struct {
	File   string // base name
	Object *unstructured.Unstructured
}

// Samples loads every object of every YAML file in dir (kustomization.yaml
// excepted).
func Samples(dir string) ([]Sample, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Sample
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if u.Object != nil && u.GetKind() != "" {
				out = append(out, Sample{File: filepath.Base(f), Object: u})
			}
		}
	}
	return out, nil
}

// RenderKind renders the chart in chartDir with the spec of each sample of
// gvk, then with each ci/*.yaml values file of the chart merged over the
// first sample's spec (a ci file holds the values it exercises, not
// necessarily every required one). Values the runtime generates (annotated
// in values.yaml, e.g. passwords) get a placeholder. A kind without a
// sample is an error: nothing would show what its chart renders.
func RenderKind(chartDir string, gvk schema.GroupVersionKind, samples []Sample) ([]SampleRender, error) {
	ch, err := LoadChart(chartDir)
	if err != nil {
		return nil, err
	}
	var own []Sample
	for _, s := range samples {
		if s.Object.GroupVersionKind() == gvk {
			own = append(own, s)
		}
	}
	if len(own) == 0 {
		return nil, fmt.Errorf("no sample of %s: add one to config/samples", gvk.Kind)
	}
	var out []SampleRender
	for _, s := range own {
		spec, _, _ := unstructured.NestedMap(s.Object.Object, "spec")
		res, err := renderSample(ch, s.Object.GetName(), s.Object.GetNamespace(), spec)
		from := "sample " + s.File + "/" + s.Object.GetName()
		if err != nil {
			return nil, fmt.Errorf("render %s with %s: %w", chartDir, from, err)
		}
		out = append(out, SampleRender{From: from, Result: res, Namespace: renderNamespace(s.Object.GetNamespace())})
	}
	ciFiles, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(ciFiles)
	first, _, _ := unstructured.NestedMap(own[0].Object.Object, "spec")
	for _, f := range ciFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var ci map[string]any
		if err := yaml.Unmarshal(data, &ci); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		vals := chartutil.CoalesceTables(ci, runtimeCopy(first))
		from := "ci/" + filepath.Base(f)
		res, err := renderSample(ch, own[0].Object.GetName(), own[0].Object.GetNamespace(), vals)
		if err != nil {
			return nil, fmt.Errorf("render %s with %s: %w", chartDir, from, err)
		}
		out = append(out, SampleRender{From: from, Result: res, Namespace: renderNamespace(own[0].Object.GetNamespace())})
	}
	return out, nil
}

func runtimeCopy(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return runtimeDeepCopy(m).(map[string]any)
}

func runtimeDeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = runtimeDeepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = runtimeDeepCopy(e)
		}
		return out
	default:
		return v
	}
}

// WithGenerated returns a copy of spec in which each value the runtime
// generates for the chart (annotated in its values.yaml, e.g. a password)
// and spec does not set holds a placeholder, as the runtime would fill it.
func WithGenerated(ch *chart.Chart, spec map[string]any) (map[string]any, error) {
	vals := runtimeCopy(spec)
	generated, err := manifest.ParseGeneratedValues(ch)
	if err != nil {
		return nil, err
	}
	for _, gv := range generated {
		path := strings.Split(gv.Path, ".")
		if _, found, _ := unstructured.NestedFieldNoCopy(vals, path...); !found {
			if err := unstructured.SetNestedField(vals, "placeholder-generated-by-the-operator", path...); err != nil {
				return nil, err
			}
		}
	}
	return vals, nil
}

// renderNamespace is the namespace a sample in namespace is rendered for.
func renderNamespace(namespace string) string {
	if namespace == "" {
		return DefaultNamespace
	}
	return namespace
}

func renderSample(ch *chart.Chart, name, namespace string, spec map[string]any) (*Result, error) {
	vals, err := WithGenerated(ch, spec)
	if err != nil {
		return nil, err
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return RenderChart(ch, Options{ReleaseName: name, Namespace: namespace, Values: vals})
}

package csvgen

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/chartrender"
	"github.com/acme/platform-operator/internal/manifest"
)

// ChartKind is a chart-backed kind: resources of GVK are releases of the
// chart in ChartDir.
type ChartKind struct {
	CRDName  string
	GVK      schema.GroupVersionKind
	ChartDir string
}

// ChartResources renders each chart with the spec of every sample of its
// kind found in samplesDir and returns, per CRD name, the kinds of objects
// the releases create (the union over the samples), so the CSV lists what
// the samples really produce.
func ChartResources(kinds []ChartKind, samplesDir string) (map[string][]Resource, error) {
	samples, err := loadSamples(samplesDir)
	if err != nil {
		return nil, err
	}
	out := map[string][]Resource{}
	for _, k := range kinds {
		ch, err := chartrender.LoadChart(k.ChartDir)
		if err != nil {
			return nil, err
		}
		// Values the runtime generates (passwords) are not in samples.
		generated, err := manifest.ParseGeneratedValues(ch)
		if err != nil {
			return nil, err
		}
		seen := map[string]Resource{}
		n := 0
		for _, s := range samples {
			if s.GroupVersionKind() != k.GVK {
				continue
			}
			n++
			spec, _, _ := unstructured.NestedMap(s.Object, "spec")
			if spec == nil {
				spec = map[string]any{}
			}
			for _, gv := range generated {
				path := strings.Split(gv.Path, ".")
				if _, found, _ := unstructured.NestedFieldNoCopy(spec, path...); !found {
					if err := unstructured.SetNestedField(spec, "placeholder-generated-by-the-operator", path...); err != nil {
						return nil, err
					}
				}
			}
			ns := s.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			res, err := chartrender.RenderChart(ch, chartrender.Options{
				ReleaseName: s.GetName(), Namespace: ns, Values: spec,
			})
			if err != nil {
				return nil, fmt.Errorf("render %s with sample %s: %w", k.ChartDir, s.GetName(), err)
			}
			for _, o := range res.Objects {
				gvk := o.GroupVersionKind()
				seen[gvk.Kind] = Resource{Kind: gvk.Kind, Name: "", Version: gvk.Version}
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("no sample of %s in %s", k.GVK.Kind, samplesDir)
		}
		var list []Resource
		for _, r := range seen {
			list = append(list, r)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Kind < list[j].Kind })
		out[k.CRDName] = list
	}
	return out, nil
}

func loadSamples(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
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
				out = append(out, u)
			}
		}
	}
	return out, nil
}

package csvgen

import (
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/acme/platform-operator/internal/gen/chartrender"
)

// ChartKind is a chart-backed kind: resources of GVK are releases of the
// chart in ChartDir.
type ChartKind struct {
	CRDName  string
	GVK      schema.GroupVersionKind
	ChartDir string
}

// ChartResources renders each chart the ways chartrender.RenderKind does
// (every sample of its kind in samplesDir, every ci/ values file) and
// returns, per CRD name, the kinds of objects the releases create (the
// union over the renders), so the CSV lists what releases really produce.
func ChartResources(kinds []ChartKind, samplesDir string) (map[string][]Resource, error) {
	samples, err := chartrender.Samples(samplesDir)
	if err != nil {
		return nil, err
	}
	out := map[string][]Resource{}
	for _, k := range kinds {
		renders, err := chartrender.RenderKind(k.ChartDir, k.GVK, samples)
		if err != nil {
			return nil, err
		}
		seen := map[string]Resource{}
		for _, r := range renders {
			for _, o := range r.Result.Objects {
				gvk := o.GroupVersionKind()
				seen[gvk.Kind] = Resource{Kind: gvk.Kind, Name: "", Version: gvk.Version}
			}
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

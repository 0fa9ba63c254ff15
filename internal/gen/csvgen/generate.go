package csvgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// Paths are the inputs and the output of Generate, relative to Root.
type Paths struct {
	Root    string
	Kinds   string // config/crd/kinds.yaml: the chart-backed kinds
	CRDs    string // config/crd/bases
	Samples string // config/samples
	CSV     string // the CSV base, rewritten in place
}

// DefaultPaths are the repository's paths.
func DefaultPaths(root string) Paths {
	return Paths{
		Root:    root,
		Kinds:   "config/crd/kinds.yaml",
		CRDs:    "config/crd/bases",
		Samples: "config/samples",
		CSV:     "config/manifests/bases/platform-operator.clusterserviceversion.yaml",
	}
}

// Generate returns the CSV base with its owned-CRD section derived from
// the CRDs, charts and samples, and whether it differs from the file on
// disk.
func Generate(p Paths) (out []byte, changed bool, err error) {
	at := func(rel string) string { return filepath.Join(p.Root, rel) }
	kinds, err := apikinds.LoadKinds(at(p.Kinds))
	if err != nil {
		return nil, false, err
	}
	var chartKinds []ChartKind
	for _, k := range kinds {
		chartKinds = append(chartKinds, ChartKind{
			CRDName:  k.Plural + "." + k.Group,
			GVK:      schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind},
			ChartDir: at(k.Chart),
		})
	}
	resources, err := ChartResources(chartKinds, at(p.Samples))
	if err != nil {
		return nil, false, err
	}
	crds, err := LoadCRDs(at(p.CRDs))
	if err != nil {
		return nil, false, err
	}
	current, err := os.ReadFile(at(p.CSV))
	if err != nil {
		return nil, false, err
	}
	out, err = Update(current, crds, resources)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", p.CSV, err)
	}
	return out, !bytes.Equal(out, current), nil
}

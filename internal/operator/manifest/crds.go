package manifest

import (
	"fmt"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ChartCRDs returns the CustomResourceDefinitions of chrt's crds/
// directories, its subcharts' included, as Helm reads them; anything in
// crds/ that is not an apiextensions.k8s.io/v1 CRD is an error.
func ChartCRDs(chrt *chart.Chart) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range chrt.CRDObjects() {
		for _, doc := range releaseutil.SplitManifests(string(f.File.Data)) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", f.Filename, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.GetAPIVersion() != "apiextensions.k8s.io/v1" || u.GetKind() != "CustomResourceDefinition" || u.GetName() == "" {
				return nil, fmt.Errorf("%s: %s %s %q is not a named apiextensions.k8s.io/v1 CustomResourceDefinition", f.Filename, u.GetAPIVersion(), u.GetKind(), u.GetName())
			}
			out = append(out, u)
		}
	}
	return out, nil
}

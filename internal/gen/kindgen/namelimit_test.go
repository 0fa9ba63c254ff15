package kindgen

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/acme/platform-operator/internal/gen/chartrender"
	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// The limits in config/crd/kinds.yaml were derived by hand from each
// chart's helpers; rendering must arrive at the same ones.
func TestDeriveNameLimitMatchesTheShippedKinds(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	kinds, err := apikinds.LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	samples, err := chartrender.Samples(filepath.Join(root, "config", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		t.Run(k.Kind, func(t *testing.T) {
			ch, err := chartrender.LoadChart(filepath.Join(root, k.Chart))
			if err != nil {
				t.Fatal(err)
			}
			gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
			var spec map[string]any
			for _, s := range samples {
				if s.Object.GroupVersionKind() == gvk {
					spec, _, _ = unstructured.NestedMap(s.Object.Object, "spec")
					break
				}
			}
			vals, err := chartrender.WithGenerated(ch, spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DeriveNameLimit(ch, "default", vals)
			if err != nil {
				t.Fatal(err)
			}
			if got.MaxLength != k.NameLimit.MaxLength || *got.DNS1035Label != *k.NameLimit.DNS1035Label {
				t.Errorf("derived maxLength %d, dns1035Label %v (%s); kinds.yaml has %d, %v",
					got.MaxLength, *got.DNS1035Label, got.Reason, k.NameLimit.MaxLength, *k.NameLimit.DNS1035Label)
			}
			t.Logf("%d: %s", got.MaxLength, got.Reason)
		})
	}
}

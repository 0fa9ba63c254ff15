// Package uninstall removes the operator safely: it finds every custom
// resource of the operator's kinds, refuses while any exists (or deletes
// them and waits while the operator still runs, so that their finalizers
// run), and leaves the CRDs readable with plain kubectl once the operator
// and its conversion webhook are gone. `extensions uninstall` runs it;
// `make undeploy` and `make uninstall` call that command before they
// delete anything.
package uninstall

import (
	"cmp"
	"fmt"
	"os"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// CronScalerKind is the sidecar's own kind, declared by Go types rather
// than by the kinds and watches files.
var CronScalerKind = autoscalingv1alpha1.GroupVersion.WithKind("CronScaler").GroupKind()

// LoadKinds returns the operator's kinds: those of the kinds file
// (config/crd/kinds.yaml), those of the watches file and the CronScaler,
// each once, sorted.
func LoadKinds(kindsFile, watchesFile string) ([]schema.GroupKind, error) {
	declared, err := apikinds.LoadKinds(kindsFile)
	if err != nil {
		return nil, fmt.Errorf("kinds file: %w", err)
	}
	data, err := os.ReadFile(watchesFile)
	if err != nil {
		return nil, fmt.Errorf("watches file: %w", err)
	}
	watched, err := ParseWatchedKinds(data)
	if err != nil {
		return nil, fmt.Errorf("watches file %s: %w", watchesFile, err)
	}
	kinds := []schema.GroupKind{CronScalerKind}
	for _, k := range declared {
		kinds = append(kinds, schema.GroupKind{Group: k.Group, Kind: k.Kind})
	}
	return sortKinds(append(kinds, watched...)), nil
}

// ParseWatchedKinds returns the group and kind of every entry of a
// watches file. Only those two fields are read: the charts the entries
// name need not be there.
func ParseWatchedKinds(data []byte) ([]schema.GroupKind, error) {
	var entries []struct {
		Group string `json:"group"`
		Kind  string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &entries); err != nil {
		return nil, err
	}
	kinds := make([]schema.GroupKind, 0, len(entries))
	for i, e := range entries {
		if e.Kind == "" {
			return nil, fmt.Errorf("entry %d has no kind", i)
		}
		kinds = append(kinds, schema.GroupKind{Group: e.Group, Kind: e.Kind})
	}
	return kinds, nil
}

// sortKinds sorts kinds by kind, then group, and drops duplicates.
func sortKinds(kinds []schema.GroupKind) []schema.GroupKind {
	slices.SortFunc(kinds, func(a, b schema.GroupKind) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Group, b.Group))
	})
	return slices.Compact(kinds)
}

// SelectCRDs returns the CRDs that define one of kinds, in the order of
// kinds. A kind whose CRD is not installed is left out.
func SelectCRDs(crds []apiextensionsv1.CustomResourceDefinition, kinds []schema.GroupKind) []apiextensionsv1.CustomResourceDefinition {
	var owned []apiextensionsv1.CustomResourceDefinition
	for _, gk := range kinds {
		for _, crd := range crds {
			if crd.Spec.Group == gk.Group && crd.Spec.Names.Kind == gk.Kind {
				owned = append(owned, crd)
			}
		}
	}
	return owned
}

// StorageVersion is the version the CRD's objects are stored in. Reading
// them in it never calls a conversion webhook (the API server converts
// only between versions).
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name, nil
		}
	}
	return "", fmt.Errorf("CRD %s has no storage version", crd.Name)
}

// resourceOf is the resource of the CRD's objects in its storage version.
func resourceOf(crd *apiextensionsv1.CustomResourceDefinition) (schema.GroupVersionResource, error) {
	v, err := StorageVersion(crd)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}, nil
}

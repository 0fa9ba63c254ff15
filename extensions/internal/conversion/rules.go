// Package conversion is the sidecar's CRD conversion webhook: it converts
// custom resources of a chart-backed kind between the kind's own version
// (the storage version, the one the Helm runtime reads, whose spec is the
// chart's values) and the further versions config/crd/kinds.yaml declares,
// which differ from it only by field renames (apikinds.ServedVersion).
//
// The rules are read from the kinds file at start-up, the same file crdgen
// turns into the CRDs, so the CRD's schemas and the webhook cannot drift.
// A conversion only moves renamed fields of .spec and sets apiVersion:
// metadata, status and every other field are kept as they are, so reading
// an object in another version never changes the values of its release.
package conversion

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// Rules are the conversions of every kind that serves more than one
// version.
type Rules struct {
	kinds map[schema.GroupKind]kindRules
}

// kindRules are one kind's versions.
type kindRules struct {
	// storage is the kind's own version: the chart's names.
	storage string
	// renames maps each further version to its renames.
	renames map[string][]apikinds.Rename
}

// Load reads the rules from a kinds file (config/crd/kinds.yaml).
func Load(kindsFile string) (*Rules, error) {
	kinds, err := apikinds.LoadKinds(kindsFile)
	if err != nil {
		return nil, err
	}
	return New(kinds), nil
}

// New returns the rules of kinds (as apikinds.ParseKinds checked them).
func New(kinds []apikinds.Kind) *Rules {
	r := &Rules{kinds: map[schema.GroupKind]kindRules{}}
	for _, k := range kinds {
		if len(k.Versions) == 0 {
			continue
		}
		kr := kindRules{storage: k.Version, renames: map[string][]apikinds.Rename{}}
		for _, v := range k.Versions {
			kr.renames[v.Name] = v.Renames
		}
		r.kinds[schema.GroupKind{Group: k.Group, Kind: k.Kind}] = kr
	}
	return r
}

// Empty reports whether no kind has a second version.
func (r *Rules) Empty() bool { return len(r.kinds) == 0 }

// Convert converts obj, in place, to apiVersion desired (group/version).
func (r *Rules) Convert(obj *unstructured.Unstructured, desired string) error {
	from, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return err
	}
	to, err := schema.ParseGroupVersion(desired)
	if err != nil {
		return err
	}
	gk := schema.GroupKind{Group: from.Group, Kind: obj.GetKind()}
	if to.Group != from.Group {
		return fmt.Errorf("cannot convert %s %s to another group, %s", gk, obj.GetName(), to.Group)
	}
	kr, ok := r.kinds[gk]
	if !ok {
		return fmt.Errorf("%s is not a kind this webhook converts", gk)
	}
	for _, v := range []string{from.Version, to.Version} {
		if _, ok := kr.renames[v]; !ok && v != kr.storage {
			return fmt.Errorf("%s has no version %q: it is served as %s", gk, v, strings.Join(kr.versions(), ", "))
		}
	}
	if from.Version == to.Version {
		return nil
	}
	// Through the storage version: back from one version's names to the
	// chart's, then forward to the other's.
	for _, r := range kr.renames[from.Version] {
		if err := move(obj.Object, r.To, r.From); err != nil {
			return fmt.Errorf("%s %s from %s: %w", gk, obj.GetName(), from.Version, err)
		}
	}
	for _, r := range kr.renames[to.Version] {
		if err := move(obj.Object, r.From, r.To); err != nil {
			return fmt.Errorf("%s %s to %s: %w", gk, obj.GetName(), to.Version, err)
		}
	}
	obj.SetAPIVersion(to.String())
	return nil
}

// versions lists the kind's versions, storage first.
func (kr kindRules) versions() []string {
	vs := []string{kr.storage}
	for v := range kr.renames {
		vs = append(vs, v)
	}
	sort.Strings(vs[1:])
	return vs
}

// move moves the value at spec.<from> to spec.<to> (dotted paths). Nothing
// happens when there is no such value; objects on the way to `to` are
// created, and objects left empty on the way to `from` removed, so that
// converting there and back gives the object converted.
func move(obj map[string]any, from, to string) error {
	fromPath := append([]string{"spec"}, strings.Split(from, ".")...)
	toPath := append([]string{"spec"}, strings.Split(to, ".")...)
	v, found, err := unstructured.NestedFieldNoCopy(obj, fromPath...)
	if err != nil || !found {
		return err
	}
	if _, taken, _ := unstructured.NestedFieldNoCopy(obj, toPath...); taken {
		return fmt.Errorf("both spec.%s and spec.%s are set", from, to)
	}
	unstructured.RemoveNestedField(obj, fromPath...)
	for p := fromPath[:len(fromPath)-1]; len(p) > 1; p = p[:len(p)-1] {
		if m, ok, _ := unstructured.NestedMap(obj, p...); ok && len(m) == 0 {
			unstructured.RemoveNestedField(obj, p...)
		}
	}
	return unstructured.SetNestedField(obj, v, toPath...)
}

package release

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// ValuesFromField is the top-level spec field, reserved in every kind,
// that lists the Secrets and ConfigMaps a resource takes chart values
// from. It is never passed to the chart.
const ValuesFromField = "valuesFrom"

// DefaultValuesKey is the key of a valuesFrom entry that names none.
const DefaultValuesKey = "values.yaml"

// The kinds a valuesFrom entry may name.
const (
	SourceSecret    = "Secret"
	SourceConfigMap = "ConfigMap"
)

// The fields of a valuesFrom entry; any other (a namespace, say) is
// refused.
var valuesFromFields = map[string]bool{"kind": true, "name": true, "valuesKey": true, "targetPath": true, "optional": true}

// ValuesReference is one entry of a spec's valuesFrom: a key of a Secret
// or ConfigMap in the resource's own namespace (an entry has no namespace).
type ValuesReference struct {
	// Kind is SourceSecret or SourceConfigMap.
	Kind string
	// Name is the object's name.
	Name string
	// ValuesKey is the key of the object's data; DefaultValuesKey if the
	// entry names none.
	ValuesKey string
	// TargetPath, when set, is the dotted path of the one value the key's
	// content is (as a string); when empty, the content is YAML values
	// merged at the root.
	TargetPath string
	// Optional skips a missing object or key instead of refusing it.
	Optional bool
}

// ObjectKey is "<Kind>/<name>", as workloadrefs.Ref.ObjectKey names a
// referenced object.
func (r ValuesReference) ObjectKey() string { return r.Kind + "/" + r.Name }

// ReadSource returns the data of the Secret or ConfigMap kind/name in the
// resource's namespace (a ConfigMap's data and binaryData together), and
// found false when it does not exist. Its errors name the object, never a
// value.
type ReadSource func(kind, name string) (data map[string][]byte, found bool, err error)

// ValuesFromError is a valuesFrom entry that cannot be used: malformed, or
// naming a missing object or key that is not optional. Its message names
// the entry, the object and the key, never a value.
type ValuesFromError struct {
	// Index is the entry's index in valuesFrom; -1 for the list itself.
	Index int
	// Field is the entry's field at fault ("" for the entry).
	Field string
	// Missing is true when the object or key does not exist.
	Missing bool
	Msg     string
}

// Path is the field path of the entry ("spec.valuesFrom[1].name").
func (e *ValuesFromError) Path() string {
	p := "spec." + ValuesFromField
	if e.Index >= 0 {
		p += fmt.Sprintf("[%d]", e.Index)
	}
	if e.Field != "" {
		p += "." + e.Field
	}
	return p
}

func (e *ValuesFromError) Error() string { return e.Path() + ": " + e.Msg }

// ParseValuesFrom returns the valuesFrom entries of spec, strictly: an
// entry with an unknown field (a namespace), a kind other than Secret or
// ConfigMap, no name, or a targetPath with an empty segment is refused.
func ParseValuesFrom(spec map[string]interface{}) ([]ValuesReference, error) {
	raw, ok := spec[ValuesFromField]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]interface{})
	if !ok {
		return nil, &ValuesFromError{Index: -1, Msg: "must be a list of {kind, name, valuesKey, targetPath, optional}"}
	}
	refs := make([]ValuesReference, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]interface{})
		if !ok {
			return nil, &ValuesFromError{Index: i, Msg: "must be an object {kind, name, valuesKey, targetPath, optional}"}
		}
		for _, k := range sortedMapKeys(m) {
			if !valuesFromFields[k] {
				msg := "unknown field; an entry has kind, name, valuesKey, targetPath and optional"
				if k == "namespace" {
					msg = "an entry has no namespace: valuesFrom reads only the resource's own namespace"
				}
				return nil, &ValuesFromError{Index: i, Field: k, Msg: msg}
			}
		}
		ref := ValuesReference{ValuesKey: DefaultValuesKey}
		var err error
		if ref.Kind, err = stringField(m, i, "kind"); err != nil {
			return nil, err
		}
		if ref.Kind != SourceSecret && ref.Kind != SourceConfigMap {
			return nil, &ValuesFromError{Index: i, Field: "kind", Msg: fmt.Sprintf("must be %s or %s, not %q", SourceSecret, SourceConfigMap, ref.Kind)}
		}
		if ref.Name, err = stringField(m, i, "name"); err != nil {
			return nil, err
		}
		if ref.Name == "" {
			return nil, &ValuesFromError{Index: i, Field: "name", Msg: "is required"}
		}
		key, err := stringField(m, i, "valuesKey")
		if err != nil {
			return nil, err
		}
		if key != "" {
			ref.ValuesKey = key
		}
		if ref.TargetPath, err = stringField(m, i, "targetPath"); err != nil {
			return nil, err
		}
		if ref.TargetPath != "" {
			if _, err := splitTargetPath(ref.TargetPath); err != nil {
				return nil, &ValuesFromError{Index: i, Field: "targetPath", Msg: err.Error()}
			}
		}
		if o, ok := m["optional"]; ok && o != nil {
			b, ok := o.(bool)
			if !ok {
				return nil, &ValuesFromError{Index: i, Field: "optional", Msg: "must be a boolean"}
			}
			ref.Optional = b
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// ValuesFromKeys returns the ObjectKey of every object spec's valuesFrom
// names, for an index of the resources that read an object; none for a
// malformed valuesFrom.
func ValuesFromKeys(spec map[string]interface{}) []string {
	refs, err := ParseValuesFrom(spec)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var keys []string
	for _, r := range refs {
		if k := r.ObjectKey(); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// ApplyValuesFrom is the first step of Translate: it removes valuesFrom
// from vals and merges the values of its entries over vals, in order (a
// later entry's value wins over an earlier one's, and every entry's over
// the spec's own).
//
// The entries win over the spec, not the other way round as in Flux's
// HelmRelease, because a kind's CRD carries the defaults of the chart's
// values schema: the API server writes every defaulted value into the
// stored spec, so a spec that won would leave valuesFrom unable to set any
// value that has a default (a `password: ""` of values.yaml, say). What
// an entry names is what the chart gets. Without a targetPath an entry's key holds YAML values,
// merged at the root; with one, the key's content is one string value set
// at that path. A missing object or key is skipped when the entry is
// optional and refused otherwise. read may be nil when vals have no
// valuesFrom; a resource whose kind cannot read any (a cluster-scoped
// kind) is refused.
func ApplyValuesFrom(vals map[string]interface{}, read ReadSource) (map[string]interface{}, error) {
	refs, err := ParseValuesFrom(vals)
	if err != nil {
		return nil, err
	}
	delete(vals, ValuesFromField)
	if len(refs) == 0 {
		return vals, nil
	}
	if read == nil {
		return nil, &ValuesFromError{Index: -1, Msg: "this kind takes no values from Secrets or ConfigMaps (it has no namespace to read them from)"}
	}
	for i, ref := range refs {
		data, found, err := read(ref.Kind, ref.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: read %s %s: %w", (&ValuesFromError{Index: i}).Path(), ref.Kind, ref.Name, err)
		}
		content, hasKey := data[ref.ValuesKey]
		switch {
		case !found && ref.Optional, found && !hasKey && ref.Optional:
			continue
		case !found:
			return nil, &ValuesFromError{Index: i, Missing: true, Msg: fmt.Sprintf("%s %s does not exist", ref.Kind, ref.Name)}
		case !hasKey:
			return nil, &ValuesFromError{Index: i, Field: "valuesKey", Missing: true, Msg: fmt.Sprintf("%s %s has no key %q", ref.Kind, ref.Name, ref.ValuesKey)}
		}
		if ref.TargetPath != "" {
			segments, _ := splitTargetPath(ref.TargetPath)
			if err := setNestedString(vals, segments, string(content)); err != nil {
				return nil, &ValuesFromError{Index: i, Field: "targetPath", Msg: fmt.Sprintf("cannot set %s: %v", ref.TargetPath, err)}
			}
			continue
		}
		var values map[string]interface{}
		// The parser's message may quote the content: it is left out.
		if err := yaml.Unmarshal(content, &values); err != nil {
			return nil, &ValuesFromError{Index: i, Field: "valuesKey", Msg: fmt.Sprintf("key %q of %s %s is not YAML values (a map of values)", ref.ValuesKey, ref.Kind, ref.Name)}
		}
		mergeValues(vals, values)
	}
	return vals, nil
}

// mergeValues merges src into dst: a map merges with a map, key by key;
// any other value of src replaces dst's.
func mergeValues(dst, src map[string]interface{}) {
	for k, v := range src {
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				mergeValues(dm, sm)
				continue
			}
			cp := map[string]interface{}{}
			mergeValues(cp, sm)
			dst[k] = cp
			continue
		}
		dst[k] = v
	}
}

// splitTargetPath splits a dotted path ("a.b.c") into its segments; a
// backslash escapes a dot that is part of a key ("annotations.a\.b/c").
func splitTargetPath(p string) ([]string, error) {
	var segments []string
	var cur strings.Builder
	escaped := false
	for _, r := range p {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
		case r == '.':
			segments = append(segments, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	segments = append(segments, cur.String())
	for _, s := range segments {
		if s == "" {
			return nil, fmt.Errorf("%q has an empty segment; a targetPath is dotted keys, as in a.b.c", p)
		}
	}
	return segments, nil
}

func stringField(m map[string]interface{}, i int, name string) (string, error) {
	v, ok := m[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", &ValuesFromError{Index: i, Field: name, Msg: "must be a string"}
	}
	return s, nil
}

func sortedMapKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

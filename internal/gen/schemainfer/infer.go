// Package schemainfer infers a chart's values.schema.json from its
// values.yaml, for charts that ship no schema. `make kind` writes the result
// into the chart, where crdgen.ConvertSchema turns it into the CRD's .spec
// schema.
//
// The schema says what values.yaml shows and nothing more: the type of every
// value and its default, the keys of every non-empty map, and the comment
// above a key as its description. It never says what is required, and maps
// that are empty in values.yaml, nulls and empty lists accept anything. The
// top-level "$comment" (Marker) tells the chart author to tighten it, and
// tells a later run that it may overwrite the file.
package schemainfer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// Marker is the value of the schema's top-level "$comment" that marks it as
// inferred.
const Marker = "Inferred from values.yaml by `make kind`: types and defaults only. " +
	"Tighten it (required, enums, patterns, descriptions) and remove this comment to keep your edits; " +
	"while this comment is here, `make kind` may regenerate the file."

const draft07 = "http://json-schema.org/draft-07/schema#"

// document is the top level of an inferred schema. Fields are declared in
// sorted key order, so the output reads like sorted JSON maps do.
type document struct {
	Comment    string             `json:"$comment"`
	Schema     string             `json:"$schema"`
	Properties map[string]*schema `json:"properties,omitempty"`
	Type       string             `json:"type"`
}

// schema is one inferred node, in the subset crdgen.ConvertSchema accepts.
// Fields are declared in sorted key order, as in document.
type schema struct {
	Default     any                `json:"default,omitempty"`
	Description string             `json:"description,omitempty"`
	Items       *schema            `json:"items,omitempty"`
	Properties  map[string]*schema `json:"properties,omitempty"`
	Type        string             `json:"type,omitempty"`
	// Preserve without Type is the schema that accepts any value: draft-07
	// ignores the unknown keyword, and a CRD accepts an untyped node that
	// preserves unknown fields as structural.
	Preserve bool `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
}

// anything accepts every value.
func anything(description string) *schema {
	return &schema{Preserve: true, Description: description}
}

// Infer returns the indented JSON schema (ending in a newline) inferred from
// values.yaml content.
//
// Values are read the way Helm reads values.yaml (sigs.k8s.io/yaml: YAML 1.1,
// so `yes` is true and an unquoted 1.10 is the number 1.1), and typed as Helm
// will see them:
//   - a map is an object with one property per key; an empty map is an
//     object of any keys (crdgen preserves its unknown fields);
//   - a string, boolean, integer or number has that type and its value as
//     default; a number is an integer unless it is written with a fraction or
//     exponent or tagged !!float;
//   - null accepts anything;
//   - a list's items are inferred from all its elements together (maps
//     merge their keys, integers and numbers make numbers, any other mix
//     accepts anything); an empty list's items accept anything. A list of
//     scalars has itself as default. Nothing inside items has a default,
//     because the API server would apply it to every element a user writes.
//
// Objects have no default (their properties carry them), nothing is
// required, and additionalProperties is never set. A key's description is the
// block of comment lines directly above it (see description).
func Infer(valuesYAML []byte) ([]byte, error) {
	jsonData, err := yaml.YAMLToJSON(valuesYAML)
	if err != nil {
		return nil, fmt.Errorf("parsing values.yaml: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(jsonData))
	dec.UseNumber() // keeps the literal, to tell integers from numbers
	var values any
	if err := dec.Decode(&values); err != nil {
		return nil, fmt.Errorf("parsing values.yaml: %w", err)
	}
	root, ok := values.(map[string]any)
	if !ok && values != nil {
		return nil, fmt.Errorf("values.yaml must hold a map of values, not %s", kind(values))
	}

	src := newSource(valuesYAML)
	doc := document{
		Comment:    Marker,
		Schema:     draft07,
		Properties: src.infer(root, src.root).Properties,
		Type:       "object",
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // descriptions may hold <, > and &
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding the schema: %w", err)
	}
	return out.Bytes(), nil
}

// IsInferred reports whether schema data carries Marker (so a re-run may
// overwrite it).
func IsInferred(schemaJSON []byte) bool {
	var s struct {
		Comment string `json:"$comment"`
	}
	return json.Unmarshal(schemaJSON, &s) == nil && s.Comment == Marker
}

// infer infers the schema of v, the value Helm sees. n is the same value's
// YAML node, read only for comments and the !!float tag; it may be nil.
func (s *source) infer(v any, n *yamlv3.Node) *schema {
	n = resolve(n)
	switch v := v.(type) {
	case nil:
		return anything("")
	case bool:
		return &schema{Type: "boolean", Default: v}
	case string:
		return &schema{Type: "string", Default: v}
	case json.Number:
		return &schema{Type: numberType(v, n), Default: v}
	case map[string]any:
		out := &schema{Type: "object"}
		if len(v) == 0 {
			return out
		}
		pairs := mappingPairs(n)
		out.Properties = make(map[string]*schema, len(v))
		for k, val := range v {
			p := s.infer(val, pairs[k].value)
			p.Description = s.description(pairs[k].key)
			out.Properties[k] = p
		}
		return out
	case []any:
		return s.inferList(v, n)
	}
	// Unreachable: JSON decodes to the types above.
	return anything("")
}

func (s *source) inferList(v []any, n *yamlv3.Node) *schema {
	out := &schema{Type: "array"}
	allScalars := len(v) > 0
	for i, e := range v {
		var elem *yamlv3.Node
		if n != nil && n.Kind == yamlv3.SequenceNode && i < len(n.Content) {
			elem = n.Content[i]
		}
		item := s.infer(e, elem)
		if out.Items == nil {
			out.Items = item
		} else {
			out.Items = merge(out.Items, item)
		}
		switch e.(type) {
		case nil, map[string]any, []any:
			allScalars = false
		}
	}
	if out.Items == nil {
		out.Items = anything("")
	}
	clearDefaults(out.Items)
	if allScalars {
		out.Default = v
	}
	return out
}

// merge returns a schema accepting every value a or b accepts, reusing a.
func merge(a, b *schema) *schema {
	desc := a.Description
	if desc == "" {
		desc = b.Description
	}
	switch {
	case a.Type == "" || b.Type == "":
		return anything(desc)
	case a.Type != b.Type:
		if isNumeric(a.Type) && isNumeric(b.Type) {
			return &schema{Type: "number", Description: desc}
		}
		return anything(desc)
	}
	a.Description = desc
	switch a.Type {
	case "object":
		// An object without properties accepts any keys; so does the merge.
		if a.Properties == nil || b.Properties == nil {
			a.Properties = nil
			break
		}
		for k, bp := range b.Properties {
			if ap, ok := a.Properties[k]; ok {
				a.Properties[k] = merge(ap, bp)
			} else {
				a.Properties[k] = bp
			}
		}
	case "array":
		a.Items = merge(a.Items, b.Items)
	}
	return a
}

func isNumeric(typ string) bool { return typ == "integer" || typ == "number" }

func clearDefaults(s *schema) {
	s.Default = nil
	if s.Items != nil {
		clearDefaults(s.Items)
	}
	for _, p := range s.Properties {
		clearDefaults(p)
	}
}

// numberType tells integers from numbers. Helm reads every number as a
// float64, so the type only matters to the schema: a value written as 1.0
// (which reaches JSON as 1) or tagged !!float stays a number, so that 1.5 is
// accepted later.
func numberType(v json.Number, n *yamlv3.Node) string {
	if strings.ContainsAny(string(v), ".eE") {
		return "number"
	}
	if n != nil && n.Kind == yamlv3.ScalarNode && n.ShortTag() == "!!float" {
		return "number"
	}
	return "integer"
}

func kind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

package schemainfer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// WithSubcharts returns the schema parent (one Infer returned) with the
// schemas of a chart's subcharts under the keys their values live at: a
// dependency's alias, else its name. Helm hands a subchart the values
// under that key, coalesced over its own values.yaml; so the subchart's
// schema is the base and what the parent's values.yaml says of the key
// (its defaults, its descriptions, keys such as a condition's enabled)
// wins where both say something.
func WithSubcharts(parent []byte, subcharts map[string][]byte) ([]byte, error) {
	if len(subcharts) == 0 {
		return parent, nil
	}
	doc, err := decode(parent)
	if err != nil {
		return nil, err
	}
	if doc.Properties == nil {
		doc.Properties = map[string]*schema{}
	}
	for _, key := range slices.Sorted(maps.Keys(subcharts)) {
		sub, err := decode(subcharts[key])
		if err != nil {
			return nil, fmt.Errorf("subchart %s: %w", key, err)
		}
		doc.Properties[key] = overlay(&schema{Type: "object", Properties: sub.Properties}, doc.Properties[key])
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding the schema: %w", err)
	}
	return out.Bytes(), nil
}

func decode(data []byte) (*document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	doc := &document{}
	if err := dec.Decode(doc); err != nil {
		return nil, fmt.Errorf("reading an inferred schema: %w", err)
	}
	return doc, nil
}

// overlay returns base with what top says laid over it: top's fields win,
// and properties both have are overlaid in turn.
func overlay(base, top *schema) *schema {
	if top == nil {
		return base
	}
	if base == nil {
		return top
	}
	out := *base
	switch {
	case top.Type == "" && top.Preserve && base.Type != "":
		// The parent's empty map or null says nothing the subchart's
		// values do not say better.
	case top.Type != "" || top.Preserve:
		// A type (or none, for anything) is one decision: take it whole.
		out.Type, out.Preserve, out.Items = top.Type, top.Preserve, top.Items
		if top.Type != "object" {
			out.Properties = nil
		}
	}
	if top.Default != nil {
		out.Default = top.Default
	}
	if top.Description != "" {
		out.Description = top.Description
	}
	if len(top.Properties) > 0 {
		props := maps.Clone(base.Properties)
		if props == nil {
			props = map[string]*schema{}
		}
		for k, v := range top.Properties {
			props[k] = overlay(props[k], v)
		}
		out.Properties = props
	}
	return &out
}

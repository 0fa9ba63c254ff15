package crdgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// SchemaError is one problem in an input schema. Path is a JSON pointer into
// the schema file, written as a URI fragment ("#/properties/image/oneOf").
type SchemaError struct {
	Path string
	Msg  string
}

func (e *SchemaError) Error() string { return e.Path + ": " + e.Msg }

// SchemaErrors is every problem found in one schema, ordered by path.
type SchemaErrors []*SchemaError

func (es SchemaErrors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return fmt.Sprintf("%d schema problems:\n  %s", len(es), strings.Join(lines, "\n  "))
}

// ConvertSchema converts a chart's values.schema.json (the draft-07 subset
// described below) into a CRD structural schema. The result is the schema of
// the custom resource's .spec.
//
// Converted: type (object, array, string, integer, number, boolean; the type
// array [integer, string]), description, title (used as the description when
// there is none), default, enum, const (as a one-value enum), minimum,
// maximum, exclusiveMinimum/exclusiveMaximum (draft-07 numbers become the
// OpenAPI boolean form; the boolean form is kept), multipleOf, minLength,
// maxLength, pattern, format, minItems, maxItems, uniqueItems: false,
// minProperties, maxProperties, required, properties, items,
// additionalProperties, local $ref to #/definitions/... or #/$defs/...
// (inlined), and the Kubernetes extensions x-kubernetes-int-or-string,
// -preserve-unknown-fields, -embedded-resource, -validations, -list-type,
// -list-map-keys and -map-type (passed through). $schema, $id and $comment are
// ignored.
//
// Objects: additionalProperties false or absent keeps only the listed
// properties (the API server prunes, or with strict field validation refuses,
// anything else). An additionalProperties schema becomes the CRD's
// additionalProperties (a map); it cannot be combined with properties.
// additionalProperties true, or an object without properties (and without
// additionalProperties false), gets x-kubernetes-preserve-unknown-fields.
//
// Everything else is an error naming its path. The returned error is a
// SchemaErrors holding every problem found.
func ConvertSchema(data []byte) (*apiextensionsv1.JSONSchemaProps, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("parsing JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parsing JSON: unexpected data after the top-level value")
	}
	rootMap, ok := root.(map[string]any)
	if !ok {
		return nil, SchemaErrors{{Path: "#", Msg: "the schema must be a JSON object"}}
	}
	c := &converter{root: rootMap, seen: map[string]bool{}}
	out := c.convert(rootMap, "#", nil)
	if out != nil && out.Type != "object" {
		c.fail("#", "the root schema must have type object (chart values are a map)")
	}
	if len(c.errs) > 0 {
		sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].Path < c.errs[j].Path })
		return nil, c.errs
	}
	return out, nil
}

type converter struct {
	root map[string]any
	errs SchemaErrors
	seen map[string]bool // de-duplicates errors from a definition referenced twice
}

func (c *converter) fail(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if key := path + "\x00" + msg; !c.seen[key] {
		c.seen[key] = true
		c.errs = append(c.errs, &SchemaError{Path: path, Msg: msg})
	}
}

// child appends one JSON pointer token, escaped as RFC 6901 requires.
func child(path string, tokens ...string) string {
	for _, t := range tokens {
		path += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
	}
	return path
}

// Keywords by the types they apply to. Applying one to another type is
// meaningless in JSON Schema and usually a mistake, so it is an error.
var (
	objectKeywords = set("properties", "required", "additionalProperties", "minProperties", "maxProperties",
		"x-kubernetes-map-type", "x-kubernetes-embedded-resource")
	arrayKeywords  = set("items", "minItems", "maxItems", "uniqueItems", "x-kubernetes-list-type", "x-kubernetes-list-map-keys")
	stringKeywords = set("minLength", "maxLength", "pattern")
	numberKeywords = set("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
)

// Hints for keywords that people reach for and CRDs cannot express.
var unsupportedHints = map[string]string{
	"oneOf":                   "CRD schemas cannot express alternatives; use a single type, or x-kubernetes-validations (CEL) for the constraint",
	"allOf":                   "merge the subschemas into one schema",
	"anyOf":                   "only the int-or-string pattern [{type: integer}, {type: string}] is supported",
	"not":                     "use x-kubernetes-validations (CEL) for the constraint",
	"if":                      "use x-kubernetes-validations (CEL) for the constraint",
	"then":                    "use x-kubernetes-validations (CEL) for the constraint",
	"else":                    "use x-kubernetes-validations (CEL) for the constraint",
	"patternProperties":       "use additionalProperties with a schema, plus x-kubernetes-validations for key patterns",
	"propertyNames":           "use x-kubernetes-validations (CEL) on the map's keys",
	"dependencies":            "use x-kubernetes-validations (CEL) for the constraint",
	"dependentRequired":       "use x-kubernetes-validations (CEL) for the constraint",
	"dependentSchemas":        "use x-kubernetes-validations (CEL) for the constraint",
	"contains":                "use x-kubernetes-validations (CEL) for the constraint",
	"additionalItems":         "tuple arrays are not supported; use items with one schema",
	"nullable":                "CRD fields cannot be null for Helm values; omit the field instead",
	"examples":                "CRD schemas have no examples; mention examples in the description",
	"readOnly":                "CRD schemas have no readOnly",
	"writeOnly":               "CRD schemas have no writeOnly",
	"x-kubernetes-validation": "did you mean x-kubernetes-validations?",
}

func set(ks ...string) map[string]bool {
	m := make(map[string]bool, len(ks))
	for _, k := range ks {
		m[k] = true
	}
	return m
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// convert converts the schema v found at path. refs is the chain of $refs
// being inlined, for cycle detection. It returns nil when v is unusable.
func (c *converter) convert(v any, path string, refs []string) *apiextensionsv1.JSONSchemaProps {
	m, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			c.fail(path, "boolean schemas are not supported; write a schema object")
		} else {
			c.fail(path, "a schema must be a JSON object, not %s", jsonKind(v))
		}
		return nil
	}
	if ref, ok := m["$ref"]; ok {
		return c.convertRef(m, ref, path, refs)
	}

	out := &apiextensionsv1.JSONSchemaProps{}
	typ := c.convertType(m, path, out)

	if path != "#" {
		for _, k := range []string{"definitions", "$defs"} {
			if _, ok := m[k]; ok {
				c.fail(child(path, k), "%s is only supported at the schema root", k)
			}
		}
	}

	var additional any
	hasAdditional := false
	var required []string

	for _, k := range sortedKeys(m) {
		val := m[k]
		p := child(path, k)
		switch {
		case objectKeywords[k] && typ != "object":
			c.fail(p, "%s applies to objects, not to %s", k, typeDesc(typ))
			continue
		case arrayKeywords[k] && typ != "array":
			c.fail(p, "%s applies to arrays, not to %s", k, typeDesc(typ))
			continue
		case stringKeywords[k] && typ != "string" && typ != intOrString:
			c.fail(p, "%s applies to strings, not to %s", k, typeDesc(typ))
			continue
		case numberKeywords[k] && typ != "integer" && typ != "number" && typ != intOrString:
			c.fail(p, "%s applies to numbers, not to %s", k, typeDesc(typ))
			continue
		}

		switch k {
		case "type", "anyOf", "x-kubernetes-int-or-string":
			// Handled by convertType.
		case "$schema", "$id", "$comment", "definitions", "$defs":
			// Ignored; definitions are read when a $ref points into them.
		case "description":
			out.Description = c.str(val, p)
		case "title":
			if _, hasDesc := m["description"]; !hasDesc {
				out.Description = c.str(val, p)
			} else {
				c.str(val, p)
			}
		case "default":
			out.Default = c.value(val, p, "default")
		case "enum":
			vals, ok := val.([]any)
			if !ok || len(vals) == 0 {
				c.fail(p, "enum must be a non-empty array")
				continue
			}
			if _, both := m["const"]; both {
				c.fail(p, "enum and const cannot be combined")
				continue
			}
			for i, e := range vals {
				if j := c.value(e, child(p, fmt.Sprint(i)), "enum value"); j != nil {
					out.Enum = append(out.Enum, *j)
				}
			}
		case "const":
			if j := c.value(val, p, "const"); j != nil {
				out.Enum = []apiextensionsv1.JSON{*j}
			}
		case "format":
			out.Format = c.str(val, p)
		case "pattern":
			out.Pattern = c.str(val, p)
			if _, err := regexp.Compile(out.Pattern); err != nil {
				c.fail(p, "pattern is not a valid regular expression for the API server (Go RE2 syntax): %v", err)
			}
		case "minLength":
			out.MinLength = c.count(val, p)
		case "maxLength":
			out.MaxLength = c.count(val, p)
		case "minItems":
			out.MinItems = c.count(val, p)
		case "maxItems":
			out.MaxItems = c.count(val, p)
		case "minProperties":
			out.MinProperties = c.count(val, p)
		case "maxProperties":
			out.MaxProperties = c.count(val, p)
		case "minimum":
			out.Minimum = c.number(val, p)
		case "maximum":
			out.Maximum = c.number(val, p)
		case "multipleOf":
			out.MultipleOf = c.number(val, p)
			if out.MultipleOf != nil && *out.MultipleOf <= 0 {
				c.fail(p, "multipleOf must be greater than 0")
			}
		case "exclusiveMinimum", "exclusiveMaximum":
			// Handled below, after minimum and maximum.
		case "uniqueItems":
			b, ok := val.(bool)
			if !ok {
				c.fail(p, "uniqueItems must be a boolean")
			} else if b {
				c.fail(p, "uniqueItems: true is forbidden in CRD schemas; use \"x-kubernetes-list-type\": \"set\" (scalar items) or \"map\" with x-kubernetes-list-map-keys")
			}
		case "items":
			switch val.(type) {
			case []any:
				c.fail(p, "tuple validation (items as an array) is not supported; use a single schema")
			default:
				out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: c.convert(val, p, refs)}
			}
		case "properties":
			props, ok := val.(map[string]any)
			if !ok {
				c.fail(p, "properties must be an object")
				continue
			}
			out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			for _, name := range sortedKeys(props) {
				if s := c.convert(props[name], child(p, name), refs); s != nil {
					out.Properties[name] = *s
				}
			}
		case "required":
			required = c.strings(val, p)
			if dup := firstDuplicate(required); dup != "" {
				c.fail(p, "%q is listed twice", dup)
			}
		case "additionalProperties":
			additional, hasAdditional = val, true
		case "x-kubernetes-preserve-unknown-fields":
			if b, ok := val.(bool); ok {
				out.XPreserveUnknownFields = &b
			} else {
				c.fail(p, "must be a boolean")
			}
		case "x-kubernetes-embedded-resource":
			if b, ok := val.(bool); ok {
				out.XEmbeddedResource = b
			} else {
				c.fail(p, "must be a boolean")
			}
		case "x-kubernetes-list-type":
			s := c.str(val, p)
			out.XListType = &s
		case "x-kubernetes-list-map-keys":
			out.XListMapKeys = c.strings(val, p)
		case "x-kubernetes-map-type":
			s := c.str(val, p)
			out.XMapType = &s
		case "x-kubernetes-validations":
			out.XValidations = c.validations(val, p)
		case "$ref":
			// Unreachable: handled above.
		default:
			if hint, ok := unsupportedHints[k]; ok {
				c.fail(p, "%s is not supported in CRD schemas: %s", k, hint)
			} else {
				c.fail(p, "unsupported keyword %q", k)
			}
		}
	}

	c.convertExclusive(m, path, "exclusiveMinimum", &out.Minimum, &out.ExclusiveMinimum, func(x, b float64) bool { return x >= b })
	c.convertExclusive(m, path, "exclusiveMaximum", &out.Maximum, &out.ExclusiveMaximum, func(x, b float64) bool { return x <= b })

	if typ == "object" {
		c.finishObject(m, path, out, additional, hasAdditional, required, refs)
	}
	if typ == "array" && out.Items == nil {
		if _, had := m["items"]; !had {
			c.fail(path, "an array needs items (CRD schemas must type the elements of every list)")
		}
	}
	return out
}

// finishObject applies the additionalProperties rules and checks required.
func (c *converter) finishObject(m map[string]any, path string, out *apiextensionsv1.JSONSchemaProps,
	additional any, hasAdditional bool, required []string, refs []string) {
	_, hasProps := m["properties"]
	p := child(path, "additionalProperties")
	if hasAdditional {
		switch a := additional.(type) {
		case bool:
			if a {
				out.XPreserveUnknownFields = ptr.To(true)
			}
		case map[string]any:
			if hasProps {
				c.fail(p, "an additionalProperties schema cannot be combined with properties in a CRD; use one or the other")
			} else if s := c.convert(a, p, refs); s != nil {
				out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: s}
			}
		default:
			c.fail(p, "additionalProperties must be a boolean or a schema")
		}
	} else if !hasProps {
		out.XPreserveUnknownFields = ptr.To(true)
	}

	preserve := out.XPreserveUnknownFields != nil && *out.XPreserveUnknownFields
	for _, name := range required {
		_, declared := out.Properties[name]
		_, declaredRaw := propertiesOf(m)[name]
		if !declared && !declaredRaw && !preserve && out.AdditionalProperties == nil {
			c.fail(child(path, "required"), "required property %q is not declared in properties; the API server would prune it and then reject every object", name)
		}
	}
	out.Required = required
}

func propertiesOf(m map[string]any) map[string]any {
	p, _ := m["properties"].(map[string]any)
	return p
}

// convertExclusive maps the draft-07 numeric exclusiveMinimum/Maximum to the
// OpenAPI boolean form. When both an inclusive and an exclusive bound are
// given, both apply in JSON Schema, so the tighter one is kept; tighter(x, b)
// reports whether the exclusive bound x is at least as tight as the inclusive
// bound b.
func (c *converter) convertExclusive(m map[string]any, path, key string, bound **float64, exclusive *bool, tighter func(x, b float64) bool) {
	val, ok := m[key]
	if !ok {
		return
	}
	p := child(path, key)
	switch v := val.(type) {
	case bool:
		// Draft-04 / OpenAPI form: a flag on minimum or maximum.
		if v && *bound == nil {
			c.fail(p, "%s: true needs %s", key, strings.ToLower(strings.TrimPrefix(key, "exclusive")))
		}
		*exclusive = v
	case json.Number:
		if x := c.number(v, p); x != nil && (*bound == nil || tighter(*x, **bound)) {
			*bound = x
			*exclusive = true
		}
	default:
		c.fail(p, "%s must be a number (or a boolean in the OpenAPI form)", key)
	}
}

const intOrString = "int-or-string"

// convertType works out the node's type, sets out.Type (or the int-or-string
// form) and returns the type name, intOrString, or "" for an untyped node.
func (c *converter) convertType(m map[string]any, path string, out *apiextensionsv1.JSONSchemaProps) string {
	typ := ""
	tp := child(path, "type")
	if t, ok := m["type"]; ok {
		switch t := t.(type) {
		case string:
			typ = t
		case []any:
			names := c.strings(t, tp)
			sorted := slices.Clone(names)
			sort.Strings(sorted)
			switch {
			case slices.Equal(sorted, []string{"integer", "string"}):
				typ = intOrString
			case len(names) == 1:
				typ = names[0]
			default:
				c.fail(tp, "type arrays are not supported, except [integer, string] (int-or-string)")
				return ""
			}
		default:
			c.fail(tp, "type must be a string")
			return ""
		}
	}
	switch typ {
	case "object", "array", "string", "integer", "number", "boolean", "", intOrString:
	case "null":
		c.fail(tp, "type null is not supported: CRD fields cannot hold null; omit the field instead")
		return ""
	default:
		c.fail(tp, "unknown type %q", typ)
		return ""
	}

	if v, ok := m["x-kubernetes-int-or-string"]; ok {
		p := child(path, "x-kubernetes-int-or-string")
		b, isBool := v.(bool)
		switch {
		case !isBool:
			c.fail(p, "must be a boolean")
		case b && typ != "" && typ != intOrString:
			c.fail(p, "x-kubernetes-int-or-string: true cannot be combined with type %q; omit type", typ)
			return ""
		case b:
			typ = intOrString
		}
	}
	anyOf, hasAnyOf := m["anyOf"]
	if hasAnyOf {
		p := child(path, "anyOf")
		switch {
		case !isIntOrStringAnyOf(anyOf):
			c.fail(p, "anyOf is not supported in CRD schemas: %s", unsupportedHints["anyOf"])
			return ""
		case typ != "" && typ != intOrString:
			c.fail(p, "the int-or-string anyOf cannot be combined with type %q; omit type", typ)
			return ""
		default:
			typ = intOrString
		}
	}

	switch typ {
	case intOrString:
		out.XIntOrString = true
		out.AnyOf = []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}
	case "":
		if b, _ := m["x-kubernetes-preserve-unknown-fields"].(bool); !b && !hasAnyOf {
			c.fail(path, "type is required (or \"x-kubernetes-preserve-unknown-fields\": true to accept any value)")
		}
	default:
		out.Type = typ
	}
	return typ
}

// isIntOrStringAnyOf reports whether v is exactly [{type: integer}, {type: string}],
// in either order.
func isIntOrStringAnyOf(v any) bool {
	list, ok := v.([]any)
	if !ok || len(list) != 2 {
		return false
	}
	var types []string
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok || len(m) != 1 {
			return false
		}
		t, ok := m["type"].(string)
		if !ok {
			return false
		}
		types = append(types, t)
	}
	sort.Strings(types)
	return slices.Equal(types, []string{"integer", "string"})
}

// refSiblings may stand beside $ref and override the target's value.
var refSiblings = set("description", "title", "default", "$comment")

// rootOnly may also stand beside a $ref at the schema root.
var rootOnly = set("$schema", "$id", "definitions", "$defs")

func (c *converter) convertRef(m map[string]any, refVal any, path string, refs []string) *apiextensionsv1.JSONSchemaProps {
	p := child(path, "$ref")
	ref, ok := refVal.(string)
	if !ok {
		c.fail(p, "$ref must be a string")
		return nil
	}
	if !strings.HasPrefix(ref, "#/definitions/") && !strings.HasPrefix(ref, "#/$defs/") {
		c.fail(p, "only local references into #/definitions/ or #/$defs/ are supported, not %q", ref)
		return nil
	}
	if slices.Contains(refs, ref) {
		c.fail(p, "$ref cycle: %s -> %s (CRD schemas cannot be recursive)", strings.Join(refs, " -> "), ref)
		return nil
	}
	for _, k := range sortedKeys(m) {
		if path == "#" && rootOnly[k] {
			continue
		}
		if k != "$ref" && !refSiblings[k] {
			c.fail(child(path, k), "%s beside $ref is not supported (only description, title and default may override the referenced schema)", k)
		}
	}
	target, ok := c.resolve(ref)
	if !ok {
		c.fail(p, "%s does not exist", ref)
		return nil
	}
	out := c.convert(target, ref, append(slices.Clone(refs), ref))
	if out == nil {
		return nil
	}
	if d, ok := m["description"]; ok {
		out.Description = c.str(d, child(path, "description"))
	} else if t, ok := m["title"]; ok {
		out.Description = c.str(t, child(path, "title"))
	}
	if d, ok := m["default"]; ok {
		out.Default = c.value(d, child(path, "default"), "default")
	}
	return out
}

// resolve follows a JSON pointer fragment from the root.
func (c *converter) resolve(ref string) (any, bool) {
	var cur any = c.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func (c *converter) validations(v any, path string) apiextensionsv1.ValidationRules {
	raw, err := json.Marshal(v)
	if err != nil {
		c.fail(path, "%v", err)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var rules apiextensionsv1.ValidationRules
	if err := dec.Decode(&rules); err != nil {
		c.fail(path, "must be a list of {rule, message, messageExpression, reason, fieldPath, optionalOldSelf}: %v", err)
		return nil
	}
	for i, r := range rules {
		if r.Rule == "" {
			c.fail(child(path, fmt.Sprint(i), "rule"), "rule is required")
		}
	}
	return rules
}

// value copies a JSON value (default, enum entry) verbatim.
func (c *converter) value(v any, path, what string) *apiextensionsv1.JSON {
	if v == nil {
		c.fail(path, "%s null is not supported: CRD fields cannot hold null", what)
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		c.fail(path, "%v", err)
		return nil
	}
	return &apiextensionsv1.JSON{Raw: raw}
}

func (c *converter) str(v any, path string) string {
	s, ok := v.(string)
	if !ok {
		c.fail(path, "must be a string, not %s", jsonKind(v))
	}
	return s
}

func (c *converter) strings(v any, path string) []string {
	list, ok := v.([]any)
	if !ok {
		c.fail(path, "must be an array of strings, not %s", jsonKind(v))
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			c.fail(child(path, fmt.Sprint(i)), "must be a string, not %s", jsonKind(e))
			continue
		}
		out = append(out, s)
	}
	return out
}

func (c *converter) number(v any, path string) *float64 {
	n, ok := v.(json.Number)
	if !ok {
		c.fail(path, "must be a number, not %s", jsonKind(v))
		return nil
	}
	f, err := n.Float64()
	if err != nil {
		c.fail(path, "%v", err)
		return nil
	}
	return &f
}

func (c *converter) count(v any, path string) *int64 {
	n, ok := v.(json.Number)
	if !ok {
		c.fail(path, "must be a non-negative integer, not %s", jsonKind(v))
		return nil
	}
	i, err := n.Int64()
	if err != nil || i < 0 {
		c.fail(path, "must be a non-negative integer, not %s", n)
		return nil
	}
	return &i
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func typeDesc(typ string) string {
	switch typ {
	case "":
		return "an untyped schema"
	case intOrString:
		return "int-or-string"
	}
	return "type " + typ
}

func firstDuplicate(ss []string) string {
	seen := map[string]bool{}
	for _, s := range ss {
		if seen[s] {
			return s
		}
		seen[s] = true
	}
	return ""
}

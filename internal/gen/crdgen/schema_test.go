package crdgen

import (
	"encoding/json"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// convertProperty converts a root schema whose only property "x" is the
// given schema, and returns the converted "x".
func convertProperty(t *testing.T, schema string) (*apiextensionsv1.JSONSchemaProps, error) {
	t.Helper()
	out, err := ConvertSchema([]byte(`{"type": "object", "properties": {"x": ` + schema + `}}`))
	if err != nil {
		return nil, err
	}
	x := out.Properties["x"]
	return &x, nil
}

// expectSchema compares a converted schema with the expected one written as
// YAML, through their JSON forms.
func expectSchema(g Gomega, got *apiextensionsv1.JSONSchemaProps, wantYAML string) {
	var want apiextensionsv1.JSONSchemaProps
	g.Expect(yaml.UnmarshalStrict([]byte(wantYAML), &want)).To(Succeed())
	gotJSON, err := json.Marshal(got)
	g.Expect(err).NotTo(HaveOccurred())
	wantJSON, err := json.Marshal(&want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(gotJSON)).To(MatchJSON(wantJSON))
}

func TestConvertKeywords(t *testing.T) {
	tests := []struct {
		name   string
		schema string // JSON Schema of property x
		want   string // expected CRD schema of x, as YAML
	}{
		// Scalars keep their type, description, default and string limits.
		{
			name:   "string keywords",
			schema: `{"type": "string", "description": "A tag.", "minLength": 1, "maxLength": 63, "pattern": "^[a-z]+$", "format": "hostname", "default": "abc"}`,
			want:   "{type: string, description: A tag., minLength: 1, maxLength: 63, pattern: '^[a-z]+$', format: hostname, default: abc}",
		},
		// enum values are copied in order.
		{
			name:   "enum",
			schema: `{"type": "string", "enum": ["Always", "IfNotPresent", "Never"]}`,
			want:   "{type: string, enum: [Always, IfNotPresent, Never]}",
		},
		// const becomes a one-value enum.
		{
			name:   "const",
			schema: `{"type": "integer", "const": 3}`,
			want:   "{type: integer, enum: [3]}",
		},
		// Inclusive bounds pass through.
		{
			name:   "integer bounds",
			schema: `{"type": "integer", "minimum": 0, "maximum": 10, "default": 1}`,
			want:   "{type: integer, minimum: 0, maximum: 10, default: 1}",
		},
		// Draft-07 numeric exclusive bounds become the OpenAPI boolean form.
		{
			name:   "draft-07 exclusive bounds",
			schema: `{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1.5}`,
			want:   "{type: number, minimum: 0, exclusiveMinimum: true, maximum: 1.5, exclusiveMaximum: true}",
		},
		// With both forms, the tighter bound wins: here the inclusive ones.
		{
			name:   "inclusive bound tighter than exclusive",
			schema: `{"type": "integer", "minimum": 5, "exclusiveMinimum": 3, "maximum": 7, "exclusiveMaximum": 9}`,
			want:   "{type: integer, minimum: 5, maximum: 7}",
		},
		// ... and here the exclusive ones (equal values: exclusive is tighter).
		{
			name:   "exclusive bound tighter than inclusive",
			schema: `{"type": "integer", "minimum": 1, "exclusiveMinimum": 3, "maximum": 9, "exclusiveMaximum": 9}`,
			want:   "{type: integer, minimum: 3, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: true}",
		},
		// The boolean (draft-04/OpenAPI) form is kept as it is.
		{
			name:   "boolean exclusive bounds",
			schema: `{"type": "integer", "minimum": 0, "exclusiveMinimum": true}`,
			want:   "{type: integer, minimum: 0, exclusiveMinimum: true}",
		},
		{
			name:   "multipleOf",
			schema: `{"type": "number", "multipleOf": 0.5}`,
			want:   "{type: number, multipleOf: 0.5}",
		},
		// false is a valid default and must not be lost as a zero value.
		{
			name:   "boolean default false",
			schema: `{"type": "boolean", "default": false}`,
			want:   "{type: boolean, default: false}",
		},
		// Integers beyond float64 precision are copied digit for digit.
		{
			name:   "big integer default",
			schema: `{"type": "integer", "default": 9007199254740993}`,
			want:   "{type: integer, default: 9007199254740993}",
		},
		// Object and array defaults are copied whole.
		{
			name:   "structured default",
			schema: `{"type": "object", "additionalProperties": {"type": "string"}, "default": {"b": "2", "a": "1"}}`,
			want:   "{type: object, additionalProperties: {type: string}, default: {a: '1', b: '2'}}",
		},
		// title is the description when there is none ...
		{
			name:   "title without description",
			schema: `{"type": "string", "title": "Tag"}`,
			want:   "{type: string, description: Tag}",
		},
		// ... and is dropped when there is one.
		{
			name:   "title with description",
			schema: `{"type": "string", "title": "Tag", "description": "Image tag."}`,
			want:   "{type: string, description: Image tag.}",
		},
		// $comment is a comment.
		{
			name:   "comment ignored",
			schema: `{"type": "string", "$comment": "internal note"}`,
			want:   "{type: string}",
		},
		// A one-element type array is that type.
		{
			name:   "single-type array",
			schema: `{"type": ["string"]}`,
			want:   "{type: string}",
		},
		// Arrays: items, bounds and list extensions; uniqueItems false is the
		// JSON Schema default and means nothing.
		{
			name:   "array",
			schema: `{"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3, "uniqueItems": false, "x-kubernetes-list-type": "set"}`,
			want:   "{type: array, items: {type: string}, minItems: 1, maxItems: 3, x-kubernetes-list-type: set}",
		},
		{
			name:   "list map",
			schema: `{"type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}`,
			want:   "{type: array, items: {type: object, required: [name], properties: {name: {type: string}}}, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name]}",
		},
		// Objects keep properties, required and property-count bounds.
		{
			name:   "object with required",
			schema: `{"type": "object", "required": ["a"], "minProperties": 1, "maxProperties": 2, "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}`,
			want:   "{type: object, required: [a], minProperties: 1, maxProperties: 2, properties: {a: {type: string}, b: {type: integer}}}",
		},
		// additionalProperties false: only the properties are listed.
		{
			name:   "additionalProperties false",
			schema: `{"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}`,
			want:   "{type: object, properties: {a: {type: string}}}",
		},
		// Absent with properties: the same (CRDs prune unknown fields).
		{
			name:   "additionalProperties absent with properties",
			schema: `{"type": "object", "properties": {"a": {"type": "string"}}}`,
			want:   "{type: object, properties: {a: {type: string}}}",
		},
		// Explicitly true with properties: unknown fields are kept.
		{
			name:   "additionalProperties true with properties",
			schema: `{"type": "object", "additionalProperties": true, "properties": {"a": {"type": "string"}}}`,
			want:   "{type: object, properties: {a: {type: string}}, x-kubernetes-preserve-unknown-fields: true}",
		},
		// A free-form object keeps whatever it is given.
		{
			name:   "object without properties",
			schema: `{"type": "object", "description": "Free form."}`,
			want:   "{type: object, description: Free form., x-kubernetes-preserve-unknown-fields: true}",
		},
		{
			name:   "object without properties, additionalProperties true",
			schema: `{"type": "object", "additionalProperties": true}`,
			want:   "{type: object, x-kubernetes-preserve-unknown-fields: true}",
		},
		// Nothing allowed: an always-empty object.
		{
			name:   "object without properties, additionalProperties false",
			schema: `{"type": "object", "additionalProperties": false}`,
			want:   "{type: object}",
		},
		// A schema for additional properties makes a map.
		{
			name:   "additionalProperties schema",
			schema: `{"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}`,
			want:   "{type: object, additionalProperties: {type: integer, minimum: 0}}",
		},
		// Kubernetes extensions pass through.
		{
			name:   "preserve-unknown-fields with properties",
			schema: `{"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-preserve-unknown-fields": true}`,
			want:   "{type: object, properties: {a: {type: string}}, x-kubernetes-preserve-unknown-fields: true}",
		},
		{
			name:   "untyped preserve-unknown-fields",
			schema: `{"description": "Any value.", "x-kubernetes-preserve-unknown-fields": true}`,
			want:   "{description: Any value., x-kubernetes-preserve-unknown-fields: true}",
		},
		{
			name:   "map type",
			schema: `{"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "atomic"}`,
			want:   "{type: object, additionalProperties: {type: string}, x-kubernetes-map-type: atomic}",
		},
		{
			name:   "embedded resource",
			schema: `{"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}`,
			want:   "{type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}",
		},
		{
			name:   "CEL validations",
			schema: `{"type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}}, "x-kubernetes-validations": [{"rule": "self.min <= self.max", "message": "min > max", "reason": "FieldValueInvalid", "fieldPath": ".min"}, {"rule": "self.min >= 0", "messageExpression": "'min is ' + string(self.min)", "optionalOldSelf": true}]}`,
			want:   `{type: object, properties: {min: {type: integer}, max: {type: integer}}, x-kubernetes-validations: [{rule: "self.min <= self.max", message: "min > max", reason: FieldValueInvalid, fieldPath: .min}, {rule: "self.min >= 0", messageExpression: "'min is ' + string(self.min)", optionalOldSelf: true}]}`,
		},
		// int-or-string in all its spellings, always written the same way.
		{
			name:   "int-or-string, Kubernetes form",
			schema: `{"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true, "default": "25%"}`,
			want:   "{anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true, default: 25%}",
		},
		{
			name:   "int-or-string, anyOf only, other order",
			schema: `{"anyOf": [{"type": "string"}, {"type": "integer"}], "pattern": "^[0-9]+%?$"}`,
			want:   "{anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true, pattern: '^[0-9]+%?$'}",
		},
		{
			name:   "int-or-string, type array",
			schema: `{"type": ["string", "integer"], "default": 1}`,
			want:   "{anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true, default: 1}",
		},
		{
			name:   "int-or-string, extension only",
			schema: `{"x-kubernetes-int-or-string": true, "minimum": 0}`,
			want:   "{anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true, minimum: 0}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := convertProperty(t, tt.schema)
			g.Expect(err).NotTo(HaveOccurred())
			expectSchema(g, got, tt.want)
		})
	}
}

func TestConvertRefs(t *testing.T) {
	tests := []struct {
		name   string
		schema string // whole root schema
		want   string // expected CRD schema of the root, as YAML
	}{
		// A reference is replaced by a copy of its target.
		{
			name:   "definitions",
			schema: `{"type": "object", "definitions": {"port": {"type": "integer", "minimum": 1}}, "properties": {"p": {"$ref": "#/definitions/port"}}}`,
			want:   "{type: object, properties: {p: {type: integer, minimum: 1}}}",
		},
		{
			name:   "$defs",
			schema: `{"type": "object", "$defs": {"port": {"type": "integer"}}, "properties": {"p": {"$ref": "#/$defs/port"}}}`,
			want:   "{type: object, properties: {p: {type: integer}}}",
		},
		// description, title and default beside $ref override the target's.
		{
			name:   "overrides beside $ref",
			schema: `{"type": "object", "definitions": {"port": {"type": "integer", "description": "A port.", "default": 80}}, "properties": {"a": {"$ref": "#/definitions/port", "description": "HTTP port.", "default": 8080}, "b": {"$ref": "#/definitions/port", "title": "Other port"}, "c": {"$ref": "#/definitions/port"}}}`,
			want:   "{type: object, properties: {a: {type: integer, description: HTTP port., default: 8080}, b: {type: integer, description: Other port, default: 80}, c: {type: integer, description: A port., default: 80}}}",
		},
		// References inside definitions are followed, as are references to
		// deeper pointers and names needing escapes.
		{
			name:   "nested references",
			schema: `{"type": "object", "definitions": {"a/b": {"type": "object", "properties": {"q": {"$ref": "#/definitions/q"}}}, "q": {"type": "object", "properties": {"name": {"type": "string"}}}}, "properties": {"one": {"$ref": "#/definitions/a~1b"}, "two": {"type": "array", "items": {"$ref": "#/definitions/q/properties/name"}}}}`,
			want:   "{type: object, properties: {one: {type: object, properties: {q: {type: object, properties: {name: {type: string}}}}}, two: {type: array, items: {type: string}}}}",
		},
		// A root that is itself a reference.
		{
			name:   "root reference",
			schema: `{"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/definitions/values", "definitions": {"values": {"type": "object", "properties": {"a": {"type": "string"}}}}}`,
			want:   "{type: object, properties: {a: {type: string}}}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ConvertSchema([]byte(tt.schema))
			g.Expect(err).NotTo(HaveOccurred())
			expectSchema(g, got, tt.want)
		})
	}
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema string            // whole root schema
		want   map[string]string // path -> substring of its message; exactly these paths fail
	}{
		// Alternatives and combinations CRDs cannot express.
		{
			name:   "oneOf",
			schema: `{"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}`,
			want:   map[string]string{"#/properties/a": "type is required", "#/properties/a/oneOf": "oneOf is not supported"},
		},
		{
			name:   "allOf",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "allOf": [{"minLength": 1}]}}}`,
			want:   map[string]string{"#/properties/a/allOf": "allOf is not supported"},
		},
		{
			name:   "not",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "not": {"enum": ["x"]}}}}`,
			want:   map[string]string{"#/properties/a/not": "not is not supported"},
		},
		// anyOf is only accepted as the int-or-string pattern.
		{
			name:   "anyOf other than int-or-string",
			schema: `{"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "boolean"}]}}}`,
			want:   map[string]string{"#/properties/a/anyOf": "only the int-or-string pattern"},
		},
		{
			name:   "int-or-string anyOf with extra constraints in a branch",
			schema: `{"type": "object", "properties": {"a": {"anyOf": [{"type": "string", "pattern": "x"}, {"type": "integer"}]}}}`,
			want:   map[string]string{"#/properties/a/anyOf": "only the int-or-string pattern"},
		},
		{
			name:   "int-or-string with a type",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "x-kubernetes-int-or-string": true}}}`,
			want:   map[string]string{"#/properties/a/x-kubernetes-int-or-string": "cannot be combined with type"},
		},
		// CRDs forbid uniqueItems: true.
		{
			name:   "uniqueItems true",
			schema: `{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}}`,
			want:   map[string]string{"#/properties/a/uniqueItems": "x-kubernetes-list-type"},
		},
		// Nulls cannot be stored.
		{
			name:   "type null",
			schema: `{"type": "object", "properties": {"a": {"type": "null"}}}`,
			want:   map[string]string{"#/properties/a/type": "type null is not supported"},
		},
		{
			name:   "nullable type array",
			schema: `{"type": "object", "properties": {"a": {"type": ["string", "null"]}}}`,
			want:   map[string]string{"#/properties/a/type": "type arrays are not supported"},
		},
		{
			name:   "default null",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "default": null}}}`,
			want:   map[string]string{"#/properties/a/default": "default null"},
		},
		{
			name:   "unknown type",
			schema: `{"type": "object", "properties": {"a": {"type": "float"}}}`,
			want:   map[string]string{"#/properties/a/type": `unknown type "float"`},
		},
		// Other draft-07 keywords CRDs have no counterpart for.
		{
			name:   "patternProperties",
			schema: `{"type": "object", "properties": {"a": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}}}}`,
			want:   map[string]string{"#/properties/a/patternProperties": "patternProperties is not supported"},
		},
		{
			name:   "if/then/else",
			schema: `{"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"required": ["c"]}}`,
			want:   map[string]string{"#/if": "if is not supported", "#/then": "then is not supported", "#/else": "else is not supported"},
		},
		{
			name:   "tuple items",
			schema: `{"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}`,
			want:   map[string]string{"#/properties/a/items": "tuple validation"},
		},
		{
			name:   "examples",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "examples": ["x"]}}}`,
			want:   map[string]string{"#/properties/a/examples": "examples is not supported"},
		},
		// A typo or an unknown extension is an error, not ignored.
		{
			name:   "unknown keyword",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "maxlength": 3}}}`,
			want:   map[string]string{"#/properties/a/maxlength": `unsupported keyword "maxlength"`},
		},
		// Boolean schemas and missing types.
		{
			name:   "boolean schema",
			schema: `{"type": "object", "properties": {"a": true}}`,
			want:   map[string]string{"#/properties/a": "boolean schemas are not supported"},
		},
		{
			name:   "missing type",
			schema: `{"type": "object", "properties": {"a": {"description": "anything"}}}`,
			want:   map[string]string{"#/properties/a": "type is required"},
		},
		{
			name:   "array without items",
			schema: `{"type": "object", "properties": {"a": {"type": "array"}}}`,
			want:   map[string]string{"#/properties/a": "an array needs items"},
		},
		{
			name:   "root is not an object",
			schema: `{"type": "string"}`,
			want:   map[string]string{"#": "root schema must have type object"},
		},
		// Keywords that do not apply to the type are mistakes.
		{
			name:   "string keyword on integer",
			schema: `{"type": "object", "properties": {"a": {"type": "integer", "maxLength": 3}}}`,
			want:   map[string]string{"#/properties/a/maxLength": "applies to strings, not to type integer"},
		},
		{
			name:   "object keyword on array",
			schema: `{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}, "properties": {}}}}`,
			want:   map[string]string{"#/properties/a/properties": "applies to objects, not to type array"},
		},
		// Bad values of supported keywords.
		{
			name:   "invalid pattern",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)"}}}`,
			want:   map[string]string{"#/properties/a/pattern": "not a valid regular expression"},
		},
		{
			name:   "negative length",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "minLength": -1}}}`,
			want:   map[string]string{"#/properties/a/minLength": "non-negative integer"},
		},
		{
			name:   "empty enum",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "enum": []}}}`,
			want:   map[string]string{"#/properties/a/enum": "non-empty array"},
		},
		{
			name:   "validation rule with unknown field",
			schema: `{"type": "object", "x-kubernetes-validations": [{"rule": "true", "msg": "x"}]}`,
			want:   map[string]string{"#/x-kubernetes-validations": `unknown field "msg"`},
		},
		// additionalProperties variants CRDs cannot express.
		{
			name:   "properties and additionalProperties schema",
			schema: `{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}`,
			want:   map[string]string{"#/properties/a/additionalProperties": "cannot be combined with properties"},
		},
		{
			name:   "required but not declared",
			schema: `{"type": "object", "additionalProperties": false, "required": ["a", "b"], "properties": {"a": {"type": "string"}}}`,
			want:   map[string]string{"#/required": `required property "b" is not declared`},
		},
		// $ref problems.
		{
			name:   "self-referencing definition",
			schema: `{"type": "object", "definitions": {"node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/node"}}}}, "properties": {"tree": {"$ref": "#/definitions/node"}}}`,
			want:   map[string]string{"#/definitions/node/properties/child/$ref": "$ref cycle: #/definitions/node -> #/definitions/node"},
		},
		{
			name:   "indirect cycle",
			schema: `{"type": "object", "definitions": {"a": {"type": "array", "items": {"$ref": "#/definitions/b"}}, "b": {"type": "object", "additionalProperties": {"$ref": "#/definitions/a"}}}, "properties": {"x": {"$ref": "#/definitions/a"}}}`,
			want:   map[string]string{"#/definitions/b/additionalProperties/$ref": "$ref cycle: #/definitions/a -> #/definitions/b -> #/definitions/a"},
		},
		{
			name:   "remote reference",
			schema: `{"type": "object", "properties": {"a": {"$ref": "https://example.com/schema.json#/definitions/x"}}}`,
			want:   map[string]string{"#/properties/a/$ref": "only local references"},
		},
		{
			name:   "missing target",
			schema: `{"type": "object", "properties": {"a": {"$ref": "#/definitions/nope"}}}`,
			want:   map[string]string{"#/properties/a/$ref": "#/definitions/nope does not exist"},
		},
		{
			name:   "constraint beside $ref",
			schema: `{"type": "object", "definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 3}}}`,
			want:   map[string]string{"#/properties/a/maxLength": "beside $ref is not supported"},
		},
		// Errors inside a definition are reported once, at the definition,
		// however often it is referenced.
		{
			name:   "error in a shared definition",
			schema: `{"type": "object", "definitions": {"s": {"type": "string", "oneOf": []}}, "properties": {"a": {"$ref": "#/definitions/s"}, "b": {"$ref": "#/definitions/s"}}}`,
			want:   map[string]string{"#/definitions/s/oneOf": "oneOf is not supported"},
		},
		{
			name:   "nested definitions",
			schema: `{"type": "object", "properties": {"a": {"type": "object", "definitions": {}}}}`,
			want:   map[string]string{"#/properties/a/definitions": "only supported at the schema root"},
		},
		// Property names are escaped in paths as JSON pointers require.
		{
			name:   "escaped path",
			schema: `{"type": "object", "properties": {"app.kubernetes.io/name": {"type": "string", "foo": 1}}}`,
			want:   map[string]string{"#/properties/app.kubernetes.io~1name/foo": `unsupported keyword "foo"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := ConvertSchema([]byte(tt.schema))
			var errs SchemaErrors
			g.Expect(errors.As(err, &errs)).To(BeTrue(), "want SchemaErrors, got %v", err)
			got := map[string]string{}
			for _, e := range errs {
				g.Expect(got).NotTo(HaveKey(e.Path), "two errors at %s: %v", e.Path, err)
				got[e.Path] = e.Msg
			}
			g.Expect(got).To(HaveLen(len(tt.want)), "%v", err)
			for path, msg := range tt.want {
				g.Expect(got).To(HaveKeyWithValue(path, ContainSubstring(msg)), "%v", err)
			}
		})
	}
}

// All problems are reported in one run, ordered by path, each line naming
// its path.
func TestConvertReportsAllErrors(t *testing.T) {
	g := NewWithT(t)
	_, err := ConvertSchema([]byte(`{"type": "object", "properties": {"b": {"type": "string", "not": {}}, "a": {"oneOf": [], "type": "string"}}}`))
	g.Expect(err).To(MatchError(
		"2 schema problems:\n" +
			"  #/properties/a/oneOf: oneOf is not supported in CRD schemas: CRD schemas cannot express alternatives; use a single type, or x-kubernetes-validations (CEL) for the constraint\n" +
			"  #/properties/b/not: not is not supported in CRD schemas: use x-kubernetes-validations (CEL) for the constraint"))
}

func TestConvertInvalidJSON(t *testing.T) {
	g := NewWithT(t)
	_, err := ConvertSchema([]byte(`{"type": "object",}`))
	g.Expect(err).To(MatchError(ContainSubstring("parsing JSON")))
	_, err = ConvertSchema([]byte(`{"type": "object"} {}`))
	g.Expect(err).To(MatchError(ContainSubstring("after the top-level value")))
	_, err = ConvertSchema([]byte(`[]`))
	g.Expect(err).To(MatchError("#: the schema must be a JSON object"))
}

package helmcharts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Chart-independent checks of a chart's values.schema.json, run for every
// chart by TestChartSchemas. Both return human-readable problems; none
// means the check passed.

// TestChartSchemas checks every chart under helm-charts: values.yaml and
// the schema agree, and the schema keeps the CRD generator's contract.
func TestChartSchemas(t *testing.T) {
	charts, err := filepath.Glob("*/values.schema.json")
	if err != nil || len(charts) == 0 {
		t.Fatalf("no chart schemas found: %v", err)
	}
	for _, schemaPath := range charts {
		dir := filepath.Dir(schemaPath)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			values := loadJSONish(t, filepath.Join(dir, "values.yaml"))
			schema := loadJSONish(t, schemaPath)
			var problems []string
			for _, p := range schemaValuesProblems(values, schema, operatorDefaults(t, filepath.Base(dir))) {
				problems = append(problems, "values: "+p)
			}
			for _, p := range schemaContractProblems(schema) {
				problems = append(problems, "contract: "+p)
			}
			if len(problems) > 0 {
				sort.Strings(problems)
				t.Errorf("%s:\n  %s", schemaPath, strings.Join(problems, "\n  "))
			}
		})
	}
}

// operatorDefaults returns the values the operator defaults for the chart
// in helm-charts/<chart> (".image.repository"): the fields of the image
// blocks its watches.yaml entry gives imageDefaults.
func operatorDefaults(t *testing.T, chart string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../watches.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		Chart         string            `json:"chart"`
		ImageDefaults map[string]string `json:"imageDefaults"`
	}
	if err := yaml.Unmarshal(b, &entries); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		if filepath.Base(e.Chart) != chart {
			continue
		}
		for block := range e.ImageDefaults {
			for _, f := range []string{"repository", "tag", "digest"} {
				out["."+block+"."+f] = true
			}
		}
	}
	return out
}

// schemaValuesProblems checks that values.yaml and the schema agree: every
// leaf of values.yaml has a schema property whose default is exactly its
// value, and every schema property is in values.yaml, except required ones,
// which must have neither a value nor a default (a default would make them
// never really required in the CRD). The fields the operator defaults
// (operatorDefaults) are the exception: they must have no schema default,
// or the API server would write the chart's value into every resource
// and the operator could not tell an unset image from a chosen one.
func schemaValuesProblems(values, schema map[string]interface{}, operatorDefaulted map[string]bool) []string {
	var problems []string
	var walk func(path string, vals map[string]interface{}, node map[string]interface{})
	walk = func(path string, vals map[string]interface{}, node map[string]interface{}) {
		props, _ := node["properties"].(map[string]interface{})
		required := map[string]bool{}
		reqList, _ := node["required"].([]interface{})
		for _, r := range reqList {
			required[fmt.Sprint(r)] = true
		}
		for k, v := range vals {
			p := path + "." + k
			prop, ok := props[k].(map[string]interface{})
			switch {
			case !ok:
				problems = append(problems, p+": in values.yaml but not in the schema")
				continue
			case required[k]:
				problems = append(problems, p+": required, so it must not have a value in values.yaml")
				continue
			}
			if sub, isMap := v.(map[string]interface{}); isMap && prop["properties"] != nil {
				walk(p, sub, prop)
				continue
			}
			def, has := prop["default"]
			switch {
			case operatorDefaulted[p]:
				if has {
					problems = append(problems, p+": defaulted by the operator (watches.yaml imageDefaults), so the schema must have no default")
				}
			case !has:
				problems = append(problems, p+": schema has no default")
			case !reflect.DeepEqual(def, v):
				problems = append(problems, fmt.Sprintf("%s: schema default %#v, values.yaml %#v", p, def, v))
			}
		}
		for k, prop := range props {
			if _, ok := vals[k]; ok {
				continue
			}
			if !required[k] {
				problems = append(problems, path+"."+k+": in the schema but not in values.yaml")
			}
			if _, has := prop.(map[string]interface{})["default"]; has {
				problems = append(problems, path+"."+k+": required with a default, so never really required")
			}
		}
	}
	walk("", values, schema)
	return problems
}

// schemaContractProblems checks that a schema stays inside the subset the
// CRD generator supports and is complete: every property described, every
// object closed (additionalProperties false, a value schema, or explicitly
// free-form), known types only, int-or-string only in its one form.
func schemaContractProblems(schema map[string]interface{}) []string {
	allowed := map[string]bool{}
	for _, k := range []string{"$schema", "description", "type", "default", "enum", "minimum", "maximum",
		"minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "required", "properties", "items",
		"additionalProperties", "$ref", "definitions", "anyOf",
		"x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations",
		"x-kubernetes-list-type", "x-kubernetes-list-map-keys"} {
		allowed[k] = true
	}
	types := map[string]bool{"object": true, "array": true, "string": true, "integer": true, "number": true, "boolean": true}
	intOrString := []interface{}{map[string]interface{}{"type": "integer"}, map[string]interface{}{"type": "string"}}

	var problems []string
	var check func(path string, node map[string]interface{}, isProperty bool)
	check = func(path string, node map[string]interface{}, isProperty bool) {
		bad := func(format string, args ...interface{}) {
			problems = append(problems, path+": "+fmt.Sprintf(format, args...))
		}
		for k := range node {
			if !allowed[k] {
				bad("keyword %q is outside the CRD generator's subset", k)
			}
		}
		if d, _ := node["description"].(string); isProperty && len(strings.TrimSpace(d)) < 10 {
			bad("needs a real description")
		}
		if f, ok := node["format"]; ok && f != "hostname" {
			bad("format %v is not one the CRD uses", f)
		}
		if anyOf, ok := node["anyOf"]; ok {
			if node["x-kubernetes-int-or-string"] != true || !reflect.DeepEqual(anyOf, intOrString) || node["type"] != nil {
				bad("anyOf is only allowed as the int-or-string form without type")
			}
		} else if node["$ref"] == nil {
			if t, _ := node["type"].(string); !types[t] {
				bad("type %v not allowed", node["type"])
			}
		}
		if node["type"] == "object" {
			props, hasProps := node["properties"].(map[string]interface{})
			ap, hasAP := node["additionalProperties"]
			preserve := node["x-kubernetes-preserve-unknown-fields"] == true
			switch {
			case hasProps && ap != false:
				bad("object with properties must set additionalProperties: false")
			case !hasProps && !hasAP && !preserve:
				bad("free-form object needs additionalProperties or x-kubernetes-preserve-unknown-fields")
			}
			for name, p := range props {
				check(path+"."+name, p.(map[string]interface{}), true)
			}
			if apSchema, ok := ap.(map[string]interface{}); ok {
				check(path+".<key>", apSchema, false)
			}
		}
		if items, ok := node["items"].(map[string]interface{}); ok {
			check(path+"[]", items, false)
		}
		if defs, ok := node["definitions"].(map[string]interface{}); ok {
			for name, d := range defs {
				check(path+"#/definitions/"+name, d.(map[string]interface{}), true)
			}
		}
	}
	check("", schema, false)
	return problems
}

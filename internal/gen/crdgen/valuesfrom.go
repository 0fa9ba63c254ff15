package crdgen

import (
	"fmt"
	"os"
	"path"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/apikinds"
	"github.com/acme/platform-operator/internal/operator/release"
)

// valuesFromDescription is what `kubectl explain <kind>.spec.valuesFrom`
// says.
const valuesFromDescription = "Secrets and ConfigMaps of this object's namespace to take chart values from, " +
	"so that a password or token need not be written in the spec. Entries are merged over the spec's values in order " +
	"(a later one wins, and every entry wins over the spec, whose defaults the API server fills in). valuesFrom itself is not passed to the chart. " +
	"The operator reads the objects with its own identity; the admission webhook refuses an object the requesting user cannot get. " +
	"A change of a named key upgrades the release once (a new revision). The values are stored in the Helm release record, as Helm stores every value."

// ValuesFromSchema is the schema of the reserved spec field valuesFrom
// (release.ValuesFromField) that every namespaced kind's CRD declares.
// An entry has no namespace: unknown fields are pruned, and refused by
// `kubectl apply`'s strict field validation.
func ValuesFromSchema() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Type:        "array",
		Description: valuesFromDescription,
		MaxItems:    ptr.To[int64](64),
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type:     "object",
			Required: []string{"kind", "name"},
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"kind": {
					Type:        "string",
					Description: "Kind of the object: Secret or ConfigMap.",
					Enum:        []apiextensionsv1.JSON{{Raw: []byte(`"Secret"`)}, {Raw: []byte(`"ConfigMap"`)}},
				},
				"name": {
					Type: "string", Description: "Name of the object, in this object's namespace.",
					MinLength: ptr.To[int64](1), MaxLength: ptr.To[int64](253),
				},
				"valuesKey": {
					Type:        "string",
					Description: "Key of the object's data; default values.yaml.",
					MaxLength:   ptr.To[int64](253),
				},
				"targetPath": {
					Type: "string",
					Description: "Dotted path of one chart value (a.b.c; \\. escapes a dot in a key) that the key's content is set at, " +
						"as a string. Without it the key holds YAML values, merged at the root.",
					MaxLength: ptr.To[int64](250),
				},
				"optional": {
					Type:        "boolean",
					Description: "Skip a missing object or key instead of refusing the object (the default).",
				},
			},
		}},
	}
}

// addValuesFrom declares valuesFrom in spec, the converted chart schema,
// for a namespaced kind. A cluster-scoped object has no namespace to read
// from, so its kind does not offer valuesFrom.
func addValuesFrom(k *apikinds.Kind, spec *apiextensionsv1.JSONSchemaProps) {
	if k.Scope == apiextensionsv1.ClusterScoped {
		return
	}
	if spec.Properties == nil {
		spec.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	spec.Properties[release.ValuesFromField] = ValuesFromSchema()
}

// checkReserved refuses a chart that has a top-level value of the name
// valuesFrom reserves, in its schema or its values.yaml: the operator
// would take it for its own field and never pass it to the chart.
func checkReserved(root string, k *apikinds.Kind, spec *apiextensionsv1.JSONSchemaProps) error {
	if _, ok := spec.Properties[release.ValuesFromField]; ok {
		return fmt.Errorf("%s declares a top-level value %q, which the operator reserves for "+
			"taking values from Secrets and ConfigMaps (docs/adding-a-kind.md); rename the chart's value", k.SchemaPath(), release.ValuesFromField)
	}
	valuesFile := path.Join(k.Chart, "values.yaml")
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(valuesFile)))
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	var values map[string]interface{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return fmt.Errorf("%s: %w", valuesFile, err)
	}
	if _, ok := values[release.ValuesFromField]; ok {
		return fmt.Errorf("%s has a top-level value %q, which the operator reserves for taking values from Secrets "+
			"and ConfigMaps (docs/adding-a-kind.md); rename the chart's value", valuesFile, release.ValuesFromField)
	}
	return nil
}

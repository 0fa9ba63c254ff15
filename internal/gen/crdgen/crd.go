package crdgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// Standard descriptions of the fields every object has, as Kubernetes'
// own types word them.
const (
	apiVersionDescription = "APIVersion defines the versioned schema of this representation of an object. " +
		"Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. " +
		"More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	kindDescription = "Kind is a string value representing the REST resource this object represents. " +
		"Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. " +
		"More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
	statusDescription = "Status is written by the operator's Helm runtime and must not be set by users. " +
		"It holds conditions (Initialized, Deployed, Ready, ReleaseFailed, Irreconcilable), observedGeneration and deployedRelease " +
		"(the name and rendered manifest of the installed Helm release)."
)

// BuildCRD wraps a converted chart values schema (see ConvertSchema) into the
// kind's CustomResourceDefinition. It does not validate the result; see
// ValidateCRD.
func BuildCRD(k *apikinds.Kind, spec *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	spec = spec.DeepCopy()
	chart := path.Base(k.Chart)
	desc := fmt.Sprintf("Values for the %s chart; the operator passes them to Helm unchanged as the values "+
		"of this object's release (chart source: %s).", chart, k.Chart)
	if spec.Description != "" {
		desc += " " + spec.Description
	}
	spec.Description = desc
	// A chart with required values needs a spec: without this, an object
	// with no spec at all would skip the required check and fail in Helm.
	// Any other chart's object may leave its spec out: the API server
	// makes it {}, the chart's defaults, as the admission check reads it,
	// where the reconciler would find no values to pass.
	var required []string
	if len(spec.Required) > 0 {
		required = []string{"spec"}
	} else {
		spec.Default = &apiextensionsv1.JSON{Raw: []byte("{}")}
	}

	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{
			APIVersion: apiextensionsv1.SchemeGroupVersion.String(),
			Kind:       "CustomResourceDefinition",
		},
		ObjectMeta: metav1.ObjectMeta{Name: k.CRDName()},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: k.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind:       k.Kind,
				ListKind:   k.ListKind,
				Plural:     k.Plural,
				Singular:   k.Singular,
				ShortNames: k.ShortNames,
				Categories: k.Categories,
			},
			Scope: k.Scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    k.Version,
				Served:  true,
				Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type:         "object",
						Description:  k.Description,
						Required:     required,
						XValidations: apiextensionsv1.ValidationRules{NameRule(k.NameLimit)},
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"apiVersion": {Type: "string", Description: apiVersionDescription},
							"kind":       {Type: "string", Description: kindDescription},
							"metadata": {
								Type: "object",
								// Declared so the name rule can point its error at it.
								Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}},
							},
							"spec": *spec,
							"status": {
								Type:                   "object",
								Description:            statusDescription,
								XPreserveUnknownFields: ptr.To(true),
							},
						},
					},
				},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				},
				AdditionalPrinterColumns: k.PrinterColumns,
			}},
		},
	}
}

// dns1035LabelPattern is what apimachinery's IsDNS1035Label checks, as a CEL
// (RE2) pattern.
const dns1035LabelPattern = `^[a-z]([-a-z0-9]*[a-z0-9])?$`

// NameRule is the CEL rule, on the CRD's top-level schema, that refuses a
// metadata.name the kind's chart cannot be installed under. Rules at the top
// level may read self.metadata.name; the API server evaluates them on create
// (after generateName is filled in) and on update (names cannot change).
// The message states the limit and the reason, as the user reads it after
// `kubectl apply`.
func NameRule(l *apikinds.NameLimit) apiextensionsv1.ValidationRule {
	rule := fmt.Sprintf("self.metadata.name.size() <= %d", l.MaxLength)
	msg := fmt.Sprintf("metadata.name must be at most %d characters", l.MaxLength)
	if l.DNS1035Label != nil && *l.DNS1035Label {
		rule += fmt.Sprintf(" && self.metadata.name.matches('%s')", dns1035LabelPattern)
		msg += " and a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit)"
	}
	return apiextensionsv1.ValidationRule{
		Rule:      rule,
		Message:   msg + ": " + strings.TrimSpace(l.Reason),
		FieldPath: ".metadata.name",
		Reason:    ptr.To(apiextensionsv1.FieldValueInvalid),
	}
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// ValidateCRD checks crd the way the API server checks a CRD on creation
// (structural schema, defaults, CEL rules, names, printer columns), and that
// printer columns reading .spec name fields the schema declares.
func ValidateCRD(crd *apiextensionsv1.CustomResourceDefinition) error {
	// The API server defaults the v1 object, converts it to the internal
	// version and validates that; do the same.
	v1 := crd.DeepCopy()
	scheme.Default(v1)
	var internal apiextensions.CustomResourceDefinition
	if err := scheme.Convert(v1, &internal, nil); err != nil {
		return fmt.Errorf("converting %s to the internal version: %w", crd.Name, err)
	}
	var problems []string
	for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), &internal) {
		problems = append(problems, e.Error())
	}
	for _, v := range crd.Spec.Versions {
		for i, col := range v.AdditionalPrinterColumns {
			if err := checkColumnPath(v.Schema.OpenAPIV3Schema, col.JSONPath); err != nil {
				problems = append(problems, fmt.Sprintf("spec.versions[%s].additionalPrinterColumns[%d].jsonPath: %q: %v", v.Name, i, col.JSONPath, err))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("CRD %s is invalid:\n  %s", crd.Name, strings.Join(problems, "\n  "))
	}
	return nil
}

var simpleFieldPath = regexp.MustCompile(`^(\.[A-Za-z_][A-Za-z0-9_-]*)+$`)

// checkColumnPath makes sure a column reading .spec.a.b refers to a declared
// field, so renaming a chart value cannot leave an always-empty column. Other
// paths (status, metadata, filters) are not checked.
func checkColumnPath(root *apiextensionsv1.JSONSchemaProps, jsonPath string) error {
	if !strings.HasPrefix(jsonPath, ".spec.") || !simpleFieldPath.MatchString(jsonPath) {
		return nil
	}
	node := root
	fields := strings.Split(strings.TrimPrefix(jsonPath, "."), ".")
	for i, f := range fields {
		switch {
		case node.Properties != nil:
			p, ok := node.Properties[f]
			if !ok {
				if node.XPreserveUnknownFields != nil && *node.XPreserveUnknownFields {
					return nil
				}
				return fmt.Errorf("%s has no field %q", "."+strings.Join(fields[:i], "."), f)
			}
			node = &p
		case node.AdditionalProperties != nil && node.AdditionalProperties.Schema != nil:
			node = node.AdditionalProperties.Schema
		default:
			if node.XPreserveUnknownFields != nil && *node.XPreserveUnknownFields {
				return nil
			}
			return fmt.Errorf("%s has no field %q", "."+strings.Join(fields[:i], "."), f)
		}
	}
	return nil
}

// RenderCRD renders crd as the content of a generated file: the header
// naming the source schema, then YAML with sorted keys and without the empty
// status and creationTimestamp a CRD object carries.
func RenderCRD(crd *apiextensionsv1.CustomResourceDefinition, source string) ([]byte, error) {
	raw, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if raw, err = json.Marshal(obj); err != nil {
		return nil, err
	}
	body, err := yaml.JSONToYAML(raw)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s from %s. DO NOT EDIT.\n---\n", generatedHeader, source)
	buf.Write(body)
	return buf.Bytes(), nil
}

// generatedHeader starts every file crdgen writes; files starting with it
// belong to crdgen and are rewritten or deleted by it.
const generatedHeader = "# Code generated by crdgen"

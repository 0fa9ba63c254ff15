package crdgen

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

func testKind() *apikinds.Kind {
	kinds, err := apikinds.ParseKinds([]byte(`
- chart: charts/demo
  group: demo.example.com
  version: v1beta1
  kind: Demo
  plural: demos
  scope: Namespaced
  description: Demo is a test kind.
  printerColumns:
  - {name: Replicas, type: integer, jsonPath: .spec.replicaCount}
  nameLimit: {maxLength: 40, dns1035Label: true, reason: it names the release.}
`))
	if err != nil {
		panic(err)
	}
	return &kinds[0]
}

func demoSchema(t *testing.T) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "charts", "demo", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ConvertSchema(data)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The fixture chart uses every supported construct; its CRD must pass the
// API server's validation, and have the fixed shape around the spec.
func TestBuildCRDPassesValidation(t *testing.T) {
	g := NewWithT(t)
	crd := BuildCRD(testKind(), demoSchema(t))
	g.Expect(ValidateCRD(crd)).To(Succeed())

	g.Expect(crd.Name).To(Equal("demos.demo.example.com"))
	g.Expect(crd.Spec.Names.ListKind).To(Equal("DemoList"))
	g.Expect(crd.Spec.Names.Singular).To(Equal("demo"))
	g.Expect(crd.Spec.Versions).To(HaveLen(1))
	v := crd.Spec.Versions[0]
	g.Expect(v.Served).To(BeTrue())
	g.Expect(v.Storage).To(BeTrue())
	g.Expect(v.Subresources.Status).NotTo(BeNil())
	root := v.Schema.OpenAPIV3Schema
	g.Expect(root.Description).To(Equal("Demo is a test kind."))
	g.Expect(root.Properties).To(HaveKey("apiVersion"))
	g.Expect(root.Properties).To(HaveKey("kind"))
	g.Expect(root.Properties).To(HaveKey("metadata"))
	spec := root.Properties["spec"]
	g.Expect(spec.Description).To(HavePrefix("Values for the demo chart; "))
	g.Expect(spec.Description).To(HaveSuffix("Demo fixture covering every supported construct."))
	g.Expect(spec.Required).To(Equal([]string{"image"}))
	g.Expect(root.Required).To(Equal([]string{"spec"}), "a chart with required values needs a spec")
	g.Expect(spec.Default).To(BeNil())
	status := root.Properties["status"]
	g.Expect(status.Type).To(Equal("object"))
	g.Expect(*status.XPreserveUnknownFields).To(BeTrue())
	g.Expect(status.Description).To(ContainSubstring("Helm runtime"))
}

// ValidateCRD reports what the API server would refuse, so generation fails
// instead of `kubectl apply`.
// A chart without required values: an object may leave its spec out, and
// the API server makes it {}.
func TestBuildCRDDefaultsAnOptionalSpec(t *testing.T) {
	g := NewWithT(t)
	schema := demoSchema(t)
	schema.Required = nil
	crd := BuildCRD(testKind(), schema)
	g.Expect(ValidateCRD(crd)).To(Succeed())
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	g.Expect(root.Required).To(BeEmpty())
	g.Expect(root.Properties["spec"].Default).NotTo(BeNil())
	g.Expect(string(root.Properties["spec"].Default.Raw)).To(Equal("{}"))
}

func TestValidateCRDRejects(t *testing.T) {
	tests := []struct {
		name   string
		schema string // chart values schema
		kind   func(k *apikinds.Kind)
		want   string // substring of the error
	}{
		// A default that does not match its own schema.
		{
			name:   "default of the wrong type",
			schema: `{"type": "object", "properties": {"replicaCount": {"type": "integer", "default": "three"}}}`,
			want:   "openAPIV3Schema.properties[spec].properties[replicaCount].default: Invalid value",
		},
		// A default outside the field's bounds.
		{
			name:   "default out of range",
			schema: `{"type": "object", "properties": {"replicaCount": {"type": "integer", "maximum": 5, "default": 9}}}`,
			want:   "should be less than or equal to 5",
		},
		// A default carrying fields the schema prunes.
		{
			name:   "unpruned default",
			schema: `{"type": "object", "properties": {"replicaCount": {"type": "integer"}, "image": {"type": "object", "additionalProperties": false, "properties": {"tag": {"type": "string"}}, "default": {"tag": "1", "extra": "x"}}}}`,
			want:   "must not have unknown fields",
		},
		// CEL that does not compile.
		{
			name:   "invalid CEL rule",
			schema: `{"type": "object", "properties": {"replicaCount": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >"}]}}}`,
			want:   "compilation failed",
		},
		// A map list whose key is not required and has no default.
		{
			name:   "list map key not required",
			schema: `{"type": "object", "properties": {"replicaCount": {"type": "integer"}, "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}`,
			want:   "x-kubernetes-list-map-keys",
		},
		// A printer column naming a value the chart does not have.
		{
			name:   "printer column on a missing spec field",
			schema: `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
			want:   `additionalPrinterColumns[0].jsonPath: ".spec.replicaCount": .spec has no field "replicaCount"`,
		},
		// Names the API server refuses.
		{
			name:   "bad short name",
			schema: `{"type": "object", "properties": {"replicaCount": {"type": "integer"}}}`,
			kind:   func(k *apikinds.Kind) { k.ShortNames = []string{"Not_OK"} },
			want:   "spec.names.shortNames",
		},
		{
			name:   "bad group",
			schema: `{"type": "object", "properties": {"replicaCount": {"type": "integer"}}}`,
			kind:   func(k *apikinds.Kind) { k.Group = "nodots" },
			want:   "should be a domain with at least one dot",
		},
		{
			name:   "bad printer column type",
			schema: `{"type": "object", "properties": {"replicaCount": {"type": "integer"}}}`,
			kind:   func(k *apikinds.Kind) { k.PrinterColumns[0].Type = "int" },
			want:   "additionalPrinterColumns[0].type",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec, err := ConvertSchema([]byte(tt.schema))
			g.Expect(err).NotTo(HaveOccurred())
			k := testKind()
			if tt.kind != nil {
				tt.kind(k)
			}
			err = ValidateCRD(BuildCRD(k, spec))
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			g.Expect(err).To(MatchError(HavePrefix("CRD demos." + k.Group + " is invalid")))
		})
	}
}

// Printer columns on .spec may go into maps and free-form objects.
func TestCheckColumnPath(t *testing.T) {
	g := NewWithT(t)
	root := BuildCRD(testKind(), demoSchema(t)).Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, ok := range []string{".spec.image.tag", ".spec.podAnnotations.anyKey", ".spec.nodeSelector.x.y",
		".spec.extraConfig.unknown", ".status.anything", ".spec.ports[0].name"} {
		g.Expect(checkColumnPath(root, ok)).To(Succeed(), ok)
	}
	g.Expect(checkColumnPath(root, ".spec.image.digest")).To(MatchError(`.spec.image has no field "digest"`))
	g.Expect(checkColumnPath(root, ".spec.replicaCount.x")).To(MatchError(`.spec.replicaCount has no field "x"`))
}

// The rendered file starts with the header and is the CRD in YAML, without
// the empty status and creationTimestamp.
func TestRenderCRD(t *testing.T) {
	g := NewWithT(t)
	crd := BuildCRD(testKind(), demoSchema(t))
	out, err := RenderCRD(crd, "charts/demo/values.schema.json")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(HavePrefix("# Code generated by crdgen from charts/demo/values.schema.json. DO NOT EDIT.\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"))
	g.Expect(string(out)).NotTo(ContainSubstring("creationTimestamp"))
	g.Expect(string(out)).NotTo(ContainSubstring("storedVersions"))

	var back apiextensionsv1.CustomResourceDefinition
	g.Expect(yaml.UnmarshalStrict(out, &back)).To(Succeed())
	g.Expect(back.Spec).To(Equal(crd.Spec))
	g.Expect(strings.Count(string(out), "\n---\n")).To(Equal(1))
}

// The name rule is what users read after `kubectl apply`: the limit, the
// DNS-1035 requirement when asked for, and the kind's reason. It sits on
// the top-level schema (the only place a rule may read metadata.name) and
// points at metadata.name.
func TestNameRule(t *testing.T) {
	tests := []struct {
		name        string
		limit       apikinds.NameLimit
		wantRule    string
		wantMessage string
	}{
		{
			name:     "length and DNS-1035 label",
			limit:    apikinds.NameLimit{MaxLength: 49, DNS1035Label: ptr.To(true), Reason: "it names the release and a Service"},
			wantRule: `self.metadata.name.size() <= 49 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')`,
			wantMessage: "metadata.name must be at most 49 characters and a DNS-1035 label (lower-case letters, digits and '-', " +
				"starting with a letter and ending with a letter or digit): it names the release and a Service",
		},
		{
			name:        "length only",
			limit:       apikinds.NameLimit{MaxLength: 53, DNS1035Label: ptr.To(false), Reason: " it names the Helm release\n"},
			wantRule:    `self.metadata.name.size() <= 53`,
			wantMessage: "metadata.name must be at most 53 characters: it names the Helm release",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := NameRule(&tt.limit)
			g.Expect(r.Rule).To(Equal(tt.wantRule))
			g.Expect(r.Message).To(Equal(tt.wantMessage))
			g.Expect(r.FieldPath).To(Equal(".metadata.name"))
			g.Expect(*r.Reason).To(Equal(apiextensionsv1.FieldValueInvalid))

			k := testKind()
			k.NameLimit = &tt.limit
			crd := BuildCRD(k, demoSchema(t))
			g.Expect(ValidateCRD(crd)).To(Succeed())
			g.Expect(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.XValidations).To(Equal(apiextensionsv1.ValidationRules{r}))
		})
	}
}

// The pattern is apimachinery's DNS-1035 label check, the one Services get.
func TestDNS1035LabelPattern(t *testing.T) {
	g := NewWithT(t)
	re := regexp.MustCompile(dns1035LabelPattern)
	for _, name := range []string{"a", "web", "web-app-1", "a1", "web.app", "1app", "-a", "a-", "Web", "a_b", ""} {
		g.Expect(re.MatchString(name)).To(Equal(len(validation.IsDNS1035Label(name)) == 0), name)
	}
}

package crdgen

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// versionedKind is a kind with a second version renaming two fields: one
// in place (required, named by a CEL rule, a printer column and a
// description) and one into another object.
const versionedKind = `
- chart: charts/demo
  group: demo.example.com
  version: v1alpha1
  kind: Demo
  plural: demos
  scope: Namespaced
  description: A demo.
  printerColumns:
  - {name: Host, type: string, description: The demoHost., jsonPath: .spec.demoHost}
  - {name: Size, type: string, jsonPath: .spec.db.size}
  nameLimit: {maxLength: 40, dns1035Label: true, reason: it names the release.}
  versions:
  - name: v1beta1
    renames:
    - {from: demoHost, to: host}
    - {from: db.size, to: storage.size}
`

// versionedSchema is the chart schema of versionedKind.
const versionedSchema = `{
  "type": "object",
  "required": ["image", "demoHost", "tier"],
  "x-kubernetes-validations": [
    {"rule": "self.tier != 'prod' || has(self.demoHost)", "message": "prod needs demoHost", "fieldPath": ".demoHost"},
    {"rule": "!has(self.db) || !has(self.db.size) || self.db.size != ''"}
  ],
  "properties": {
    "image": {"type": "string"},
    "tier": {"type": "string"},
    "demoHost": {"type": "string", "description": "Host name."},
    "demoHostAlias": {"type": "string", "description": "Another name than demoHost; not spec.demoHostAlias."},
    "db": {"type": "object", "required": ["size"], "properties": {"size": {"type": "string"}}},
    "storage": {"type": "object", "properties": {"class": {"type": "string"}}}
  }
}`

func versionedCRD(t *testing.T, kindsYAML, schema string) (*apiextensionsv1.CustomResourceDefinition, error) {
	t.Helper()
	kinds, err := apikinds.ParseKinds([]byte(kindsYAML))
	if err != nil {
		return nil, err
	}
	spec, err := ConvertSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	crd := BuildCRD(&kinds[0], spec)
	if err := addVersions(crd, &kinds[0]); err != nil {
		return nil, err
	}
	return crd, ValidateCRD(crd)
}

func TestVersionsRenameFields(t *testing.T) {
	g := NewWithT(t)
	crd, err := versionedCRD(t, versionedKind, versionedSchema)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crd.Spec.Versions).To(HaveLen(2))
	alpha, beta := crd.Spec.Versions[0], crd.Spec.Versions[1]

	// The kind's own version is unchanged and stays the storage version.
	g.Expect(alpha.Name).To(Equal("v1alpha1"))
	g.Expect(alpha.Storage).To(BeTrue())
	aspec := alpha.Schema.OpenAPIV3Schema.Properties["spec"]
	g.Expect(aspec.Properties).To(HaveKey("demoHost"))
	g.Expect(aspec.Required).To(Equal([]string{"image", "demoHost", "tier"}))
	g.Expect(alpha.AdditionalPrinterColumns[0].JSONPath).To(Equal(".spec.demoHost"))

	g.Expect(beta.Name).To(Equal("v1beta1"))
	g.Expect(beta.Served).To(BeTrue())
	g.Expect(beta.Storage).To(BeFalse())
	g.Expect(beta.Subresources).To(Equal(alpha.Subresources))
	spec := beta.Schema.OpenAPIV3Schema.Properties["spec"]
	// Moved, with its schema, and in place in required.
	g.Expect(spec.Properties).NotTo(HaveKey("demoHost"))
	g.Expect(spec.Properties["host"].Description).To(Equal("Host name."))
	g.Expect(spec.Required).To(Equal([]string{"image", "host", "tier"}))
	// Moved into another object: required there, not in the old one.
	g.Expect(spec.Properties["db"].Properties).NotTo(HaveKey("size"))
	g.Expect(spec.Properties["db"].Required).To(BeEmpty())
	g.Expect(spec.Properties["storage"].Properties).To(HaveKey("size"))
	g.Expect(spec.Properties["storage"].Properties).To(HaveKey("class"))
	g.Expect(spec.Properties["storage"].Required).To(Equal([]string{"size"}))
	// CEL rules, their field paths and messages.
	g.Expect(spec.XValidations[0].Rule).To(Equal("self.tier != 'prod' || has(self.host)"))
	g.Expect(spec.XValidations[0].FieldPath).To(Equal(".host"))
	g.Expect(spec.XValidations[0].Message).To(Equal("prod needs host"))
	g.Expect(spec.XValidations[1].Rule).To(Equal("!has(self.db) || !has(self.storage.size) || self.storage.size != ''"))
	// Descriptions: whole words only.
	g.Expect(spec.Properties["demoHostAlias"].Description).To(Equal("Another name than host; not spec.demoHostAlias."))
	g.Expect(spec.Description).To(ContainSubstring("In v1beta1, spec.host is the chart value demoHost, spec.storage.size is the chart value db.size; the API server stores v1alpha1"))
	// Printer columns.
	g.Expect(beta.AdditionalPrinterColumns[0].JSONPath).To(Equal(".spec.host"))
	g.Expect(beta.AdditionalPrinterColumns[0].Description).To(Equal("The host."))
	g.Expect(beta.AdditionalPrinterColumns[1].JSONPath).To(Equal(".spec.storage.size"))

	// The API server converts through the sidecar's webhook.
	conv := crd.Spec.Conversion
	g.Expect(conv).NotTo(BeNil())
	g.Expect(conv.Strategy).To(Equal(apiextensionsv1.WebhookConverter))
	g.Expect(conv.Webhook.ConversionReviewVersions).To(Equal([]string{"v1"}))
	svc := conv.Webhook.ClientConfig.Service
	g.Expect(svc.Name).To(Equal("webhook-service"))
	g.Expect(svc.Namespace).To(Equal("system"))
	g.Expect(*svc.Path).To(Equal("/convert"))
}

// A kind with one version has no conversion.
func TestVersionsNoneNoConversion(t *testing.T) {
	g := NewWithT(t)
	crd, err := versionedCRD(t, strings.Split(versionedKind, "  versions:")[0], versionedSchema)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crd.Spec.Versions).To(HaveLen(1))
	g.Expect(crd.Spec.Conversion).To(BeNil())
}

func TestVersionsRefused(t *testing.T) {
	tests := []struct {
		name     string
		versions string // the kind's versions: entry
		want     string // substring of the error
	}{
		// The chart has no such value.
		{"from missing", `[{name: v1beta1, renames: [{from: demoHostname, to: host}]}]`,
			`rename from "demoHostname": the chart's schema has no such field`},
		{"from parent missing", `[{name: v1beta1, renames: [{from: cache.size, to: size}]}]`,
			`rename from "cache.size": the chart's schema has no field "cache"`},
		// The new name is a value the chart has already.
		{"to collides", `[{name: v1beta1, renames: [{from: demoHost, to: image}]}]`,
			`rename to "image": the chart's schema already has that field`},
		{"to collides nested", `[{name: v1beta1, renames: [{from: demoHost, to: storage.class}]}]`,
			`rename to "storage.class": the chart's schema already has that field`},
		{"to parent not an object", `[{name: v1beta1, renames: [{from: demoHost, to: image.host}]}]`,
			`rename to "image.host": image is not an object with declared fields`},
		// Two renames to one name, or of one field.
		{"to twice", `[{name: v1beta1, renames: [{from: demoHost, to: host}, {from: tier, to: host}]}]`,
			`"host" overlaps "host" of another rename of v1beta1`},
		{"nested overlap", `[{name: v1beta1, renames: [{from: db, to: database}, {from: db.size, to: size}]}]`,
			`"db.size" overlaps "db" of another rename of v1beta1`},
		{"from is to", `[{name: v1beta1, renames: [{from: tier, to: tier}]}]`, `from and to are both "tier"`},
		{"not a path", `[{name: v1beta1, renames: [{from: spec.demoHost, to: "host name"}]}]`, `must be dotted paths of field names`},
		{"no renames", `[{name: v1beta1}]`, `has no renames`},
		{"own version", `[{name: v1alpha1, renames: [{from: demoHost, to: host}]}]`, `"v1alpha1" is listed twice (or is the kind's own version)`},
		{"twice", `[{name: v1beta1, renames: [{from: demoHost, to: host}]}, {name: v1beta1, renames: [{from: tier, to: level}]}]`, `"v1beta1" is listed twice`},
		{"bad name", `[{name: V1, renames: [{from: demoHost, to: host}]}]`, `versions[0].name "V1" must be a lower-case DNS label`},
		// A rule on db names db.size, which moves out of db.
		{"rule out of reach", `[{name: v1beta1, renames: [{from: db.size, to: size}]}]`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			kind := strings.Split(versionedKind, "  versions:")[0] + "  versions: " + tt.versions + "\n"
			schema := versionedSchema
			want := tt.want
			if tt.name == "rule out of reach" {
				schema = strings.Replace(schema, `"db": {"type": "object",`,
					`"db": {"type": "object", "x-kubernetes-validations": [{"rule": "self.size != 'x'"}],`, 1)
				want = `the rule "self.size != 'x'" at spec.db names db.size, which the rename to "size" moves out of its reach`
			}
			_, err := versionedCRD(t, kind, schema)
			g.Expect(err).To(MatchError(ContainSubstring(want)))
		})
	}
}

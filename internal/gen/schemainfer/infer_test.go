package schemainfer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/gen/crdgen"
	"github.com/acme/platform-operator/internal/operator/apikinds"
)

func TestInfer(t *testing.T) {
	tests := []struct {
		name   string
		values string // values.yaml
		want   string // expected "properties" of the schema, as YAML
	}{
		// Scalars keep their type, as Helm's YAML 1.1 reading gives it, and
		// their value as default. A number written with a fraction or tagged
		// !!float is a number even when whole; yes is a boolean and an
		// unquoted 1.10 the number 1.1, as Helm sees them.
		{
			name: "scalars",
			values: `
name: web
empty: ""
enabled: true
disabled: false
replicas: 3
zero: 0
ratio: 0.5
whole: 1.0
tagged: !!float 2
quoted: "8080"
answer: yes
tag: 1.10
`,
			want: `
name: {type: string, default: web}
empty: {type: string, default: ""}
enabled: {type: boolean, default: true}
disabled: {type: boolean, default: false}
replicas: {type: integer, default: 3}
zero: {type: integer, default: 0}
ratio: {type: number, default: 0.5}
whole: {type: number, default: 1}
tagged: {type: number, default: 2}
quoted: {type: string, default: "8080"}
answer: {type: boolean, default: true}
tag: {type: number, default: 1.1}
`,
		},
		// Maps become objects with one property per key, at every depth,
		// and no default of their own.
		{
			name: "nested objects",
			values: `
image:
  repository: nginx
  pull:
    policy: Always
`,
			want: `
image:
  type: object
  properties:
    repository: {type: string, default: nginx}
    pull:
      type: object
      properties:
        policy: {type: string, default: Always}
`,
		},
		// An empty map is an object without properties: any keys.
		{
			name:   "empty map",
			values: "resources: {}\nnodeSelector: {}\n",
			want:   "resources: {type: object}\nnodeSelector: {type: object}\n",
		},
		// null, written any way, accepts anything.
		{
			name:   "null",
			values: "a:\nb: ~\nc: null\n",
			want: `
a: {x-kubernetes-preserve-unknown-fields: true}
b: {x-kubernetes-preserve-unknown-fields: true}
c: {x-kubernetes-preserve-unknown-fields: true}
`,
		},
		// Items come from all elements together. Lists of scalars are their
		// own default; nothing inside items has one.
		{
			name: "lists",
			values: `
empty: []
strings: [a, b]
numbers: [1, 2.5]
mixed: [a, 1]
withNull: [a, ~]
maps:
  - name: a
    port: 80
  - name: b
    protocol: TCP
    port: 8080.5
nested: [[1, 2], [3]]
mapsAndScalars: [{a: 1}, b]
emptyAndFull: [{}, {a: 1}]
`,
			want: `
empty: {type: array, items: {x-kubernetes-preserve-unknown-fields: true}}
strings: {type: array, items: {type: string}, default: [a, b]}
numbers: {type: array, items: {type: number}, default: [1, 2.5]}
mixed: {type: array, items: {x-kubernetes-preserve-unknown-fields: true}, default: [a, 1]}
withNull: {type: array, items: {x-kubernetes-preserve-unknown-fields: true}}
maps:
  type: array
  items:
    type: object
    properties:
      name: {type: string}
      port: {type: number}
      protocol: {type: string}
nested: {type: array, items: {type: array, items: {type: integer}}}
mapsAndScalars: {type: array, items: {x-kubernetes-preserve-unknown-fields: true}}
emptyAndFull: {type: array, items: {type: object}}
`,
		},
		// Comments above keys become descriptions, also inside list items;
		// line comments do not.
		{
			name: "descriptions",
			values: `
# The image to run.
image:
  # Registry and path,
  # without the tag.
  repository: nginx
  tag: "1.0" # not a description
ports:
  # The port's name.
  - name: http
`,
			want: `
image:
  type: object
  description: The image to run.
  properties:
    repository: {type: string, default: nginx, description: "Registry and path, without the tag."}
    tag: {type: string, default: "1.0"}
ports:
  type: array
  items:
    type: object
    properties:
      name: {type: string, description: The port's name.}
`,
		},
		// Keys merged in with << are values like any other, described where
		// they are written.
		{
			name: "anchors and merge keys",
			values: `
base: &base
  # Shared port.
  port: 80
svc:
  <<: *base
  name: web
`,
			want: `
base:
  type: object
  properties:
    port: {type: integer, default: 80, description: Shared port.}
svc:
  type: object
  properties:
    port: {type: integer, default: 80, description: Shared port.}
    name: {type: string, default: web}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Infer([]byte(tt.values))
			g.Expect(err).NotTo(HaveOccurred())

			var doc struct {
				Properties json.RawMessage `json:"properties"`
			}
			g.Expect(json.Unmarshal(got, &doc)).To(Succeed())
			want, err := yaml.YAMLToJSON([]byte(tt.want))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(doc.Properties)).To(MatchJSON(want))

			expectAccepted(g, got, []byte(tt.values))
		})
	}
}

// TestInferOutput pins the whole file: the top level, sorted keys, two-space
// indentation, a final newline.
func TestInferOutput(t *testing.T) {
	tests := []struct {
		name   string
		values string // values.yaml
		want   string // exact output
	}{
		{
			name:   "values",
			values: "# Replicas & <more>.\nreplicas: 1\n",
			want: `{
  "$comment": "` + Marker + `",
  "$schema": "http://json-schema.org/draft-07/schema#",
  "properties": {
    "replicas": {
      "default": 1,
      "description": "Replicas & <more>.",
      "type": "integer"
    }
  },
  "type": "object"
}
`,
		},
		// A values.yaml without values accepts any values.
		{
			name:   "no values",
			values: "# Only a comment.\n",
			want: `{
  "$comment": "` + Marker + `",
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object"
}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Infer([]byte(tt.values))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(got)).To(Equal(tt.want))
			expectAccepted(g, got, []byte(tt.values))
		})
	}
}

func TestInferErrors(t *testing.T) {
	tests := []struct {
		name   string
		values string // values.yaml
		want   string // part of the error
	}{
		{name: "not a map", values: "- a\n- b\n", want: "values.yaml must hold a map of values, not a list"},
		{name: "invalid YAML", values: "a: [b\n", want: "parsing values.yaml"},
		// JSON, and so Helm's values, cannot hold infinity.
		{name: "infinity", values: "a: .inf\n", want: "parsing values.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Infer([]byte(tt.values))
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

func TestIsInferred(t *testing.T) {
	inferred, err := Infer([]byte("replicas: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		schema string // schema file content
		want   bool
	}{
		{name: "Infer output", schema: string(inferred), want: true},
		{name: "hand-written", schema: `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}`, want: false},
		{name: "other comment", schema: `{"$comment": "Tightened by hand.", "type": "object"}`, want: false},
		{name: "edited marker", schema: `{"$comment": "` + Marker + ` Edited.", "type": "object"}`, want: false},
		{name: "invalid JSON", schema: `{"$comment": "` + Marker + `"`, want: false},
		{name: "not an object", schema: `["` + Marker + `"]`, want: false},
		{name: "empty", schema: "", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(IsInferred([]byte(tt.schema))).To(Equal(tt.want))
		})
	}
}

// TestInferStarterChart infers the schema of the chart `helm create` writes.
func TestInferStarterChart(t *testing.T) {
	g := NewWithT(t)
	dir, err := chartutil.Create("starter", t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	values, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	g.Expect(err).NotTo(HaveOccurred())

	data, err := Infer(values)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(IsInferred(data)).To(BeTrue())
	spec := expectAccepted(g, data, values)

	expectDefault := func(s apiextensionsv1.JSONSchemaProps, want string) {
		g.Expect(s.Default).NotTo(BeNil())
		g.Expect(string(s.Default.Raw)).To(Equal(want))
	}
	p := spec.Properties
	g.Expect(p["replicaCount"].Type).To(Equal("integer"))
	expectDefault(p["replicaCount"], "1")
	g.Expect(p["replicaCount"].Description).To(HavePrefix("This will set the replicaset count"))

	image := p["image"]
	g.Expect(image.Type).To(Equal("object"))
	g.Expect(image.Default).To(BeNil())
	g.Expect(image.Properties["repository"].Type).To(Equal("string"))
	expectDefault(image.Properties["repository"], `"nginx"`)
	g.Expect(image.Properties["pullPolicy"].Description).To(Equal("This sets the pull policy for images."))

	g.Expect(p["service"].Properties["port"].Type).To(Equal("integer"))
	expectDefault(p["service"].Properties["port"], "80")

	hosts := p["ingress"].Properties["hosts"]
	g.Expect(hosts.Type).To(Equal("array"))
	// The commented-out annotations above hosts are not its description.
	g.Expect(hosts.Description).To(BeEmpty())
	g.Expect(hosts.Items.Schema.Type).To(Equal("object"))
	g.Expect(hosts.Items.Schema.Properties["host"].Type).To(Equal("string"))
	paths := hosts.Items.Schema.Properties["paths"]
	g.Expect(paths.Type).To(Equal("array"))
	g.Expect(paths.Items.Schema.Properties).To(HaveKey("pathType"))

	// helm-docs' "-- " is not part of the description.
	g.Expect(p["httpRoute"].Description).To(HavePrefix("Expose the service via gateway-api HTTPRoute Requires"))

	for _, name := range []string{"resources", "podAnnotations", "nodeSelector", "affinity"} {
		g.Expect(p[name].Type).To(Equal("object"), name)
		g.Expect(p[name].XPreserveUnknownFields).To(Equal(ptr.To(true)), name)
	}
	for _, name := range []string{"tolerations", "imagePullSecrets", "volumes"} {
		g.Expect(p[name].Type).To(Equal("array"), name)
		g.Expect(p[name].Items.Schema.XPreserveUnknownFields).To(Equal(ptr.To(true)), name)
	}
}

// expectAccepted checks that the inferred schema is one the chart can ship
// and the operator can serve: crdgen converts it into a CRD the API server
// would accept, and both Helm (against values.schema.json) and the API server
// (against the CRD's .spec schema) accept the chart's own values. It returns
// the converted .spec schema.
func expectAccepted(g Gomega, schemaJSON, valuesYAML []byte) *apiextensionsv1.JSONSchemaProps {
	spec, err := crdgen.ConvertSchema(schemaJSON)
	g.Expect(err).NotTo(HaveOccurred())
	kinds, err := apikinds.ParseKinds([]byte(`
- chart: charts/demo
  group: demo.example.com
  version: v1
  kind: Demo
  plural: demos
  scope: Namespaced
  description: Demo is a test kind.
  nameLimit: {maxLength: 53, dns1035Label: false, reason: it names the Helm release.}
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crdgen.ValidateCRD(crdgen.BuildCRD(&kinds[0], spec))).To(Succeed())

	values, err := chartutil.ReadValues(valuesYAML)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chartutil.ValidateAgainstSingleSchema(values, schemaJSON)).To(Succeed())

	var internal apiextensions.JSONSchemaProps
	g.Expect(apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(spec, &internal, nil)).To(Succeed())
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(apiservervalidation.ValidateCustomResource(nil, values.AsMap(), validator)).To(BeEmpty())
	return spec
}

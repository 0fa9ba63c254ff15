package apikinds

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

const minimalKind = `
- chart: charts/demo
  group: demo.example.com
  version: v1
  kind: Demo
  plural: demos
  scope: Cluster
  description: A demo.
  nameLimit: {maxLength: 53, dns1035Label: false, reason: it names the Helm release.}
`

// noNameLimit is minimalKind without its nameLimit.
const noNameLimit = `
- chart: charts/demo
  group: demo.example.com
  version: v1
  kind: Demo
  plural: demos
  scope: Cluster
  description: A demo.
`

func TestParseKindsDefaults(t *testing.T) {
	g := NewWithT(t)
	kinds, err := ParseKinds([]byte(minimalKind))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds).To(HaveLen(1))
	k := kinds[0]
	g.Expect(k.Singular).To(Equal("demo"))
	g.Expect(k.ListKind).To(Equal("DemoList"))
	g.Expect(k.Scope).To(Equal(apiextensionsv1.ClusterScoped))
	g.Expect(k.SchemaPath()).To(Equal("charts/demo/values.schema.json"))
	g.Expect(k.CRDName()).To(Equal("demos.demo.example.com"))
	g.Expect(k.FileName()).To(Equal("demo.example.com_demos.yaml"))
}

func TestParseKindsErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		// Strict decoding: a misspelt key is an error, not ignored.
		{name: "unknown key", yaml: minimalKind + "  shortname: [d]\n", want: `unknown field "shortname"`},
		{name: "unknown column key", yaml: minimalKind + "  printerColumns: [{name: A, type: string, path: .spec.a}]\n", want: `unknown field "path"`},
		{name: "duplicate key", yaml: minimalKind + "  kind: Other\n", want: `"kind" already set`},
		{name: "not a list", yaml: "chart: x\n", want: "cannot unmarshal"},
		{name: "empty", yaml: "[]\n", want: "no kinds listed"},
		// Required fields.
		{name: "missing plural", yaml: "- {chart: c, group: g.io, version: v1, kind: K, scope: Cluster, description: d}", want: "plural is required"},
		{name: "missing description", yaml: "- {chart: c, group: g.io, version: v1, kind: K, plural: ks, scope: Cluster}", want: "description is required"},
		// Values checked before building the CRD.
		{name: "bad scope", yaml: "- {chart: c, group: g.io, version: v1, kind: K, plural: ks, scope: namespaced, description: d}", want: `scope "namespaced" must be Namespaced or Cluster`},
		{name: "bad plural", yaml: "- {chart: c, group: g.io, version: v1, kind: K, plural: Ks, scope: Cluster, description: d}", want: `plural "Ks" must be a lower-case DNS label`},
		{name: "bad kind", yaml: "- {chart: c, group: g.io, version: v1, kind: k, plural: ks, scope: Cluster, description: d}", want: `kind "k" must be UpperCamelCase`},
		{name: "unclean chart path", yaml: "- {chart: ./c/, group: g.io, version: v1, kind: K, plural: ks, scope: Cluster, description: d}", want: `chart "./c/" must be a clean`},
		{name: "duplicate CRD", yaml: minimalKind + minimalKind, want: "[1] (Demo): demos.demo.example.com is also defined by entry [0]"},
		// The name limit has no default: it depends on the chart.
		{name: "missing nameLimit", yaml: "- {chart: c, group: g.io, version: v1, kind: K, plural: ks, scope: Cluster, description: d}", want: "[0] (K): nameLimit is required"},
		{name: "name limit over Helm's", yaml: noNameLimit + "  nameLimit: {maxLength: 54, dns1035Label: true, reason: r}\n", want: "nameLimit.maxLength 54 must be between 1 and 53 (Helm's limit for release names)"},
		{name: "name limit missing maxLength", yaml: noNameLimit + "  nameLimit: {dns1035Label: true, reason: r}\n", want: "nameLimit.maxLength 0 must be between 1 and 53"},
		{name: "name limit missing dns1035Label", yaml: noNameLimit + "  nameLimit: {maxLength: 40, reason: r}\n", want: "nameLimit.dns1035Label is required"},
		{name: "name limit missing reason", yaml: noNameLimit + "  nameLimit: {maxLength: 40, dns1035Label: false}\n", want: "nameLimit.reason is required"},
		{name: "name limit unknown key", yaml: noNameLimit + "  nameLimit: {maxLength: 40, dns1035Label: false, reason: r, max: 3}\n", want: `unknown field "max"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := ParseKinds([]byte(tt.yaml))
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

func TestLoadKindsNamesTheFile(t *testing.T) {
	g := NewWithT(t)
	_, err := LoadKinds(filepath.Join("testdata", "kinds.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = LoadKinds(filepath.Join("testdata", "charts", "demo", "values.schema.json"))
	g.Expect(err).To(MatchError(HavePrefix(filepath.Join("testdata", "charts", "demo", "values.schema.json") + ": ")))
}

package crdgen

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestValuesFromDeclared: the CRD of a namespaced kind declares the
// reserved field valuesFrom, whose entries name a kind and a name and
// nothing else (no namespace).
func TestValuesFromDeclared(t *testing.T) {
	g := NewWithT(t)
	root := copyFixture(t)
	res, err := Generate(fixtureOptions(root))
	g.Expect(err).NotTo(HaveOccurred())
	content := string(res.Files["out/bases/demo.example.com_demos.yaml"])
	g.Expect(content).To(ContainSubstring("valuesFrom:"))
	g.Expect(content).To(ContainSubstring("targetPath:"))
	s := ValuesFromSchema()
	g.Expect(s.Items.Schema.Properties).NotTo(HaveKey("namespace"))
	g.Expect(s.Items.Schema.XPreserveUnknownFields).To(BeNil())
	g.Expect(s.Items.Schema.Required).To(ConsistOf("kind", "name"))
}

// TestValuesFromReserved: a chart with a top-level value valuesFrom, in its
// schema or its values.yaml, is refused with a message naming it.
func TestValuesFromReserved(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
	}{
		{"schema", "charts/demo/values.schema.json", `{"type":"object","properties":{"valuesFrom":{"type":"string"}}}`},
		{"values", "charts/demo/values.yaml", "valuesFrom: x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			root := copyFixture(t)
			g.Expect(os.WriteFile(filepath.Join(root, tc.file), []byte(tc.content), 0o644)).To(Succeed())
			_, err := Generate(fixtureOptions(root))
			g.Expect(err).To(MatchError(ContainSubstring(`top-level value "valuesFrom", which the operator reserves`)))
		})
	}
}

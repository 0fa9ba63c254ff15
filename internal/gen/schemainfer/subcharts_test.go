package schemainfer

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
)

// A subchart's inferred schema goes under its key; what the parent's
// values.yaml says of that key wins where both say something, and an
// empty map in the parent says less than the subchart's values.
func TestWithSubcharts(t *testing.T) {
	g := NewWithT(t)
	infer := func(values string) []byte {
		out, err := Infer([]byte(values))
		g.Expect(err).NotTo(HaveOccurred())
		return out
	}
	parent := infer(`
name: web
# The child, on.
child:
  enabled: true
  replicaCount: 2
empty: {}
`)
	sub := infer(`
# Pods.
replicaCount: 1
image:
  tag: "1.0"
`)
	out, err := WithSubcharts(parent, map[string][]byte{"child": sub, "empty": sub, "fresh": sub})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(IsInferred(out)).To(BeTrue())
	var doc map[string]any
	g.Expect(json.Unmarshal(out, &doc)).To(Succeed())
	props := doc["properties"].(map[string]any)
	child := props["child"].(map[string]any)
	g.Expect(child["description"]).To(Equal("The child, on."))
	cp := child["properties"].(map[string]any)
	g.Expect(cp["replicaCount"]).To(HaveKeyWithValue("default", BeNumerically("==", 2)), "the parent's default wins")
	g.Expect(cp["replicaCount"]).To(HaveKeyWithValue("description", "Pods."), "the subchart's description stays")
	g.Expect(cp["enabled"]).To(HaveKeyWithValue("type", "boolean"))
	g.Expect(cp["image"]).To(HaveKeyWithValue("type", "object"))
	for _, key := range []string{"empty", "fresh"} {
		g.Expect(props[key]).To(HaveKeyWithValue("type", "object"), key)
		g.Expect(props[key]).NotTo(HaveKey("x-kubernetes-preserve-unknown-fields"), key)
		g.Expect(props[key].(map[string]any)["properties"]).To(HaveKey("replicaCount"), key)
	}
	g.Expect(props["name"]).To(HaveKeyWithValue("type", "string"))

	same, err := WithSubcharts(parent, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(Equal(parent))
}

package manifest

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
)

func TestChartCRDs(t *testing.T) {
	crd := func(name string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: " + name + "}\n"
	}
	sub := &chart.Chart{Metadata: &chart.Metadata{Name: "sub"}, Files: []*chart.File{{Name: "crds/c.yaml", Data: []byte(crd("c.example.com"))}}}
	parent := &chart.Chart{Metadata: &chart.Metadata{Name: "parent"}, Files: []*chart.File{
		// Two documents in one file, and an empty one.
		{Name: "crds/ab.yaml", Data: []byte(crd("a.example.com") + "---\n" + crd("b.example.com") + "---\n")},
		{Name: "files/other.yaml", Data: []byte("kind: ConfigMap\n")},
	}}
	parent.AddDependency(sub)

	g := NewWithT(t)
	got, err := ChartCRDs(parent)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, u := range got {
		names = append(names, u.GetName())
	}
	g.Expect(names).To(ConsistOf("a.example.com", "b.example.com", "c.example.com"), "the subchart's crds/ count")

	bad := &chart.Chart{Metadata: &chart.Metadata{Name: "bad"}, Files: []*chart.File{{Name: "crds/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")}}}
	_, err = ChartCRDs(bad)
	g.Expect(err).To(MatchError(ContainSubstring(`crds/cm.yaml: v1 ConfigMap "x" is not a named apiextensions.k8s.io/v1 CustomResourceDefinition`)))
}

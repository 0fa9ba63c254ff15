package manifest

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Helm's dependency processing of a copy leaves the chart as it was: a
// subchart that one resource's values turn off is there for the next.
func TestCopyChartKeepsTheChartForTheNextRender(t *testing.T) {
	g := NewWithT(t)
	sub := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "sub", Version: "0.1.0"}, Values: map[string]interface{}{"size": 1}}
	parent := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "parent", Version: "0.1.0", Dependencies: []*chart.Dependency{
			{Name: "sub", Version: "0.1.0", Alias: "opt", Condition: "opt.enabled"},
		}},
		Values: map[string]interface{}{"opt": map[string]interface{}{"enabled": false}},
	}
	parent.AddDependency(sub)
	g.Expect(HasDependencies(parent)).To(BeTrue())
	g.Expect(HasDependencies(sub)).To(BeFalse())

	off := CopyChart(parent)
	g.Expect(chartutil.ProcessDependenciesWithMerge(off, map[string]interface{}{})).To(Succeed())
	g.Expect(off.Dependencies()).To(BeEmpty(), "the copy's subchart is off")
	g.Expect(parent.Dependencies()).To(HaveLen(1), "the chart keeps it")
	g.Expect(parent.Metadata.Dependencies[0].Name).To(Equal("sub"), "and its dependency's name, which an alias replaces")

	on := CopyChart(parent)
	g.Expect(chartutil.ProcessDependenciesWithMerge(on, map[string]interface{}{"opt": map[string]interface{}{"enabled": true}})).To(Succeed())
	g.Expect(on.Dependencies()).To(HaveLen(1))
	g.Expect(on.Dependencies()[0].Name()).To(Equal("opt"))
	g.Expect(on.Dependencies()[0].Parent()).To(BeIdenticalTo(on))
	g.Expect(sub.Parent()).To(BeIdenticalTo(parent))
	g.Expect(parent.Values).To(Equal(map[string]interface{}{"opt": map[string]interface{}{"enabled": false}}))

	// Why: processing the chart itself drops the subchart from it for good.
	g.Expect(chartutil.ProcessDependenciesWithMerge(parent, map[string]interface{}{})).To(Succeed())
	g.Expect(parent.Dependencies()).To(BeEmpty())
}

package manifest

import (
	"helm.sh/helm/v3/pkg/chart"
)

// CopyChart returns a copy of chrt, and of its subcharts, that Helm's
// dependency processing (chartutil.ProcessDependencies, which every
// install, upgrade and render of a chart with dependencies runs) may edit
// without touching chrt: it removes the subcharts a condition or a tag
// turns off from the chart it is given, renames aliased ones and
// rewrites the values of import-values. On a chart shared by every
// resource of a kind, the first resource that turned a subchart off
// would turn it off for all that come after, and concurrent renders would
// race. Templates, files and the schema are shared: nothing edits them.
func CopyChart(chrt *chart.Chart) *chart.Chart {
	if chrt == nil {
		return nil
	}
	out := *chrt
	if chrt.Metadata != nil {
		md := *chrt.Metadata
		if chrt.Metadata.Dependencies != nil {
			md.Dependencies = make([]*chart.Dependency, len(chrt.Metadata.Dependencies))
			for i, d := range chrt.Metadata.Dependencies {
				if d == nil {
					continue
				}
				dc := *d
				md.Dependencies[i] = &dc
			}
		}
		out.Metadata = &md
	}
	if chrt.Values != nil {
		out.Values = copyValue(chrt.Values).(map[string]interface{})
	}
	subs := make([]*chart.Chart, 0, len(chrt.Dependencies()))
	for _, d := range chrt.Dependencies() {
		subs = append(subs, CopyChart(d))
	}
	// SetDependencies makes the copy the parent of the copied subcharts;
	// the copy of a subchart keeps chrt's parent until then.
	out.SetDependencies(subs...)
	return &out
}

// copyValue copies the maps and lists of a value read from YAML.
func copyValue(v interface{}) interface{} {
	switch v := v.(type) {
	case map[string]interface{}:
		m := make(map[string]interface{}, len(v))
		for k, e := range v {
			m[k] = copyValue(e)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(v))
		for i, e := range v {
			l[i] = copyValue(e)
		}
		return l
	}
	return v
}

// HasDependencies reports whether Helm processes dependencies of chrt:
// it lists some in Chart.yaml or vendors some in charts/.
func HasDependencies(chrt *chart.Chart) bool {
	return chrt != nil && (len(chrt.Dependencies()) > 0 || (chrt.Metadata != nil && len(chrt.Metadata.Dependencies) > 0))
}

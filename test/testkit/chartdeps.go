package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
)

// DependencyChart describes a chart with dependencies and a CRD, built
// from `helm create` charts by BuildDependencyChart, that the unit,
// integration and end-to-end tests of charts with CRDs and subcharts share.
//
// The parent chart (helm create Name) vendors one subchart, child (helm
// create child, with a values.schema.json of its own), in charts/ and
// uses it three times through Chart.yaml's dependencies:
//
//   - as child, with condition child.enabled (true by default);
//   - as Alias (an alias), with no condition;
//   - as OptionalAlias, an alias with condition <OptionalAlias>.enabled,
//     false by default: a release renders none of its objects unless its
//     values turn it on.
//
// Each use of child renders, besides helm create's objects, a ConfigMap
// <release>-<name or alias>-settings, a name it does not cut to 63
// characters. It also uses a library chart, lib (type: library, vendored in charts/),
// whose named template the parent includes to render a ConfigMap,
// <release>-lib, with data.from set to the library's name. When CRDGroup
// is set, crds/ holds one CRD, <CRDPlural>.<CRDGroup>, kind Widget; its
// schema has the field CRDField besides size; with Widget the parent's
// templates render one object of it.
type DependencyChart struct {
	// Name is the parent chart's name (a directory of that name is made).
	Name string
	// Alias names the aliased use of child; "extra" when empty.
	Alias string
	// OptionalAlias names the use of child that is off by default;
	// "optional" when empty.
	OptionalAlias string
	// CRDGroup, when set, puts a CRD of that group in crds/.
	CRDGroup string
	// CRDPlural is the CRD's plural; "widgets" when empty.
	CRDPlural string
	// CRDField is a string field of the CRD's spec besides size, so that
	// two versions of the chart ship different CRDs; "colour" when empty.
	CRDField string
	// Version is the parent chart's version; 0.1.0 when empty.
	Version string
	// Widget makes the parent's templates render an object of the CRD,
	// a Widget named <release>-widget (with CRDGroup only).
	Widget bool
}

// CRDName is the name of the chart's CRD ("" without CRDGroup).
func (d DependencyChart) CRDName() string {
	if d.CRDGroup == "" {
		return ""
	}
	return d.plural() + "." + d.CRDGroup
}

func (d DependencyChart) plural() string {
	if d.CRDPlural == "" {
		return "widgets"
	}
	return d.CRDPlural
}

func (d DependencyChart) optional() string {
	if d.OptionalAlias == "" {
		return "optional"
	}
	return d.OptionalAlias
}

func (d DependencyChart) alias() string {
	if d.Alias == "" {
		return "extra"
	}
	return d.Alias
}

// BuildDependencyChart builds d into dir/<d.Name> and returns the chart's
// directory. The charts are made by Helm's own `helm create`
// (chartutil.Create), so no helm binary is needed.
func BuildDependencyChart(t testing.TB, dir string, d DependencyChart) string {
	t.Helper()
	if d.CRDField == "" {
		d.CRDField = "colour"
	}
	if d.Version == "" {
		d.Version = "0.1.0"
	}
	create := func(name, dir string) {
		t.Helper()
		if _, err := chartutil.Create(name, dir); err != nil {
			t.Fatalf("helm create %s: %v", name, err)
		}
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parent := filepath.Join(dir, d.Name)
	create(d.Name, dir)
	charts := filepath.Join(parent, "charts")
	if err := os.MkdirAll(charts, 0o755); err != nil {
		t.Fatal(err)
	}
	create("child", charts)
	// Keep the charts small: no test hooks, no notes.
	for _, c := range []string{parent, filepath.Join(charts, "child")} {
		for _, f := range []string{"templates/tests/test-connection.yaml", "templates/NOTES.txt"} {
			if err := os.Remove(filepath.Join(c, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(filepath.Join(charts, "child", "values.schema.json"), `{
  "$schema": "https://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "replicaCount": {"type": "integer", "minimum": 0, "description": "Pods of the child's Deployment."}
  }
}
`)
	// Named without trunc, after the release and the chart's name (its alias,
	// when aliased): its length bounds the resource's name.
	write(filepath.Join(charts, "child", "templates", "settings.yaml"), `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}-settings
data:
  replicas: {{ .Values.replicaCount | quote }}
`)
	write(filepath.Join(charts, "lib", "Chart.yaml"), "apiVersion: v2\nname: lib\ndescription: Named templates shared by charts.\ntype: library\nversion: 0.1.0\n")
	write(filepath.Join(charts, "lib", "templates", "_configmap.tpl"), `{{- define "lib.configmap" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name | trunc 59 | trimSuffix "-" }}-lib
  labels:
    app.kubernetes.io/instance: {{ .Release.Name | quote }}
data:
  from: lib
{{- end -}}
`)
	write(filepath.Join(parent, "templates", "lib.yaml"), "{{ include \"lib.configmap\" . }}\n")

	chartYAML := fmt.Sprintf(`apiVersion: v2
name: %s
description: A chart with a vendored subchart, an alias, a condition and a library chart.
type: application
version: %s
appVersion: "1.16.0"
dependencies:
- name: child
  version: 0.1.0
  condition: child.enabled
- name: child
  alias: %s
  version: 0.1.0
- name: child
  alias: %[4]s
  version: 0.1.0
  condition: %[4]s.enabled
- name: lib
  version: 0.1.0
`, d.Name, d.Version, d.alias(), d.optional())
	write(filepath.Join(parent, "Chart.yaml"), chartYAML)
	values, err := os.ReadFile(filepath.Join(parent, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(parent, "values.yaml"), string(values)+fmt.Sprintf(`
# The subchart child, used as itself (on by default), as %[1]s, and as
# %[2]s (off by default).
child:
  enabled: true
  replicaCount: 1
%[1]s:
  replicaCount: 1
%[2]s:
  enabled: false
`, d.alias(), d.optional()))
	if d.CRDGroup != "" && d.Widget {
		write(filepath.Join(parent, "templates", "widget.yaml"), fmt.Sprintf(`apiVersion: %s/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
spec:
  size: 1
`, d.CRDGroup))
	}
	if d.CRDGroup != "" {
		write(filepath.Join(parent, "crds", d.plural()+".yaml"), fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.%[2]s
spec:
  group: %[2]s
  names:
    kind: Widget
    listKind: WidgetList
    plural: %[1]s
    singular: widget
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
              %[3]s:
                type: string
`, d.plural(), d.CRDGroup, d.CRDField))
	}
	return parent
}

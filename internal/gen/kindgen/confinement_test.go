package kindgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/watchconfig"
	"github.com/acme/platform-operator/test/testkit"
)

// wideChart is a chart whose values can put a ConfigMap in another
// namespace (namespaceOverride) and render a ClusterRole, and whose ci/
// values do both: the ten-line chart of issue 50.
var wideChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: wide\nversion: 0.1.0\n",
	"values.yaml": "# Namespace of the ConfigMap.\nnamespaceOverride: \"\"\n# Render a ClusterRole.\nclusterRole: false\n",
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-wide
  {{- with .Values.namespaceOverride }}
  namespace: {{ . }}
  {{- end }}
`,
	"templates/role.yaml": `{{- if .Values.clusterRole }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Release.Name }}-secrets
rules: [{apiGroups: [""], resources: [secrets], verbs: [get, list]}]
{{- end }}
`,
	"ci/wide-values.yaml": "namespaceOverride: acc-other\nclusterRole: true\n",
}

func setUpWide(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	testkit.CopyTree(t, filepath.Join("..", "..", ".."), root, Files...)
	for name, content := range wideChart {
		p := filepath.Join(root, "helm-charts", "wide", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestConfinementReport: make kind names what the chart would place
// outside a resource's namespace, and where it saw it; the watches.yaml
// entry gets no allowance unless asked, and the allowance it writes when
// asked is one the runtime reads.
func TestConfinementReport(t *testing.T) {
	t.Run("reported, not allowed", func(t *testing.T) {
		root := setUpWide(t)
		var log strings.Builder
		if err := Run(Options{Root: root, Chart: "helm-charts/wide", Group: "demo.acme.com", Kind: "Wide", Log: &log}); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		for _, want := range []string{
			`ConfigMap "wide-sample-wide" in namespace "acc-other" (another namespace), from ci/wide-values.yaml`,
			`ClusterRole "wide-sample-secrets" (cluster-scoped), from ci/wide-values.yaml`,
			"run again with ALLOW_OUTSIDE=1",
			"clusterScopedKinds:\n    - rbac.authorization.k8s.io/ClusterRole",
		} {
			if !strings.Contains(log.String(), want) {
				t.Errorf("the report lacks %q:\n%s", want, log.String())
			}
		}
		t.Log(log.String())
		watches, _ := os.ReadFile(filepath.Join(root, "watches.yaml"))
		if strings.Contains(string(watches), "acc-other") {
			t.Errorf("watches.yaml got an allowance nobody asked for:\n%s", watches)
		}
	})
	t.Run("allowed when asked, on a second run", func(t *testing.T) {
		root := setUpWide(t)
		var log strings.Builder
		o := Options{Root: root, Chart: "helm-charts/wide", Group: "demo.acme.com", Kind: "Wide", Log: &log}
		if err := Run(o); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		o.AllowOutside = true
		if err := Run(o); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		before, _ := os.ReadFile(filepath.Join(root, "watches.yaml"))
		if err := Run(o); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		if after, _ := os.ReadFile(filepath.Join(root, "watches.yaml")); string(after) != string(before) {
			t.Errorf("a third run changed watches.yaml:\n%s", after)
		}
		path := filepath.Join(root, "watches.yaml")
		confinements, err := watchconfig.LoadConfinement(path)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		var entries []map[string]any
		if err := yaml.Unmarshal(data, &entries); err != nil {
			t.Fatal(err)
		}
		last := confinements[len(entries)-1]
		if len(last.Namespaces) != 1 || last.Namespaces[0] != "acc-other" || len(last.ClusterScopedKinds) != 1 || last.ClusterScopedKinds[0].Kind != "ClusterRole" {
			t.Errorf("allowance of the new entry: %+v\n%s", last, data)
		}
	})
}

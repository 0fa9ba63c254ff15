package rbacgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A namespaced kind's chart that renders a ConfigMap, a Job as a
// pre-install hook and a Pod as a test hook, and a RoleBinding to the view
// ClusterRole only when a ci/ values file turns it on; a cluster-scoped
// kind's chart that renders a Namespace and a RoleBinding to admin. The
// operator writes what the cluster-scoped kind renders and only reads
// what the namespaced one does; the deployer role writes the latter.
func TestGenerateDerivesFromRendersAndHooks(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"config/crd/kinds.yaml": `- chart: charts/demo
  group: demo.example.com
  version: v1alpha1
  kind: Demo
  plural: demos
  scope: Namespaced
  description: A demo.
  nameLimit: {maxLength: 53, dns1035Label: false, reason: Helm}
- chart: charts/space
  group: demo.example.com
  version: v1alpha1
  kind: Space
  plural: spaces
  scope: Cluster
  description: A space.
  nameLimit: {maxLength: 53, dns1035Label: false, reason: Helm}
`,
		"config/samples/demo.yaml":           "apiVersion: demo.example.com/v1alpha1\nkind: Demo\nmetadata: {name: d}\nspec: {}\n",
		"config/samples/space.yaml":          "apiVersion: demo.example.com/v1alpha1\nkind: Space\nmetadata: {name: s}\nspec: {}\n",
		"charts/space/Chart.yaml":            "apiVersion: v2\nname: space\nversion: 0.1.0\n",
		"charts/space/values.yaml":           "{}\n",
		"charts/space/templates/ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: '{{ .Release.Name }}'}\n",
		"charts/space/templates/rb.yaml":     "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: admins, namespace: '{{ .Release.Name }}'}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}\nsubjects: [{kind: Group, name: admins, apiGroup: rbac.authorization.k8s.io}]\n",
		"charts/demo/Chart.yaml":             "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"charts/demo/values.yaml":            "viewers: false\n",
		"charts/demo/ci/viewers-values.yaml": "viewers: true\n",
		"charts/demo/templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\n",
		"charts/demo/templates/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, annotations: {helm.sh/hook: pre-install}}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: m}]}}}
`,
		"charts/demo/templates/tests/t.yaml": `apiVersion: v1
kind: Pod
metadata: {name: t, annotations: {helm.sh/hook: test}}
spec: {containers: [{name: t, image: t}]}
`,
		"charts/demo/templates/rb.yaml": `{{- if .Values.viewers }}
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: Group, name: viewers, apiGroup: rbac.authorization.k8s.io}]
{{- end }}
`,
	})
	got, err := Generate(Input{Root: root, Kinds: "config/crd/kinds.yaml", Samples: "config/samples"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- apiGroups: [demo.example.com]\n  resources: [demos]\n  verbs: [get, list, watch, update, patch]\n",
		"  resources: [demos/status]\n  verbs: [get, update, patch]\n",
		"  resources: [demos/finalizers]\n  verbs: [update]\n",
		"  resources: [spaces]\n  verbs: [get, list, watch, update, patch]\n",
		// The cluster-scoped kind's objects: written with the operator's rights.
		"- apiGroups: [\"\"]\n  resources: [namespaces]\n  verbs: [get, list, watch, create, update, patch, delete]\n",
		"- apiGroups: [rbac.authorization.k8s.io]\n  resources: [rolebindings]\n  verbs: [get, list, watch, create, update, patch, delete]\n",
		"  resources: [clusterroles]\n  verbs: [bind]\n  resourceNames: [admin]\n",
		// The namespaced kind's, test hook's Pod included: read only.
		"- apiGroups: [\"\"]\n  resources: [configmaps, pods]\n  verbs: [get, list, watch]\n",
		"- apiGroups: [batch]\n  resources: [jobs]\n  verbs: [get, list, watch]\n",
	} {
		if !strings.Contains(got.Section, want) {
			t.Errorf("section lacks\n%s\ngot:\n%s", want, got.Section)
		}
	}
	if strings.Contains(got.Section, "resourceNames: [view]") {
		t.Errorf("the operator binds what a namespaced kind's release binds:\n%s", got.Section)
	}
	if !strings.HasPrefix(got.Section, Begin+"\n") || !strings.HasSuffix(got.Section, End+"\n") {
		t.Errorf("section is not between the markers:\n%s", got.Section)
	}
	for _, want := range []string{
		"- apiGroups: [\"\"]\n  resources: [configmaps, pods]\n  verbs: [get, list, watch, create, update, patch, delete]\n",
		"- apiGroups: [batch]\n  resources: [jobs]\n  verbs: [get, list, watch, create, update, patch, delete]\n",
		"- apiGroups: [rbac.authorization.k8s.io]\n  resources: [rolebindings]\n",
		"  resources: [pods/log]\n  verbs: [get]\n",
		"  resources: [clusterroles]\n  verbs: [bind]\n  resourceNames: [view]\n",
		// The sidecar's writes, whatever the charts render.
		"- apiGroups: [apps]\n  resources: [deployments/scale, replicasets/scale, statefulsets/scale]\n  verbs: [get, update, patch]\n",
		"- apiGroups: [autoscaling]\n  resources: [horizontalpodautoscalers]\n  verbs: [get, update, patch]\n",
	} {
		if !strings.Contains(got.Deployer, want) {
			t.Errorf("deployer role lacks\n%s\ngot:\n%s", want, got.Deployer)
		}
	}
	if strings.Contains(got.Deployer, "namespaces") || strings.Contains(got.Deployer, "admin]") {
		t.Errorf("the deployer role holds what the cluster-scoped kind renders:\n%s", got.Deployer)
	}
}

func TestGenerateNeedsASample(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"config/crd/kinds.yaml":   "- {chart: charts/demo, group: d.example.com, version: v1, kind: Demo, plural: demos, scope: Namespaced, description: d, nameLimit: {maxLength: 53, dns1035Label: false, reason: r}}\n",
		"config/samples/.keep":    "",
		"charts/demo/Chart.yaml":  "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"charts/demo/values.yaml": "{}\n",
	})
	_, err := Generate(Input{Root: root, Kinds: "config/crd/kinds.yaml", Samples: "config/samples"})
	if err == nil || !strings.Contains(err.Error(), "no sample of Demo") {
		t.Fatalf("got %v, want an error about the missing sample", err)
	}
}

func TestSplice(t *testing.T) {
	section := Begin + "\n- rule: new\n" + End + "\n"
	for _, tc := range []struct{ name, role, want, err string }{
		{"replaces between the markers", "rules:\n- hand\n" + Begin + "\n- old\n" + End + "\n# after\n",
			"rules:\n- hand\n" + section + "# after\n", ""},
		{"appends when there are none", "rules:\n- hand\n\n", "rules:\n- hand\n" + section, ""},
		{"refuses a lone END", "rules:\n" + End + "\n", "", "must start with"},
		{"refuses two BEGINs", Begin + "\n" + Begin + "\n" + End + "\n", "", "two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Splice([]byte(tc.role), section)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// The runtime's rights on the CRDs of a chart's crds/ follow the kind's
// watches.yaml crds: none for skip; reading them by name and creating
// for create (the default); patching them by name too for
// create-replace. A subchart's crds/ count as the chart's.
func TestGenerateCRDRightsPerPolicy(t *testing.T) {
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s}
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`
	for _, tc := range []struct {
		policy string   // the entry's crds field ("": none)
		want   []string // parts of the generated section
		not    []string // what it must not hold
	}{
		{policy: "skip", not: []string{"customresourcedefinitions"}},
		{policy: "", want: []string{
			"(Demo: crds: create)",
			"  resources: [customresourcedefinitions]\n  verbs: [get]\n  resourceNames: [parts.example.com, things.example.com]\n",
			"  resources: [customresourcedefinitions]\n  verbs: [create]\n# END",
		}, not: []string{"verbs: [patch]"}},
		{policy: "create-replace", want: []string{
			"(Demo: crds: create-replace)",
			"verbs: [get]\n  resourceNames: [parts.example.com, things.example.com]\n",
			"  verbs: [create]\n",
			"  verbs: [patch]\n  resourceNames: [parts.example.com, things.example.com]\n",
		}},
	} {
		t.Run("crds: "+tc.policy, func(t *testing.T) {
			root := t.TempDir()
			field := ""
			if tc.policy != "" {
				field = ", crds: " + tc.policy
			}
			write(t, root, map[string]string{
				"config/crd/kinds.yaml": `- chart: charts/demo
  group: demo.example.com
  version: v1alpha1
  kind: Demo
  plural: demos
  scope: Namespaced
  description: A demo.
  nameLimit: {maxLength: 53, dns1035Label: false, reason: Helm}
`,
				"watches.yaml":                           "- {group: demo.example.com, version: v1alpha1, kind: Demo, chart: charts/demo" + field + "}\n",
				"config/samples/demo.yaml":               "apiVersion: demo.example.com/v1alpha1\nkind: Demo\nmetadata: {name: d}\nspec: {}\n",
				"charts/demo/Chart.yaml":                 "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
				"charts/demo/values.yaml":                "{}\n",
				"charts/demo/templates/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\n",
				"charts/demo/crds/things.yaml":           fmt.Sprintf(crd, "things.example.com"),
				"charts/demo/charts/sub/Chart.yaml":      "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
				"charts/demo/charts/sub/crds/parts.yaml": fmt.Sprintf(crd, "parts.example.com"),
			})
			got, err := Generate(Input{Root: root, Kinds: "config/crd/kinds.yaml", Samples: "config/samples", Watches: "watches.yaml"})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Section, w) {
					t.Errorf("the section lacks %q:\n%s", w, got.Section)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got.Section, n) {
					t.Errorf("the section holds %q:\n%s", n, got.Section)
				}
			}
			if strings.Contains(got.Deployer, "customresourcedefinitions") {
				t.Errorf("a namespace's deployer may not write CRDs:\n%s", got.Deployer)
			}
		})
	}
}

package kindgen

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/apikinds"
	"github.com/acme/platform-operator/test/testkit"
)

// TestRunOnChartWithDependencies: make kind on a chart with a vendored
// subchart used as itself, under an alias and behind a condition that is
// off, a library chart and a CRD in crds/. The inferred schema, and so the
// CRD, carries each subchart's values under its name or alias (a subchart
// value of the wrong type is refused at apply); the name limit is the one
// the aliased subchart's templates impose; the watches entry says crds:
// create and the runtime's role gets the rights that needs.
func TestRunOnChartWithDependencies(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	testkit.CopyTree(t, filepath.Join("..", "..", ".."), root, Files...)
	const alias = "sidecar-with-a-long-alias"
	d := testkit.DependencyChart{Name: "deps", Alias: alias, CRDGroup: "deps.example.com"}
	testkit.BuildDependencyChart(t, filepath.Join(root, "helm-charts"), d)
	var log strings.Builder
	o := Options{Root: root, Chart: "helm-charts/deps", Group: "demo.acme.com", Kind: "Deps", Log: &log}
	g.Expect(Run(o)).To(Succeed(), log.String())
	after := testkit.Snapshot(t, root, ".")

	var schema struct {
		Properties map[string]struct {
			Properties map[string]struct {
				Type    string `json:"type"`
				Default any    `json:"default"`
			} `json:"properties"`
		} `json:"properties"`
	}
	g.Expect(json.Unmarshal([]byte(after["helm-charts/deps/values.schema.json"]), &schema)).To(Succeed())
	for _, key := range []string{"child", alias, "optional"} {
		g.Expect(schema.Properties).To(HaveKey(key))
		props := schema.Properties[key].Properties
		g.Expect(props).To(HaveKey("replicaCount"), "the subchart's values under %s", key)
		g.Expect(props["replicaCount"].Type).To(Equal("integer"))
		g.Expect(props).To(HaveKey("image"), "the subchart's own values.yaml under %s", key)
	}
	g.Expect(schema.Properties["optional"].Properties["enabled"].Default).To(BeFalse(), "the parent's condition value wins")
	g.Expect(schema.Properties).NotTo(HaveKey("lib"), "a library chart has no values")

	crd := after["config/crd/bases/demo.acme.com_depses.yaml"]
	g.Expect(crd).NotTo(BeEmpty(), "files: %v", keys(after))
	g.Expect(crd).To(ContainSubstring(alias + ":"))

	kinds, err := apikinds.LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	k := kinds[len(kinds)-1]
	// The aliased subchart's ConfigMap "<release>-<alias>-settings" is
	// the longest name; child.fullname names a Service.
	g.Expect(k.NameLimit.MaxLength).To(Equal(63-len("-"+alias+"-settings")), k.NameLimit.Reason)
	g.Expect(*k.NameLimit.DNS1035Label).To(BeTrue())
	g.Expect(k.NameLimit.Reason).To(ContainSubstring(`"<name>-` + alias + `-settings"`))

	var entries []map[string]any
	g.Expect(yaml.Unmarshal([]byte(after["watches.yaml"]), &entries)).To(Succeed())
	g.Expect(entries[len(entries)-1]).To(HaveKeyWithValue("crds", "create"))
	g.Expect(log.String()).To(ContainSubstring("1 CRD(s) in crds/"))

	role := after["config/rbac/role.yaml"]
	g.Expect(role).To(ContainSubstring("(Deps: crds: create)"))
	g.Expect(role).To(ContainSubstring("  verbs: [get]\n  resourceNames: [widgets.deps.example.com]\n"))
	g.Expect(role).To(ContainSubstring("  resources: [customresourcedefinitions]\n  verbs: [create]\n"))
	g.Expect(role).NotTo(ContainSubstring("verbs: [patch]\n  resourceNames: [widgets.deps.example.com]"))
	// The subchart's objects are rendered, so read by the runtime.
	g.Expect(role).To(ContainSubstring("configmaps ("))
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, "config/crd/bases") {
			out = append(out, k)
		}
	}
	return out
}

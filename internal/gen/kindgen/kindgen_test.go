package kindgen

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/acme/platform-operator/internal/operator/apikinds"
	"github.com/acme/platform-operator/test/testkit"
)

func TestRunOnHelmCreateStarter(t *testing.T) {
	root := t.TempDir()
	testkit.CopyTree(t, filepath.Join("..", "..", ".."), root, Files...)
	if _, err := chartutil.Create("podinfo", filepath.Join(root, "helm-charts")); err != nil {
		t.Fatal(err)
	}
	before := testkit.Snapshot(t, root, ".")
	var log strings.Builder
	o := Options{Root: root, Chart: "helm-charts/podinfo", Group: "demo.acme.com", Kind: "Podinfo", Log: &log}
	if err := Run(o); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	after := testkit.Snapshot(t, root, ".")
	want := []string{
		"PROJECT", "watches.yaml", "helm-charts/podinfo/values.schema.json",
		"config/crd/kinds.yaml", "config/crd/kustomization.yaml", "config/crd/bases/demo.acme.com_podinfos.yaml",
		"config/samples/demo_v1alpha1_podinfo.yaml", "config/samples/kustomization.yaml",
		"config/rbac/podinfo_admin_role.yaml", "config/rbac/podinfo_editor_role.yaml", "config/rbac/podinfo_viewer_role.yaml",
		"config/rbac/kustomization.yaml", "config/rbac/role.yaml", "config/rbac/release_deployer_role.yaml",
		"config/manifests/bases/platform-operator.clusterserviceversion.yaml",
		"dist/chart/templates/config/crds.yaml", "dist/chart/templates/config/rbac.yaml", "dist/chart/templates/config/uninstall-hook.yaml",
	}
	got := testkit.Changed(before, after)
	if strings.Join(slices.Sorted(slices.Values(got)), "\n") != strings.Join(slices.Sorted(slices.Values(want)), "\n") {
		t.Errorf("changed files:\n%s\nwant:\n%s", strings.Join(slices.Sorted(slices.Values(got)), "\n"), strings.Join(slices.Sorted(slices.Values(want)), "\n"))
	}

	kinds, err := apikinds.LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	k := kinds[len(kinds)-1]
	// podinfo.fullname is "<release>-podinfo" (trunc 63) and names the
	// Service: 63 - len("-podinfo") = 55 > 53, so Helm's limit binds.
	if k.Kind != "Podinfo" || k.NameLimit.MaxLength != 53 || !*k.NameLimit.DNS1035Label {
		t.Errorf("kinds.yaml entry %+v, nameLimit %+v", k, *k.NameLimit)
	}
	// The chart version the release runs, as every shipped kind shows it.
	var columns []string
	for _, c := range k.PrinterColumns {
		columns = append(columns, c.Name+"="+c.JSONPath)
	}
	if !slices.Contains(columns, "Chart=.status.chartVersion") {
		t.Errorf("kinds.yaml entry's printer columns %v lack Chart=.status.chartVersion", columns)
	}
	role := after["config/rbac/role.yaml"]
	for _, rule := range []string{"resources: [podinfos]", "resources: [podinfos/status]", "deployments (Nginx, Podinfo, WebApp)", "serviceaccounts (NamespaceTenant)"} {
		if !strings.Contains(role, rule) {
			t.Errorf("role.yaml lacks %q", rule)
		}
	}
	deployer := after["config/rbac/release_deployer_role.yaml"]
	if !strings.Contains(deployer, "deployments (Nginx, Podinfo, WebApp)") {
		t.Errorf("release_deployer_role.yaml lacks the new kind's Deployments:\n%s", deployer)
	}
	// helm create's starter has a test hook Pod, which the runtime runs
	// when the kind or the resource asks for the chart's tests.
	if !strings.Contains(deployer, "pods (Nginx, Podinfo)") {
		t.Errorf("release_deployer_role.yaml does not grant the starter's test hook Pod")
	}
	if !strings.Contains(after["config/manifests/bases/platform-operator.clusterserviceversion.yaml"], "name: podinfos.demo.acme.com") {
		t.Errorf("the CSV does not own podinfos.demo.acme.com")
	}

	// Again, unchanged chart: nothing changes.
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	if c := testkit.Changed(after, testkit.Snapshot(t, root, ".")); len(c) > 0 {
		t.Errorf("a second run changed %q", c)
	}

	// The chart changes: a new value, and a longer object name suffix.
	values := filepath.Join(root, "helm-charts", "podinfo", "values.yaml")
	data, _ := os.ReadFile(values)
	if err := os.WriteFile(values, append(data, []byte("\n# -- How many greetings to send.\ngreetings: 3\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hand-edited description stays.
	kindsFile := filepath.Join(root, "config", "crd", "kinds.yaml")
	kd, _ := os.ReadFile(kindsFile)
	kd = bytes.Replace(kd, []byte("    Podinfo is a release of"), []byte("    Podinfo, as we say, is a release of"), 1)
	if err := os.WriteFile(kindsFile, kd, 0o644); err != nil {
		t.Fatal(err)
	}
	mid := testkit.Snapshot(t, root, ".")
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	final := testkit.Snapshot(t, root, ".")
	got = testkit.Changed(mid, final)
	want = []string{
		"helm-charts/podinfo/values.schema.json", "config/crd/bases/demo.acme.com_podinfos.yaml",
		"config/samples/demo_v1alpha1_podinfo.yaml",
		"config/manifests/bases/platform-operator.clusterserviceversion.yaml",
		"dist/chart/templates/config/crds.yaml",
	}
	if strings.Join(slices.Sorted(slices.Values(got)), "\n") != strings.Join(slices.Sorted(slices.Values(want)), "\n") {
		t.Errorf("after a chart change, changed files:\n%s\nwant:\n%s", strings.Join(slices.Sorted(slices.Values(got)), "\n"), strings.Join(slices.Sorted(slices.Values(want)), "\n"))
	}
	if !strings.Contains(final["config/crd/kinds.yaml"], "Podinfo, as we say,") {
		t.Errorf("the hand-edited description was lost")
	}
	if !strings.Contains(final["config/crd/bases/demo.acme.com_podinfos.yaml"], "greetings:") {
		t.Errorf("the CRD lacks the new value")
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	root := t.TempDir()
	testkit.CopyTree(t, filepath.Join("..", "..", ".."), root, Files...)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"lower-case kind", Options{Chart: "helm-charts/nginx", Group: "demo.acme.com", Kind: "podinfo"}, `KIND "podinfo" must be UpperCamelCase`},
		{"group without a dot", Options{Chart: "helm-charts/nginx", Group: "demo", Kind: "Podinfo"}, `GROUP "demo" must be`},
		{"chart elsewhere", Options{Chart: "charts/podinfo", Group: "demo.acme.com", Kind: "Podinfo"}, `must be a directory directly under helm-charts/`},
		{"no chart", Options{Chart: "helm-charts/nothing", Group: "demo.acme.com", Kind: "Podinfo"}, `has no Chart.yaml`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Root = root
			err := Run(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestRunThatFailsChangesNothing fails late: the chart passes every check
// of the options and has values, so the schema, sample, kinds.yaml and
// watches.yaml steps all succeed, and then it cannot be rendered. The tree
// must be as it was.
func TestRunThatFailsChangesNothing(t *testing.T) {
	root := t.TempDir()
	testkit.CopyTree(t, filepath.Join("..", "..", ".."), root, Files...)
	if _, err := chartutil.Create("broken", filepath.Join(root, "helm-charts")); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(root, "helm-charts", "broken", "templates", "broken.yaml")
	if err := os.WriteFile(bad, []byte(`{{ fail "this chart does not render" }}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testkit.Snapshot(t, root, ".")
	var log strings.Builder
	err := Run(Options{Root: root, Chart: "helm-charts/broken", Group: "demo.acme.com", Kind: "Broken", Log: &log})
	if err == nil || !strings.Contains(err.Error(), "this chart does not render") || !strings.Contains(err.Error(), "no file was changed") {
		t.Fatalf("got %v, want the render error and that no file was changed", err)
	}
	if got := testkit.Changed(before, testkit.Snapshot(t, root, ".")); len(got) > 0 {
		t.Errorf("a failed run changed %s", strings.Join(got, ", "))
	}
	if log.Len() > 0 {
		t.Errorf("a failed run reported writes:\n%s", log.String())
	}
}

// Package kindgen turns a Helm chart into one of the operator's APIs: it
// writes what a chart-backed kind needs besides the chart (its entry in
// config/crd/kinds.yaml and watches.yaml, a values schema when the chart
// has none, a sample, the aggregated admin/editor/viewer roles, PROJECT),
// then runs the generators that derive the rest (the CRD, the runtime's
// RBAC rules, the CSV's owned CRD). `make kind` runs it; running it again
// after the chart changed updates what it derives and nothing else.
package kindgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/gen/chartgen"
	"github.com/acme/platform-operator/internal/gen/chartrender"
	"github.com/acme/platform-operator/internal/gen/crdgen"
	"github.com/acme/platform-operator/internal/gen/csvgen"
	"github.com/acme/platform-operator/internal/gen/genfile"
	"github.com/acme/platform-operator/internal/gen/rbacgen"
	"github.com/acme/platform-operator/internal/gen/schemainfer"
	"github.com/acme/platform-operator/internal/operator/apikinds"
	"github.com/acme/platform-operator/internal/operator/manifest"
)

// Options name the chart and the kind it becomes.
type Options struct {
	// Root is the repository root.
	Root string
	// Chart is the chart directory relative to Root, under helm-charts/
	// (the image ships that directory).
	Chart string
	// Group, Version and Kind of the new API; Version defaults to v1alpha1.
	Group, Version, Kind string
	// Plural defaults to the lower-case English plural of Kind.
	Plural string
	// ClusterScoped makes the kind cluster-scoped (releases are then kept
	// in the operator's namespace).
	ClusterScoped bool
	// AllowOutside writes, into a new watches.yaml entry, the confinement
	// allowance for what the chart places outside a resource's namespace
	// with its samples and ci/ values. Without it those objects are only
	// reported, and such releases are refused.
	AllowOutside bool
	// Log receives one line per file written or kept.
	Log io.Writer
}

var (
	kindPattern  = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	groupPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`)
)

func (o *Options) defaults() error {
	if o.Version == "" {
		o.Version = "v1alpha1"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	o.Chart = path.Clean(filepath.ToSlash(o.Chart))
	var problems []string
	if !kindPattern.MatchString(o.Kind) {
		problems = append(problems, fmt.Sprintf("KIND %q must be UpperCamelCase, e.g. Podinfo", o.Kind))
	}
	if !groupPattern.MatchString(o.Group) {
		problems = append(problems, fmt.Sprintf("GROUP %q must be a lower-case DNS name with at least one dot, e.g. apps.acme.com", o.Group))
	}
	if !strings.HasPrefix(o.Chart, "helm-charts/") || strings.Count(o.Chart, "/") != 1 {
		problems = append(problems, fmt.Sprintf("CHART %q must be a directory directly under helm-charts/ (the operator's image ships that directory): copy or `helm create` the chart there", o.Chart))
	} else if _, err := os.Stat(filepath.Join(o.Root, o.Chart, "Chart.yaml")); err != nil {
		problems = append(problems, fmt.Sprintf("CHART %q has no Chart.yaml", o.Chart))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	if o.Plural == "" {
		plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Group: o.Group, Version: o.Version, Kind: o.Kind})
		o.Plural = plural.Resource
	}
	return nil
}

// Files are what Run reads and writes, relative to the root.
var Files = []string{"config", "helm-charts", "watches.yaml", "PROJECT", "dist"}

// Run adds the kind (or updates what it derives when it is there already)
// and runs crdgen, rbacgen, csvgen and chartgen. It works on a copy of Files and
// changes the tree only when every step succeeded: a failing run leaves
// every file as it was.
func Run(o Options) error {
	if err := o.defaults(); err != nil {
		return err
	}
	var log bytes.Buffer
	_, err := genfile.Staged(o.Root, Files, func(stage string) error {
		g := &gen{Options: o}
		g.Root, g.Log = stage, &log
		steps := []func() error{g.schema, g.sample, g.kinds, g.watches, g.roles, g.project, g.derived}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w\n(no file was changed)", err)
	}
	_, err = log.WriteTo(o.Log)
	return err
}

type gen struct {
	Options
	sampleSpec map[string]any
}

func (g *gen) at(rel string) string { return filepath.Join(g.Root, filepath.FromSlash(rel)) }

func (g *gen) lower() string { return strings.ToLower(g.Kind) }

// write writes a file and says so.
func (g *gen) write(rel string, data []byte) error {
	old, err := os.ReadFile(g.at(rel))
	if err == nil && bytes.Equal(old, data) {
		fmt.Fprintf(g.Log, "unchanged %s\n", rel)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(g.at(rel)), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(g.Log, "wrote     %s\n", rel)
	return os.WriteFile(g.at(rel), data, 0o644)
}

// schema infers values.schema.json from values.yaml when the chart has no
// schema, or has one this command inferred earlier.
func (g *gen) schema() error {
	rel := path.Join(g.Chart, "values.schema.json")
	if current, err := os.ReadFile(g.at(rel)); err == nil && !schemainfer.IsInferred(current) {
		fmt.Fprintf(g.Log, "kept      %s (written by hand)\n", rel)
		return nil
	}
	ch, err := chartrender.LoadChart(g.at(g.Chart))
	if err != nil {
		return err
	}
	inferred, err := inferChart(ch, g.Chart)
	if err != nil {
		return err
	}
	return g.write(rel, inferred)
}

// inferChart infers the values schema of ch (at dir, for messages) from
// its values.yaml and, under each dependency's alias or name, from its
// subcharts' (library charts have no values).
func inferChart(ch *chart.Chart, dir string) ([]byte, error) {
	var values []byte
	for _, f := range ch.Raw {
		if f.Name == "values.yaml" {
			values = f.Data
		}
	}
	own, err := schemainfer.Infer(values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path.Join(dir, "values.yaml"), err)
	}
	subs := map[string][]byte{}
	used := map[string]bool{}
	add := func(key string, sub *chart.Chart) error {
		if sub.Metadata.Type == "library" {
			return nil
		}
		s, err := inferChart(sub, path.Join(dir, "charts", sub.Name()))
		if err != nil {
			return err
		}
		subs[key] = s
		return nil
	}
	for _, dep := range ch.Metadata.Dependencies {
		for _, sub := range ch.Dependencies() {
			if sub.Name() != dep.Name {
				continue
			}
			used[sub.Name()] = true
			key := dep.Name
			if dep.Alias != "" {
				key = dep.Alias
			}
			if err := add(key, sub); err != nil {
				return nil, err
			}
		}
	}
	// Helm renders a chart in charts/ that no dependency lists too.
	for _, sub := range ch.Dependencies() {
		if !used[sub.Name()] {
			if err := add(sub.Name(), sub); err != nil {
				return nil, err
			}
		}
	}
	return schemainfer.WithSubcharts(own, subs)
}

// sampleMarker starts a sample this command wrote; without it the sample
// is the author's and stays as it is.
const sampleMarker = "# Written by `make kind` from the chart's defaults; delete this line to keep your edits."

func (g *gen) sampleFile() string {
	return fmt.Sprintf("config/samples/%s_%s_%s.yaml", strings.SplitN(g.Group, ".", 2)[0], g.Version, g.lower())
}

// sample writes a resource whose spec is the chart's defaults (empty
// strings, maps and lists left out).
func (g *gen) sample() error {
	rel := g.sampleFile()
	if current, err := os.ReadFile(g.at(rel)); err == nil && !bytes.HasPrefix(current, []byte(sampleMarker+"\n")) {
		fmt.Fprintf(g.Log, "kept      %s (written by hand)\n", rel)
		var obj map[string]any
		if err := yaml.Unmarshal(current, &obj); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		g.sampleSpec, _ = obj["spec"].(map[string]any)
		return g.listIn("config/samples/kustomization.yaml", path.Base(rel), "")
	}
	ch, err := chartrender.LoadChart(g.at(g.Chart))
	if err != nil {
		return err
	}
	spec, _ := prune(ch.Values).(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	g.sampleSpec = spec
	metadata := map[string]any{"name": g.lower() + "-sample"}
	body, err := yaml.Marshal(map[string]any{
		"apiVersion": g.Group + "/" + g.Version,
		"kind":       g.Kind,
		"metadata":   metadata,
		"spec":       spec,
	})
	if err != nil {
		return err
	}
	if err := g.write(rel, append([]byte(sampleMarker+"\n"), body...)); err != nil {
		return err
	}
	return g.listIn("config/samples/kustomization.yaml", path.Base(rel), "")
}

// prune drops nulls, empty strings, empty maps and empty lists.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if p := prune(e); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(t) == 0 {
			return nil
		}
		return t
	case string:
		if t == "" {
			return nil
		}
	}
	return v
}

// listIn adds "- entry" to the resources list of a kustomization unless it
// is there, after a comment line when comment is set.
func (g *gen) listIn(rel, entry, comment string) error {
	data, err := os.ReadFile(g.at(rel))
	if err != nil {
		return err
	}
	if regexp.MustCompile(`(?m)^- ` + regexp.QuoteMeta(entry) + `$`).Match(data) {
		return nil
	}
	out := append(bytes.TrimRight(data, "\n"), '\n')
	if comment != "" {
		out = append(out, "# "+comment+"\n"...)
	}
	out = append(out, "- "+entry+"\n"...)
	return g.write(rel, out)
}

const nameLimitComment = "  # nameLimit: derived by `make kind` by rendering the chart; run it again after changing the chart."

// kinds adds the kind's entry to config/crd/kinds.yaml, or updates the
// derived nameLimit of the entry that is there.
func (g *gen) kinds() error {
	rel := "config/crd/kinds.yaml"
	ch, err := chartrender.LoadChart(g.at(g.Chart))
	if err != nil {
		return err
	}
	vals, err := chartrender.WithGenerated(ch, g.sampleSpec)
	if err != nil {
		return err
	}
	ns := chartrender.DefaultNamespace
	limit, err := DeriveNameLimit(ch, ns, vals)
	if err != nil {
		return fmt.Errorf("%s: the name limit: %w", g.Chart, err)
	}
	block := nameLimitBlock(limit)
	data, err := os.ReadFile(g.at(rel))
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(data), "\n")
	start, end := g.entry(lines)
	if start < 0 {
		return g.write(rel, []byte(strings.TrimRight(string(data), "\n")+"\n"+g.kindEntry(ch.Metadata.Description, block)))
	}
	// Replace the entry's nameLimit (and the comment this command put
	// above it).
	from, to := -1, -1
	for i := start; i < end; i++ {
		if strings.TrimRight(lines[i], "\n") == "  nameLimit:" {
			from, to = i, i+1
			for to < end && strings.HasPrefix(lines[to], "    ") {
				to++
			}
			if from > start && strings.TrimRight(lines[from-1], "\n") == nameLimitComment {
				from--
			}
			break
		}
	}
	if from < 0 {
		return fmt.Errorf("%s: the entry of %s has no nameLimit block to update", rel, g.Kind)
	}
	if strings.Join(lines[from:to], "") != block && !strings.HasPrefix(strings.TrimRight(lines[from], "\n"), nameLimitComment) {
		fmt.Fprintf(g.Log, "note      %s: %s's nameLimit was written by hand; it is replaced by the derived one\n", rel, g.Kind)
	}
	return g.write(rel, []byte(strings.Join(lines[:from], "")+block+strings.Join(lines[to:], "")))
}

// entry finds the lines [start, end) of the kind's entry, or -1.
func (g *gen) entry(lines []string) (int, int) {
	start := -1
	for i := 0; i <= len(lines); i++ {
		atEntry := i == len(lines) || strings.HasPrefix(lines[i], "- ")
		if !atEntry {
			continue
		}
		if start >= 0 {
			end := i
			body := strings.Join(lines[start:end], "")
			if hasField(body, "kind", g.Kind) && hasField(body, "group", g.Group) {
				return start, end
			}
		}
		start = i
	}
	return -1, -1
}

func hasField(body, key, value string) bool {
	return regexp.MustCompile(`(?m)^(- |  )` + key + `: ` + regexp.QuoteMeta(value) + `\s*$`).MatchString(body)
}

func nameLimitBlock(l apikinds.NameLimit) string {
	var b strings.Builder
	b.WriteString(nameLimitComment + "\n")
	fmt.Fprintf(&b, "  nameLimit:\n    maxLength: %d\n    dns1035Label: %v\n    reason: >-\n", l.MaxLength, *l.DNS1035Label)
	b.WriteString(genfile.Fill("     ", l.Reason, 78))
	return b.String()
}

func (g *gen) kindEntry(chartDescription, nameLimit string) string {
	scope := "Namespaced"
	if g.ClusterScoped {
		scope = "Cluster"
	}
	about := ""
	if d := strings.TrimSpace(chartDescription); d != "" {
		about = " (" + strings.TrimSuffix(d, ".") + ")"
	}
	description := fmt.Sprintf("%s is a release of the %s chart%s. The operator installs the chart as one Helm release per %s, using the object's spec as the chart's values, and keeps the release's objects in line with it: edit the spec to upgrade the release, delete the object to uninstall it. Progress and errors are reported in status.conditions.",
		g.Kind, g.Chart, about, g.Kind)
	var b strings.Builder
	fmt.Fprintf(&b, "# Added by `make kind`. Review the description and printerColumns;\n# `make kind` only ever updates nameLimit here.\n")
	fmt.Fprintf(&b, "- chart: %s\n  group: %s\n  version: %s\n  kind: %s\n  plural: %s\n  singular: %s\n  scope: %s\n",
		g.Chart, g.Group, g.Version, g.Kind, g.Plural, g.lower(), scope)
	b.WriteString("  description: >-\n")
	b.WriteString(genfile.Fill("   ", description, 78))
	b.WriteString(`  printerColumns:
  - name: Chart
    type: string
    description: Version of the chart the release runs (status.chartVersion); during a rollout (ChartRollout), or when platform.acme.com/chart-version pins one, not always the kind's default.
    jsonPath: .status.chartVersion
  - name: Ready
    type: string
    description: Whether every object of the release works (Deployments available, StatefulSets ready, claims bound, namespaces active); its reason and message say what is not.
    jsonPath: .status.conditions[?(@.type=="Ready")].status
  - name: Deployed
    type: string
    description: Whether the Helm release is installed and current.
    jsonPath: .status.conditions[?(@.type=="Deployed")].status
  - name: Age
    type: date
    jsonPath: .metadata.creationTimestamp
`)
	b.WriteString(nameLimit)
	return b.String()
}

// watches adds the kind to watches.yaml unless it is there.
func (g *gen) watches() error {
	rel := "watches.yaml"
	data, err := os.ReadFile(g.at(rel))
	if err != nil {
		return err
	}
	var entries []struct{ Group, Kind string }
	if err := yaml.Unmarshal(data, &entries); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	for _, e := range entries {
		if e.Group == g.Group && e.Kind == g.Kind {
			return g.allowInEntry(rel, data)
		}
	}
	allow, err := g.reportConfinement()
	if err != nil {
		return err
	}
	entry := fmt.Sprintf("- group: %s\n  version: %s\n  kind: %s\n  chart: %s\n  watchDependentResources: true\n", g.Group, g.Version, g.Kind, g.Chart)
	crds, err := g.crdsField()
	if err != nil {
		return err
	}
	entry += crds
	return g.write(rel, []byte(strings.TrimRight(string(data), "\n")+"\n"+entry+allow))
}

// crdsField is the crds field of a new watches.yaml entry: "crds: create"
// (the default, written so that the choice is visible) when the chart or
// a subchart has a crds/ directory with CRDs, else nothing.
func (g *gen) crdsField() (string, error) {
	ch, err := chartrender.LoadChart(g.at(g.Chart))
	if err != nil {
		return "", err
	}
	crds, err := manifest.ChartCRDs(ch)
	if err != nil || len(crds) == 0 {
		return "", err
	}
	fmt.Fprintf(g.Log, "note      the chart has %d CRD(s) in crds/: its watches.yaml entry says crds: create (skip, create-replace: docs/adding-a-kind.md, \"Charts with CRDs\")\n", len(crds))
	return "  # What the runtime does with the chart's crds/: skip, create (Helm's way)\n  # or create-replace (docs/adding-a-kind.md, \"Charts with CRDs\").\n  crds: create\n", nil
}

// allowInEntry reports what the chart places outside a resource's
// namespace for a kind whose watches.yaml entry exists. The entry is the
// user's: it is left alone, but for the allowance when asked and the
// entry has no confinement field yet.
func (g *gen) allowInEntry(rel string, data []byte) error {
	allow, err := g.reportConfinement()
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(data), "\n")
	start, end := g.entry(lines)
	if allow == "" || start < 0 || regexp.MustCompile(`(?m)^  confinement:`).MatchString(strings.Join(lines[start:end], "")) {
		if allow != "" {
			fmt.Fprintf(g.Log, "kept      %s (its %s entry has a confinement field already: edit it by hand)\n", rel, g.Kind)
		} else {
			fmt.Fprintf(g.Log, "kept      %s (lists %s already)\n", rel, g.Kind)
		}
		return nil
	}
	for end > start && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	body := strings.Join(lines[:end], "")
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return g.write(rel, []byte(body+allow+strings.Join(lines[end:], "")))
}

// roles writes the admin, editor and viewer ClusterRoles of the kind,
// aggregated into the built-in admin, edit and view roles (a
// cluster-scoped kind's admin and editor roles are not aggregated: they are
// bound explicitly, as NamespaceTenant's).
func (g *gen) roles() error {
	type role struct{ suffix, verbs, aggregate, about string }
	roles := []role{
		{"admin", "create, delete, deletecollection, get, list, patch, update, watch", "admin",
			"Aggregated into the built-in admin ClusterRole: users with full control over\n# namespaced objects have it over %s resources too."},
		{"editor", "create, delete, get, list, patch, update, watch", "edit",
			"Aggregated into the built-in edit ClusterRole: users who may create, change\n# and delete namespaced objects may do so with %s resources too."},
		{"viewer", "get, list, watch", "view",
			"Aggregated into the built-in view ClusterRole: users who may read namespaced\n# objects may read %s resources too."},
	}
	for _, r := range roles {
		about := fmt.Sprintf(r.about, g.Kind)
		labels := fmt.Sprintf("  labels:\n    rbac.authorization.k8s.io/aggregate-to-%s: \"true\"\n", r.aggregate)
		if g.ClusterScoped && r.suffix != "viewer" {
			about = fmt.Sprintf("%s resources are cluster-scoped: this role is not aggregated into the\n# built-in %s role; bind it with a ClusterRoleBinding.", g.Kind, r.aggregate)
			labels = ""
		}
		name := fmt.Sprintf("%s-%s-role", g.lower(), r.suffix)
		body := fmt.Sprintf(`# Written by make kind.
# %s
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s
%srules:
- apiGroups: [%s]
  resources: [%s]
  verbs: [%s]
- apiGroups: [%s]
  resources: [%s/status]
  verbs: [get]
`, about, name, labels, g.Group, g.Plural, r.verbs, g.Group, g.Plural)
		file := fmt.Sprintf("%s_%s_role.yaml", g.lower(), r.suffix)
		if err := g.write("config/rbac/"+file, []byte(body)); err != nil {
			return err
		}
		comment := ""
		if r.suffix == "admin" {
			comment = g.Kind + " (make kind)."
		}
		if err := g.listIn("config/rbac/kustomization.yaml", file, comment); err != nil {
			return err
		}
	}
	return nil
}

// project adds the resource to PROJECT, as operator-sdk create api would.
func (g *gen) project() error {
	rel := "PROJECT"
	data, err := os.ReadFile(g.at(rel))
	if err != nil {
		return err
	}
	var p struct {
		Domain    string `json:"domain"`
		Resources []struct {
			Group, Kind, Domain string
		} `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	group, domain := g.Group, ""
	if p.Domain != "" && strings.HasSuffix(g.Group, "."+p.Domain) {
		group, domain = strings.TrimSuffix(g.Group, "."+p.Domain), p.Domain
	} else if i := strings.Index(g.Group, "."); i > 0 {
		group, domain = g.Group[:i], g.Group[i+1:]
	}
	for _, r := range p.Resources {
		if r.Kind == g.Kind && r.Group == group && r.Domain == domain {
			fmt.Fprintf(g.Log, "kept      %s (lists %s already)\n", rel, g.Kind)
			return nil
		}
	}
	entry := fmt.Sprintf("- api:\n    crdVersion: v1\n    namespaced: %v\n  domain: %s\n  group: %s\n  kind: %s\n  version: %s\n", !g.ClusterScoped, domain, group, g.Kind, g.Version)
	text := string(data)
	i := strings.Index(text, "\nversion: ")
	if i < 0 {
		return fmt.Errorf("%s: no top-level version line to add the resource before", rel)
	}
	return g.write(rel, []byte(text[:i+1]+entry+text[i+1:]))
}

// derived runs the generators: the CRD, the runtime's RBAC rules and the
// CSV's owned CRDs.
func (g *gen) derived() error {
	res, err := crdgen.Generate(crdgen.Options{Root: g.Root, KindsFile: "config/crd/kinds.yaml", OutDir: "config/crd/bases", Kustomization: "config/crd/kustomization.yaml"})
	if err != nil {
		return err
	}
	if err := res.Write(g.Root); err != nil {
		return err
	}
	fmt.Fprintf(g.Log, "wrote     config/crd/bases (crdgen)\n")
	roles, err := rbacgen.Generate(rbacgen.Input{Root: g.Root, Kinds: "config/crd/kinds.yaml", Samples: "config/samples", Watches: "watches.yaml"})
	if err != nil {
		return err
	}
	roleRel := "config/rbac/role.yaml"
	role, err := os.ReadFile(g.at(roleRel))
	if err != nil {
		return err
	}
	spliced, err := rbacgen.Splice(role, roles.Section)
	if err != nil {
		return err
	}
	if err := g.write(roleRel, spliced); err != nil {
		return err
	}
	if err := g.write("config/rbac/release_deployer_role.yaml", []byte(roles.Deployer)); err != nil {
		return err
	}
	paths := csvgen.DefaultPaths(g.Root)
	out, changed, err := csvgen.Generate(paths)
	if err != nil {
		return err
	}
	if changed {
		if err := g.write(paths.CSV, out); err != nil {
			return err
		}
	}
	return g.chart()
}

// chart regenerates the operator's Helm chart, which installs the new CRD
// and RBAC too, when the tree holds one.
func (g *gen) chart() error {
	if _, err := os.Stat(g.at(chartgen.Dir + "/Chart.yaml")); os.IsNotExist(err) {
		return nil
	}
	files, err := chartgen.Generate(g.Root, chartgen.Chart{})
	if err != nil {
		return err
	}
	for _, p := range chartgen.Files(files) {
		current, err := os.ReadFile(g.at(chartgen.Dir + "/" + p))
		if err == nil && bytes.Equal(current, files[p]) {
			continue
		}
		if err := g.write(chartgen.Dir+"/"+p, files[p]); err != nil {
			return err
		}
	}
	return nil
}

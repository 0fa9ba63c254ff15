// Package rbacgen derives the Helm runtime's RBAC rules from the charts
// (rendered with their samples and ci/ values, see chartrender.RenderKind). For every
// chart-backed kind of config/crd/kinds.yaml: the rules on its own custom
// resources; for a cluster-scoped kind, the rules to create, change, delete
// and watch every kind of object its chart renders (its releases are
// applied with the operator's rights); for a namespaced kind, only to watch
// them, since its releases are applied as a ServiceAccount of their
// namespace, bound to the deployer ClusterRole this package also writes
// (config/rbac/release_deployer_role.yaml). The operator's rules go
// between two marker lines of config/rbac/role.yaml; everything outside the
// markers is written by hand (Helm's storage, Events, the sidecar's needs)
// and left alone.
package rbacgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/gen/chartrender"
	"github.com/acme/platform-operator/internal/gen/genfile"
	"github.com/acme/platform-operator/internal/operator/apikinds"
	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// The marker lines around the generated rules in the role file.
const (
	Begin = "# BEGIN rendered by the charts: `make manifests` writes the rules down to END from"
	End   = "# END rendered by the charts."
)

const beginComment = Begin + `
# config/crd/kinds.yaml and a render of each kind's chart with its samples
# (config/samples) and its ci/ values files. Do not edit them by hand: change
# the chart, a sample or a ci/ values file and run make manifests.`

// The verbs the runtime needs on its own custom resources, their status and
// their finalizers, and on every kind of object a chart renders (watched
// for drift repair).
var (
	crVerbs        = []string{"get", "list", "watch", "update", "patch"}
	statusVerbs    = []string{"get", "update", "patch"}
	finalizerVerbs = []string{"update"}
	objectVerbs    = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	readVerbs      = []string{"get", "list", "watch"}
)

// Input is where the derivation reads, relative to Root.
type Input struct {
	Root    string
	Kinds   string // config/crd/kinds.yaml
	Samples string // config/samples
	// Watches is watches.yaml, whose crds field says what the runtime
	// does with each chart's crds/; "" reads none and grants no right on
	// CRDs.
	Watches string
}

// Roles are what the derivation writes.
type Roles struct {
	// Section is the operator's generated rules, marker lines included.
	Section string
	// Deployer is the release deployer ClusterRole, a whole file.
	Deployer string
}

// Generate renders every kind's chart once and derives both roles from
// the renders.
func Generate(in Input) (Roles, error) {
	kinds, err := render(in)
	if err != nil {
		return Roles{}, err
	}
	return Roles{Section: section(kinds), Deployer: deployerRole(kinds)}, nil
}

// section returns the operator's rules: its own custom resources; what
// the cluster-scoped kinds render, which their releases write with the
// operator's rights; and what the namespaced kinds render, which it only
// reads, since their releases are applied as a ServiceAccount of their
// namespace (deployerRole).
func section(kinds []renderedKind) string {
	var b strings.Builder
	b.WriteString(beginComment + "\n")
	written := map[schema.GroupResource]map[string]bool{}
	read := map[schema.GroupResource]map[string]bool{}
	binds := map[bindKey]map[string]bool{}
	var clusterKinds, namespacedKinds []string
	for _, k := range kinds {
		fmt.Fprintf(&b, "# The %s API (%s).\n", k.kind.Kind, k.kind.Chart)
		writeRule(&b, k.kind.Group, []string{k.kind.Plural}, crVerbs, nil)
		writeRule(&b, k.kind.Group, []string{k.kind.Plural + "/status"}, statusVerbs, nil)
		writeRule(&b, k.kind.Group, []string{k.kind.Plural + "/finalizers"}, finalizerVerbs, nil)
		if k.kind.Scope == apiextensionsv1.NamespaceScoped {
			namespacedKinds = append(namespacedKinds, k.kind.Kind)
			k.addTo(read, map[bindKey]map[string]bool{})
			continue
		}
		clusterKinds = append(clusterKinds, k.kind.Kind)
		k.addTo(written, binds)
	}
	if len(written) > 0 {
		writeComment(&b, fmt.Sprintf("What the releases of %s (cluster-scoped) render, applied with the operator's rights: created, changed and deleted with the release, and watched to repair drift.", strings.Join(clusterKinds, ", ")))
		writeRendered(&b, written, objectVerbs)
	}
	for gr := range written {
		delete(read, gr)
	}
	if len(read) > 0 {
		writeComment(&b, fmt.Sprintf("What the releases of %s render, applied as a ServiceAccount of their namespace (release_deployer_role.yaml): only watched, to repair drift and to say why a release is not Ready.", strings.Join(namespacedKinds, ", ")))
		writeRendered(&b, read, readVerbs)
	}
	writeBinds(&b, binds)
	writeCRDRules(&b, kinds)
	b.WriteString(End + "\n")
	return b.String()
}

// DeployerRoleName is the name of the ClusterRole DeployerRole writes,
// before kustomize's namePrefix.
const DeployerRoleName = "release-deployer"

// deployerRole returns the ClusterRole that a ServiceAccount of a
// namespace needs for the releases of the namespaced chart-backed kinds
// to be applied as it (impersonation, docs/security.md): every kind of
// object their charts render, the roles they bind, and the logs of their
// test Pods. Bound in one namespace by a RoleBinding, it grants nothing
// outside that namespace.
func deployerRole(kinds []renderedKind) string {
	rendered := map[schema.GroupResource]map[string]bool{}
	binds := map[bindKey]map[string]bool{}
	var names []string
	for _, k := range kinds {
		if k.kind.Scope != apiextensionsv1.NamespaceScoped {
			continue
		}
		names = append(names, k.kind.Kind)
		k.addTo(rendered, binds)
	}
	var b strings.Builder
	b.WriteString(`# Generated by ` + "`make manifests`" + ` (go run ./cmd/rbacgen) from config/crd/kinds.yaml
# and a render of each namespaced kind's chart with its samples and ci/
# values files. Do not edit by hand.
#
`)
	writeComment(&b, fmt.Sprintf("What the releases of %s need, applied as a ServiceAccount of their namespace: the operator's --release-service-account (which it creates, bound to this role), a watches.yaml serviceAccountName, or the namespace's platform.acme.com/release-service-account annotation. Bound in one namespace by a RoleBinding, it grants nothing elsewhere.", strings.Join(names, ", ")))
	b.WriteString("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + DeployerRoleName + "\nrules:\n")
	b.WriteString("# What the charts render: created, changed and deleted with the release,\n# and watched to repair drift.\n")
	writeRendered(&b, rendered, objectVerbs)
	if rendered[schema.GroupResource{Resource: "pods"}] != nil {
		b.WriteString("# The chart tests' Pods: their last log lines go into the TestFailed Event.\n")
		writeRule(&b, "", []string{"pods/log"}, []string{"get"}, nil)
	}
	writeBinds(&b, binds)
	writeComment(&b, "The sidecar, as this identity too: a CronScaler scales its target (the /scale subresource, or an HPA's minReplicas and maxReplicas), and the rotation annotation rolls the Pods of a Deployment or StatefulSet whose Secrets or ConfigMaps changed.")
	writeRule(&b, "apps", []string{"deployments/scale", "replicasets/scale", "statefulsets/scale"}, []string{"get", "update", "patch"}, nil)
	writeRule(&b, "apps", []string{"deployments", "statefulsets"}, []string{"get", "patch"}, nil)
	writeRule(&b, "autoscaling", []string{"horizontalpodautoscalers"}, []string{"get", "update", "patch"}, nil)
	return b.String()
}

// renderedKind is one chart-backed kind and the objects its chart renders
// with its samples and ci/ values.
type renderedKind struct {
	kind    apikinds.Kind
	objects []*unstructured.Unstructured
	// crds are the names of the CRDs of the chart's crds/ directories,
	// its subcharts' included, and crdPolicy the kind's watches.yaml crds.
	crds      []string
	crdPolicy watchconfig.CRDPolicy
}

// render renders the chart of every kind of in.
func render(in Input) ([]renderedKind, error) {
	at := func(rel string) string { return filepath.Join(in.Root, filepath.FromSlash(rel)) }
	kinds, err := apikinds.LoadKinds(at(in.Kinds))
	if err != nil {
		return nil, err
	}
	samples, err := chartrender.Samples(at(in.Samples))
	if err != nil {
		return nil, err
	}
	policies, err := crdPolicies(in)
	if err != nil {
		return nil, err
	}
	var out []renderedKind
	var errs []error
	for _, k := range kinds {
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
		renders, err := chartrender.RenderKind(at(k.Chart), gvk, samples)
		if err != nil {
			errs = append(errs, fmt.Errorf("kind %s: %w", k.Kind, err))
			continue
		}
		rk := renderedKind{kind: k, crdPolicy: policies[k.Group+"/"+k.Kind]}
		if in.Watches != "" && rk.crdPolicy != watchconfig.CRDsSkip {
			if rk.crds, err = chartCRDNames(at(k.Chart)); err != nil {
				return nil, fmt.Errorf("kind %s: %w", k.Kind, err)
			}
		}
		for _, r := range renders {
			for _, o := range objects(r.Result.Objects, r.Result.Hooks) {
				if _, err := schema.ParseGroupVersion(o.GetAPIVersion()); err != nil {
					return nil, fmt.Errorf("kind %s, %s: %s %s: %w", k.Kind, r.From, o.GetKind(), o.GetName(), err)
				}
				rk.objects = append(rk.objects, o)
			}
		}
		out = append(out, rk)
	}
	return out, errors.Join(errs...)
}

// crdPolicies reads the crds field of in.Watches by group/kind; a kind
// without an entry, or an entry without the field, has CRDsCreate.
func crdPolicies(in Input) (map[string]watchconfig.CRDPolicy, error) {
	out := map[string]watchconfig.CRDPolicy{}
	if in.Watches == "" {
		return out, nil
	}
	path := filepath.Join(in.Root, filepath.FromSlash(in.Watches))
	policies, err := watchconfig.LoadCRDPolicies(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.Watches, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []struct{ Group, Kind string }
	if err := yaml.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", in.Watches, err)
	}
	for i, e := range entries {
		out[e.Group+"/"+e.Kind] = policies[i]
	}
	return out, nil
}

// chartCRDNames returns the names of the CRDs of the crds/ directories of
// the chart in dir and of its subcharts.
func chartCRDNames(dir string) ([]string, error) {
	ch, err := chartrender.LoadChart(dir)
	if err != nil {
		return nil, err
	}
	crds, err := manifest.ChartCRDs(ch)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.GetName())
	}
	sort.Strings(names)
	return names, nil
}

// writeCRDRules writes the rights the runtime needs on the CRDs of the
// charts' crds/, which it applies with its own rights as each kind's
// watches.yaml crds says (actionpath/crds.go): read them by name; create
// a missing one (create, create-replace), a right RBAC cannot restrict by
// name, as a create names no object until it is made; and for
// create-replace patch them by name (server-side apply). skip needs
// nothing. Listing and watching every CRD is granted by hand above.
func writeCRDRules(b *strings.Builder, kinds []renderedKind) {
	var read, replace, users, replacers []string
	for _, k := range kinds {
		if len(k.crds) == 0 || k.crdPolicy == watchconfig.CRDsSkip {
			continue
		}
		read = append(read, k.crds...)
		users = append(users, fmt.Sprintf("%s: crds: %s", k.kind.Kind, k.crdPolicy))
		if k.crdPolicy == watchconfig.CRDsCreateReplace {
			replace = append(replace, k.crds...)
			replacers = append(replacers, k.kind.Kind)
		}
	}
	if len(read) == 0 {
		return
	}
	sort.Strings(read)
	writeComment(b, fmt.Sprintf("The CRDs of the charts' crds/ directories, which the runtime applies with its own rights as watches.yaml says (%s): read by name, and created when missing; RBAC cannot restrict a create by name.", strings.Join(users, "; ")))
	writeRule(b, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{"get"}, compact(read))
	writeRule(b, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{"create"}, nil)
	if len(replace) > 0 {
		sort.Strings(replace)
		writeComment(b, fmt.Sprintf("create-replace (%s): the CRDs are updated to the chart's version by server-side apply, a patch.", strings.Join(replacers, ", ")))
		writeRule(b, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{"patch"}, compact(replace))
	}
}

// compact returns sorted names without repeats.
func compact(names []string) []string {
	sort.Strings(names)
	out := names[:0:0]
	for i, n := range names {
		if i == 0 || n != names[i-1] {
			out = append(out, n)
		}
	}
	return out
}

// addTo records the kinds of object k renders, and the roles they bind.
func (k renderedKind) addTo(rendered map[schema.GroupResource]map[string]bool, binds map[bindKey]map[string]bool) {
	for _, o := range k.objects {
		gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
		gr := resourceOf(gv.WithKind(o.GetKind()))
		if rendered[gr] == nil {
			rendered[gr] = map[string]bool{}
		}
		rendered[gr][k.kind.Kind] = true
		if bk, ok := bindOf(o); ok {
			if binds[bk] == nil {
				binds[bk] = map[string]bool{}
			}
			binds[bk][k.kind.Kind] = true
		}
	}
}

// objects are the objects the runtime creates: the manifest's and its
// hooks', test hooks included (the runtime runs a chart's tests when the
// kind or the resource asks, see actionpath/charttests.go).
func objects(manifest, hooks []*unstructured.Unstructured) []*unstructured.Unstructured {
	return append(append([]*unstructured.Unstructured{}, manifest...), hooks...)
}

// resourceOf names the resource of a kind the way the API server's
// discovery does for every built-in kind and for CRDs scaffolded with
// default plurals (lower case, English plural).
func resourceOf(gvk schema.GroupVersionKind) schema.GroupResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}

// bindKey is a (Cluster)Role that a rendered RoleBinding or
// ClusterRoleBinding refers to. Creating such a binding needs every
// permission of the role or "bind" on it; the runtime gets "bind" on
// exactly the roles the charts bind.
type bindKey struct{ resource, name string }

func bindOf(o *unstructured.Unstructured) (bindKey, bool) {
	if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
		return bindKey{}, false
	}
	kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
	name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
	switch kind {
	case "ClusterRole":
		return bindKey{"clusterroles", name}, true
	case "Role":
		return bindKey{"roles", name}, true
	}
	return bindKey{}, false
}

func writeRendered(b *strings.Builder, rendered map[schema.GroupResource]map[string]bool, verbs []string) {
	byGroup := map[string][]string{}
	for gr := range rendered {
		byGroup[gr.Group] = append(byGroup[gr.Group], gr.Resource)
	}
	groups := sortedKeys(byGroup)
	for _, g := range groups {
		resources := byGroup[g]
		sort.Strings(resources)
		var parts []string
		for _, r := range resources {
			parts = append(parts, fmt.Sprintf("%s (%s)", r, strings.Join(sortedKeys(rendered[schema.GroupResource{Group: g, Resource: r}]), ", ")))
		}
		writeComment(b, strings.Join(parts, ", ")+".")
		writeRule(b, g, resources, verbs, nil)
	}
}

func writeBinds(b *strings.Builder, binds map[bindKey]map[string]bool) {
	byResource := map[string][]string{}
	users := map[string]map[string]bool{}
	for k, kinds := range binds {
		byResource[k.resource] = append(byResource[k.resource], k.name)
		if users[k.resource] == nil {
			users[k.resource] = map[string]bool{}
		}
		for kind := range kinds {
			users[k.resource][kind] = true
		}
	}
	for _, res := range sortedKeys(byResource) {
		names := byResource[res]
		sort.Strings(names)
		writeComment(b, fmt.Sprintf("The %s that the charts bind (%s): creating a binding needs every permission of the role, or bind on it.",
			strings.TrimSuffix(res, "s"), strings.Join(sortedKeys(users[res]), ", ")))
		writeRule(b, "rbac.authorization.k8s.io", []string{res}, []string{"bind"}, names)
	}
}

func writeRule(b *strings.Builder, group string, resources, verbs, names []string) {
	q := group
	if q == "" {
		q = `""`
	}
	fmt.Fprintf(b, "- apiGroups: [%s]\n  resources: [%s]\n  verbs: [%s]\n", q, strings.Join(resources, ", "), strings.Join(verbs, ", "))
	if len(names) > 0 {
		fmt.Fprintf(b, "  resourceNames: [%s]\n", strings.Join(names, ", "))
	}
}

// writeComment wraps text into comment lines of at most 78 characters.
func writeComment(b *strings.Builder, text string) {
	b.WriteString(genfile.Fill("#", text, 78))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Splice returns role with the lines from Begin to End (inclusive)
// replaced by section. A role without the markers gets the section at its
// end, after its rules.
func Splice(role []byte, section string) ([]byte, error) {
	lines := strings.SplitAfter(string(role), "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch strings.TrimRight(l, "\n") {
		case Begin:
			if begin >= 0 {
				return nil, fmt.Errorf("the role has two %q lines", Begin)
			}
			begin = i
		case End:
			end = i
		}
	}
	switch {
	case begin < 0 && end < 0:
		out := bytes.TrimRight(role, "\n")
		return append(append(out, '\n'), section...), nil
	case begin < 0 || end < begin:
		return nil, fmt.Errorf("the role's generated rules must start with %q and end with %q", Begin, End)
	}
	return []byte(strings.Join(lines[:begin], "") + section + strings.Join(lines[end+1:], "")), nil
}

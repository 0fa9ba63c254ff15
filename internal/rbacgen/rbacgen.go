// Package rbacgen derives the Helm runtime's RBAC rules from the charts: for
// every chart-backed kind of config/crd/kinds.yaml, the rules on its own
// custom resources, and for every kind of object its chart renders (with
// its samples and ci/ values, see chartsamples) the rules to create, change,
// delete and watch it. The rules go between two marker lines of
// config/rbac/role.yaml; everything outside the markers is written by hand
// (Helm's storage, Events, the sidecar's needs) and left alone.
package rbacgen

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/acme/platform-operator/internal/chartsamples"
	"github.com/acme/platform-operator/internal/crdgen"
	"github.com/acme/platform-operator/internal/textwrap"
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
)

// Input is where the derivation reads, relative to Root.
type Input struct {
	Root    string
	Kinds   string // config/crd/kinds.yaml
	Samples string // config/samples
}

// Section returns the generated rules, marker lines included.
func Section(in Input) (string, error) {
	at := func(rel string) string { return filepath.Join(in.Root, filepath.FromSlash(rel)) }
	kinds, err := crdgen.LoadKinds(at(in.Kinds))
	if err != nil {
		return "", err
	}
	samples, err := chartsamples.Samples(at(in.Samples))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(beginComment + "\n")
	// Which kinds of object the charts render, and which chart-backed kinds
	// render them (for the comments).
	rendered := map[schema.GroupResource]map[string]bool{}
	binds := map[bindKey]map[string]bool{}
	var errs []error
	for _, k := range kinds {
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
		fmt.Fprintf(&b, "# The %s API (%s).\n", k.Kind, k.Chart)
		writeRule(&b, k.Group, []string{k.Plural}, crVerbs, nil)
		writeRule(&b, k.Group, []string{k.Plural + "/status"}, statusVerbs, nil)
		writeRule(&b, k.Group, []string{k.Plural + "/finalizers"}, finalizerVerbs, nil)
		renders, err := chartsamples.RenderKind(at(k.Chart), gvk, samples)
		if err != nil {
			errs = append(errs, fmt.Errorf("kind %s: %w", k.Kind, err))
			continue
		}
		for _, r := range renders {
			for _, o := range objects(r.Result.Objects, r.Result.Hooks) {
				gv, err := schema.ParseGroupVersion(o.GetAPIVersion())
				if err != nil {
					return "", fmt.Errorf("kind %s, %s: %s %s: %w", k.Kind, r.From, o.GetKind(), o.GetName(), err)
				}
				gr := resourceOf(gv.WithKind(o.GetKind()))
				if rendered[gr] == nil {
					rendered[gr] = map[string]bool{}
				}
				rendered[gr][k.Kind] = true
				if bk, ok := bindOf(o); ok {
					if binds[bk] == nil {
						binds[bk] = map[string]bool{}
					}
					binds[bk][k.Kind] = true
				}
			}
		}
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	writeRendered(&b, rendered)
	writeBinds(&b, binds)
	b.WriteString(End + "\n")
	return b.String(), nil
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

func writeRendered(b *strings.Builder, rendered map[schema.GroupResource]map[string]bool) {
	byGroup := map[string][]string{}
	for gr := range rendered {
		byGroup[gr.Group] = append(byGroup[gr.Group], gr.Resource)
	}
	groups := sortedKeys(byGroup)
	b.WriteString("# What the charts render: created, changed and deleted with the release,\n# and watched to repair drift.\n")
	for _, g := range groups {
		resources := byGroup[g]
		sort.Strings(resources)
		var parts []string
		for _, r := range resources {
			parts = append(parts, fmt.Sprintf("%s (%s)", r, strings.Join(sortedKeys(rendered[schema.GroupResource{Group: g, Resource: r}]), ", ")))
		}
		writeComment(b, strings.Join(parts, ", ")+".")
		writeRule(b, g, resources, objectVerbs, nil)
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
	b.WriteString(textwrap.Fill("#", text, 78))
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

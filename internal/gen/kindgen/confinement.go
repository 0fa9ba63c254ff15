package kindgen

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/gen/chartrender"
	"github.com/acme/platform-operator/internal/operator/release"
)

// The confinement report: what the chart, rendered with the kind's samples
// and its ci/ values, would place outside a resource's namespace. Such a
// release is refused at apply and by the runtime unless the kind's
// watches.yaml entry allows it (docs/usage.md, "Confinement"); kindgen says
// so, and writes the allowance only when asked (Options.AllowOutside).

// clusterScoped are the cluster-scoped kinds of the API server's built-in
// groups; every other kind of those groups is namespaced.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Kind: "Node"}: true, {Kind: "PersistentVolume"}: true, {Kind: "ComponentStatus"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
}

// builtinGroups are the API server's own groups.
var builtinGroups = map[string]bool{
	"": true, "apps": true, "batch": true, "autoscaling": true, "policy": true,
	"networking.k8s.io": true, "rbac.authorization.k8s.io": true, "storage.k8s.io": true,
	"scheduling.k8s.io": true, "coordination.k8s.io": true, "discovery.k8s.io": true,
	"apiextensions.k8s.io": true, "apiregistration.k8s.io": true, "admissionregistration.k8s.io": true,
	"node.k8s.io": true, "certificates.k8s.io": true, "flowcontrol.apiserver.k8s.io": true, "events.k8s.io": true,
}

// scopeOf is the scope of a built-in kind, and ScopeUnknown for a kind a
// CRD serves: its scope is known only where the CRD is installed.
func scopeOf(gk schema.GroupKind) release.Scope {
	switch {
	case clusterScoped[gk]:
		return release.ClusterScoped
	case builtinGroups[gk.Group]:
		return release.Namespaced
	}
	return release.ScopeUnknown
}

// outside is one finding: an object placed outside the resource's
// namespace, and the render that placed it.
type outside struct {
	placement release.Placement
	from      string
}

// outsideObjects renders the chart as rbacgen does and lists the objects
// the new kind's releases would place outside a resource's namespace (for
// a namespaced kind: in another namespace; for either: cluster-scoped),
// and those of kinds whose scope depends on a CRD.
func (g *gen) outsideObjects() ([]outside, error) {
	samples, err := chartrender.Samples(g.at("config/samples"))
	if err != nil {
		return nil, err
	}
	renders, err := chartrender.RenderKind(g.at(g.Chart), schema.GroupVersionKind{Group: g.Group, Version: g.Version, Kind: g.Kind}, samples)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []outside
	for _, r := range renders {
		ns := r.Namespace
		for _, o := range append(append(r.Result.Objects[:0:0], r.Result.Objects...), r.Result.Hooks...) {
			gvk := o.GroupVersionKind()
			p := release.Placement{GVK: gvk, Name: o.GetName(), Namespace: o.GetNamespace(), Scope: scopeOf(gvk.GroupKind())}
			switch p.Scope {
			case release.Namespaced:
				if g.ClusterScoped || p.Namespace == "" || p.Namespace == ns {
					continue
				}
			case release.ClusterScoped:
				p.Namespace = ""
			}
			if key := p.String() + "/" + gvk.GroupKind().String(); !seen[key] {
				seen[key] = true
				out = append(out, outside{placement: p, from: r.From})
			}
		}
	}
	return out, nil
}

// allowance is the confinement field that lets the findings through;
// kinds of unknown scope are not in it (their CRD decides).
func allowance(found []outside) (release.Confinement, []string) {
	kinds, namespaces := map[string]bool{}, map[string]bool{}
	for _, f := range found {
		switch f.placement.Scope {
		case release.ClusterScoped:
			kinds[release.GroupKindName(f.placement.GVK.GroupKind())] = true
		case release.Namespaced:
			namespaces[f.placement.Namespace] = true
		}
	}
	var c release.Confinement
	for _, k := range sortedSet(kinds) {
		gk, _ := release.ParseGroupKind(k)
		c.ClusterScopedKinds = append(c.ClusterScopedKinds, gk)
	}
	c.Namespaces = sortedSet(namespaces)
	return c, sortedSet(kinds)
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// confinementYAML is the confinement field of a watches.yaml entry, its
// lines indented for the entry.
func confinementYAML(c release.Confinement, kindNames []string) string {
	field := map[string]any{}
	if len(kindNames) > 0 {
		field["clusterScopedKinds"] = kindNames
	}
	if len(c.Namespaces) > 0 {
		field["namespaces"] = c.Namespaces
	}
	if len(field) == 0 {
		return ""
	}
	b, _ := yaml.Marshal(map[string]any{"confinement": field})
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// reportConfinement says what the chart would place outside a resource's
// namespace, and returns the confinement field to write into a new
// watches.yaml entry: empty unless AllowOutside.
func (g *gen) reportConfinement() (string, error) {
	found, err := g.outsideObjects()
	if err != nil {
		return "", err
	}
	if len(found) == 0 {
		fmt.Fprintf(g.Log, "confinement: with its samples and ci/ values the chart places everything in the resource's namespace\n")
		return "", nil
	}
	fmt.Fprintf(g.Log, "confinement: with its samples and ci/ values the chart places outside the resource's namespace:\n")
	for _, f := range found {
		what := "cluster-scoped"
		switch f.placement.Scope {
		case release.Namespaced:
			what = "another namespace"
		case release.ScopeUnknown:
			what = "a kind served by a CRD: its scope is checked where the CRD is installed"
		}
		fmt.Fprintf(g.Log, "  %s (%s), from %s\n", f.placement, what, f.from)
	}
	c, kindNames := allowance(found)
	field := confinementYAML(c, kindNames)
	if field == "" {
		return "", nil
	}
	if !g.AllowOutside {
		fmt.Fprintf(g.Log, "  releases that render these are refused; to allow them, run again with ALLOW_OUTSIDE=1, or add to the %s entry of watches.yaml:\n%s", g.Kind, field)
		return "", nil
	}
	return field, nil
}

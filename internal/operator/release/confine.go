package release

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Confinement is the rule of where a release may place what its chart
// renders. The operator writes every object with its own cluster-wide
// rights, and a resource's spec is the chart's values; without this rule a
// value could put an object in another tenant's namespace, or create
// cluster-wide RBAC, with no more right than creating the resource.
//
//   - A release of a namespaced kind places its namespaced objects in the
//     resource's namespace (an object without a namespace is placed there
//     by Helm), or in a namespace the kind's allowance lists.
//   - A release of a cluster-scoped kind may place namespaced objects in
//     any namespace: creating a cluster-scoped resource already takes
//     cluster-level rights.
//   - Of either, a cluster-scoped object is placed only when its kind is
//     one the kind's allowance lists; an object of a kind the API server
//     does not serve is refused, as its scope cannot be known (Helm would
//     refuse it too).
//
// The admission check (package admissioncheck) and the runtime's confinement
// layer (package actionpath) both ask Check.

// Confinement is a kind's allowance: what a release of the kind may place
// outside its resource's namespace (the confinement field of the kind's
// watches.yaml entry).
type Confinement struct {
	// ClusterScopedKinds are the cluster-scoped kinds a release may create
	// (NamespaceTenant: Namespace).
	ClusterScopedKinds []schema.GroupKind
	// Namespaces are further namespaces a release of a namespaced kind may
	// place namespaced objects in. Unused for cluster-scoped kinds.
	Namespaces []string
}

// Scope is the scope of a rendered object's kind, as the API server's
// RESTMapper says.
type Scope int

const (
	// ScopeUnknown: the API server does not serve the kind.
	ScopeUnknown Scope = iota
	// Namespaced objects live in a namespace.
	Namespaced
	// ClusterScoped objects live in no namespace.
	ClusterScoped
)

// Placement is where one rendered object lands.
type Placement struct {
	GVK  schema.GroupVersionKind
	Name string
	// Namespace is the object's namespace as rendered; empty for a
	// namespaced object is the release namespace.
	Namespace string
	Scope     Scope
}

// String is `ConfigMap "cm" in namespace "acc"`, or `ClusterRole "x"` for
// an object without a namespace.
func (p Placement) String() string {
	if p.Namespace == "" || p.Scope == ClusterScoped {
		return fmt.Sprintf("%s %q", p.GVK.Kind, p.Name)
	}
	return fmt.Sprintf("%s %q in namespace %q", p.GVK.Kind, p.Name, p.Namespace)
}

// Check returns a *ConfinementError for the first object of objs the
// allowance c does not let a resource of kind in namespace place; nil when
// every object may be placed. namespace is empty for a cluster-scoped kind.
func (c Confinement) Check(kind, namespace string, objs []Placement) error {
	for _, o := range objs {
		refused := &ConfinementError{Object: o, Kind: kind, Namespace: namespace}
		switch o.Scope {
		case Namespaced:
			if namespace == "" || o.Namespace == "" || o.Namespace == namespace || slices.Contains(c.Namespaces, o.Namespace) {
				continue
			}
			return refused
		case ClusterScoped:
			if slices.Contains(c.ClusterScopedKinds, o.GVK.GroupKind()) {
				continue
			}
			return refused
		default:
			return refused
		}
	}
	return nil
}

// ConfinementError refuses a release that would place an object where its
// kind's allowance does not let it.
type ConfinementError struct {
	// Object is the first object refused.
	Object Placement
	// Kind is the kind of the custom resource whose release was refused.
	Kind string
	// Namespace is the custom resource's namespace; empty when its kind is
	// cluster-scoped.
	Namespace string
}

func (e *ConfinementError) Error() string {
	entry := fmt.Sprintf("the %s entry of watches.yaml", e.Kind)
	kind := GroupKindName(e.Object.GVK.GroupKind())
	switch e.Object.Scope {
	case Namespaced:
		return fmt.Sprintf("%s is outside the resource's namespace %q: %s releases place their objects in their own namespace only; change the spec so that the chart renders it in %q, or list %q under confinement.namespaces of %s",
			e.Object, e.Namespace, e.Kind, e.Namespace, e.Object.Namespace, entry)
	case ClusterScoped:
		return fmt.Sprintf("%s is cluster-scoped, and %s releases may not create cluster-scoped objects of kind %s: change the spec so that the chart does not render it, or list %s under confinement.clusterScopedKinds of %s",
			e.Object, e.Kind, kind, kind, entry)
	default:
		return fmt.Sprintf("%s is of kind %s, which the API server does not serve, so where it lands cannot be checked: change the spec so that the chart does not render it, or install the kind's CRD first",
			Placement{GVK: e.Object.GVK, Name: e.Object.Name}, kind)
	}
}

// GroupKindName names a kind as a confinement allowance lists it: Kind for
// the core group, group/Kind otherwise.
func GroupKindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Group + "/" + gk.Kind
}

// kindName is how a Kind is spelled: an upper-case letter, then letters and
// digits.
var kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// ParseGroupKind reads a kind as a confinement allowance lists it:
// "Namespace" (the core group) or "rbac.authorization.k8s.io/ClusterRole".
func ParseGroupKind(s string) (schema.GroupKind, error) {
	group, kind, ok := strings.Cut(s, "/")
	if !ok {
		group, kind = "", s
	}
	var errs []error
	if !kindName.MatchString(kind) {
		errs = append(errs, fmt.Errorf("%q is not a kind: an upper-case letter, then letters and digits", kind))
	}
	if ok {
		for _, msg := range validation.IsDNS1123Subdomain(group) {
			errs = append(errs, fmt.Errorf("%q is not an API group: %s", group, msg))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return schema.GroupKind{}, fmt.Errorf("%q is not Kind (core group) or group/Kind: %w", s, err)
	}
	return schema.GroupKind{Group: group, Kind: kind}, nil
}

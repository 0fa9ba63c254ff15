package release

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestConfinementCheck(t *testing.T) {
	configMap := func(ns string) Placement {
		return Placement{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Name: "cm", Namespace: ns, Scope: Namespaced}
	}
	clusterRole := Placement{GVK: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, Name: "x", Scope: ClusterScoped}
	namespace := Placement{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "team-a", Scope: ClusterScoped}
	unknown := Placement{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"}, Name: "g", Namespace: "acc"}
	rbac := schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}

	cases := []struct {
		name string
		// namespace is the custom resource's; empty for a cluster-scoped kind.
		namespace string
		// allow is the kind's allowance.
		allow Confinement
		// objs are the rendered objects, in render order.
		objs []Placement
		// refused is the object refused; nil: all may be placed.
		refused *Placement
		// msg are parts of the refusal's message.
		msg []string
	}{
		{name: "everything in the resource's namespace", namespace: "acc",
			objs: []Placement{configMap("acc"), configMap("")}},
		{name: "a namespaced object in another namespace", namespace: "acc",
			objs:    []Placement{configMap("acc"), configMap("acc-other")},
			refused: ptrTo(configMap("acc-other")),
			msg: []string{`ConfigMap "cm" in namespace "acc-other" is outside the resource's namespace "acc"`,
				`WebApp releases place their objects in their own namespace only`, `list "acc-other" under confinement.namespaces of the WebApp entry of watches.yaml`}},
		{name: "another namespace the allowance lists", namespace: "acc", allow: Confinement{Namespaces: []string{"acc-other"}},
			objs: []Placement{configMap("acc-other")}},
		{name: "a listed namespace allows that one only", namespace: "acc", allow: Confinement{Namespaces: []string{"acc-other"}},
			objs: []Placement{configMap("acc-third")}, refused: ptrTo(configMap("acc-third"))},
		{name: "a cluster-scoped object of a namespaced kind", namespace: "acc",
			objs: []Placement{configMap(""), clusterRole}, refused: &clusterRole,
			msg: []string{`ClusterRole "x" is cluster-scoped, and WebApp releases may not create cluster-scoped objects of kind rbac.authorization.k8s.io/ClusterRole`,
				`list rbac.authorization.k8s.io/ClusterRole under confinement.clusterScopedKinds of the WebApp entry of watches.yaml`}},
		{name: "a cluster-scoped kind the allowance lists", namespace: "acc", allow: Confinement{ClusterScopedKinds: []schema.GroupKind{rbac}},
			objs: []Placement{clusterRole}},
		{name: "the allowance lists another cluster-scoped kind", namespace: "acc", allow: Confinement{ClusterScopedKinds: []schema.GroupKind{{Kind: "Namespace"}}},
			objs: []Placement{clusterRole}, refused: &clusterRole},
		// A kind named without its group is the core group's, never
		// another group's kind of that name.
		{name: "a kind listed without its group", namespace: "acc", allow: Confinement{ClusterScopedKinds: []schema.GroupKind{{Kind: "ClusterRole"}}},
			objs: []Placement{clusterRole}, refused: &clusterRole},
		{name: "a cluster-scoped kind: namespaced objects anywhere", namespace: "",
			allow: Confinement{ClusterScopedKinds: []schema.GroupKind{{Kind: "Namespace"}}},
			objs:  []Placement{namespace, configMap("team-a"), configMap("helm-releases"), configMap("")}},
		{name: "a cluster-scoped kind: cluster-scoped objects as allowed only", namespace: "",
			allow: Confinement{ClusterScopedKinds: []schema.GroupKind{{Kind: "Namespace"}}},
			objs:  []Placement{namespace, clusterRole}, refused: &clusterRole,
			msg: []string{`ClusterRole "x" is cluster-scoped, and WebApp releases may not create`}},
		{name: "a cluster-scoped kind without an allowance", namespace: "",
			objs: []Placement{namespace}, refused: &namespace,
			msg: []string{`Namespace "team-a" is cluster-scoped`, `list Namespace under confinement.clusterScopedKinds`}},
		{name: "a kind the API server does not serve", namespace: "acc",
			objs: []Placement{unknown}, refused: &unknown,
			msg: []string{`Gizmo "g" is of kind example.com/Gizmo, which the API server does not serve`}},
		{name: "nothing rendered", namespace: "acc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tc.allow.Check("WebApp", tc.namespace, tc.objs)
			if tc.refused == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var refused *ConfinementError
			g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
			g.Expect(refused.Object).To(Equal(*tc.refused))
			g.Expect(refused.Kind).To(Equal("WebApp"))
			g.Expect(refused.Namespace).To(Equal(tc.namespace))
			for _, m := range tc.msg {
				g.Expect(err.Error()).To(ContainSubstring(m))
			}
		})
	}
}

func TestParseGroupKind(t *testing.T) {
	cases := []struct {
		// in is the allowance's entry.
		in string
		// want is the kind it names; ignored when err is set.
		want schema.GroupKind
		// err is part of the error; empty: none.
		err string
	}{
		{in: "Namespace", want: schema.GroupKind{Kind: "Namespace"}},
		{in: "rbac.authorization.k8s.io/ClusterRole", want: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}},
		{in: "", err: `"" is not a kind`},
		{in: "namespace", err: `"namespace" is not a kind`},
		{in: "rbac.authorization.k8s.io/", err: `"" is not a kind`},
		{in: "/ClusterRole", err: `"" is not an API group`},
		{in: "RBAC/ClusterRole", err: `"RBAC" is not an API group`},
		{in: "a/b/C", err: `"b/C" is not a kind`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			gk, err := ParseGroupKind(tc.in)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				g.Expect(err).To(MatchError(ContainSubstring("is not Kind (core group) or group/Kind")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(gk).To(Equal(tc.want))
			g.Expect(GroupKindName(gk)).To(Equal(tc.in), "named as written")
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

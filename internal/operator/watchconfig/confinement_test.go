package watchconfig

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/acme/platform-operator/internal/operator/release"
)

func TestLoadConfinement(t *testing.T) {
	g := NewWithT(t)
	p := filepath.Join(t.TempDir(), "watches.yaml")
	g.Expect(os.WriteFile(p, []byte(`
- {group: a, version: v1, kind: A, chart: c}
- group: a
  version: v1
  kind: B
  chart: c
  confinement:
    clusterScopedKinds: [Namespace, rbac.authorization.k8s.io/ClusterRole]
    namespaces: [shared]
- {group: a, version: v1, kind: C, chart: c, confinement: {}}
`), 0o600)).To(Succeed())
	cs, err := LoadConfinement(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs).To(Equal([]release.Confinement{
		{},
		{
			ClusterScopedKinds: []schema.GroupKind{{Kind: "Namespace"}, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}},
			Namespaces:         []string{"shared"},
		},
		{},
	}))

	resolved := []ResolvedWatch{{}, {}, {}}
	SetConfinement(resolved, cs)
	g.Expect(resolved[1].Confinement).To(Equal(cs[1]))
}

func TestLoadConfinementRefusesMalformed(t *testing.T) {
	cases := []struct {
		// entry is the confinement field of an entry of kind A.
		entry string
		// err are parts of the error at start.
		err []string
	}{
		{entry: `{clusterScopedKinds: [clusterrole]}`,
			err: []string{`entry 0 (A): confinement: clusterScopedKinds[0]: "clusterrole" is not Kind (core group) or group/Kind`}},
		{entry: `{clusterScopedKinds: [RBAC/ClusterRole]}`,
			err: []string{`clusterScopedKinds[0]`, `"RBAC" is not an API group`}},
		{entry: `{namespaces: [ok, Not_A_Namespace]}`,
			err: []string{`entry 0 (A): confinement: namespaces[1]: "Not_A_Namespace" is not a namespace name`}},
		// A misspelt field would allow nothing without a word.
		{entry: `{clusterScopedKind: [Namespace]}`,
			err: []string{`entry 0 (A): confinement: not {clusterScopedKinds: [...], namespaces: [...]}`, `unknown field "clusterScopedKind"`}},
		{entry: `{namespaces: shared}`,
			err: []string{`entry 0 (A): confinement: not {clusterScopedKinds: [...], namespaces: [...]}`}},
		{entry: `[Namespace]`,
			err: []string{`entry 0 (A): confinement: not {clusterScopedKinds: [...], namespaces: [...]}`}},
	}
	for _, tc := range cases {
		t.Run(tc.entry, func(t *testing.T) {
			g := NewWithT(t)
			p := filepath.Join(t.TempDir(), "watches.yaml")
			g.Expect(os.WriteFile(p, []byte("- {group: a, version: v1, kind: A, chart: c, confinement: "+tc.entry+"}\n"), 0o600)).To(Succeed())
			_, err := LoadConfinement(p)
			g.Expect(err).To(HaveOccurred())
			for _, want := range tc.err {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
		})
	}
}

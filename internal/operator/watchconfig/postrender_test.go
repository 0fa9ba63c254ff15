package watchconfig

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestLoadPostRender(t *testing.T) {
	write := func(t *testing.T, s string) string {
		p := filepath.Join(t.TempDir(), "watches.yaml")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("entries with and without", func(t *testing.T) {
		g := NewWithT(t)
		rs, err := LoadPostRender(write(t, `
- {group: a.com, version: v1, kind: A, chart: x}
- group: a.com
  version: v1
  kind: B
  chart: x
  postRender:
    patches:
    - target: {kind: Deployment}
      patch: |
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: any}
        spec: {template: {metadata: {labels: {team: platform}}}}
    images:
    - {name: nginx, newName: registry.example.com/nginx, newTag: "1.27"}
- {group: a.com, version: v1, kind: C, chart: x, postRender: null}
`))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rs).To(HaveLen(3))
		g.Expect(rs[0]).To(BeNil())
		g.Expect(rs[1]).NotTo(BeNil())
		g.Expect(rs[1].Digest()).NotTo(BeEmpty())
		g.Expect(rs[2]).To(BeNil())

		resolved := make([]ResolvedWatch, 3)
		SetPostRender(resolved, rs)
		g.Expect(resolved[1].PostRender).To(BeIdenticalTo(rs[1]))
	})
	for _, tc := range []struct {
		name, entry, want string
	}{
		{"unknown field", `postRender: {patch: []}`, `entry 0 (A): postRender: not {patches:`},
		{"patch without target", `postRender: {patches: [{patch: "apiVersion: v1\nkind: ConfigMap\n"}]}`, `entry 0 (A): postRender: patches[0]: target is required`},
		{"misspelt target field", `postRender: {patches: [{target: {kinds: Deployment}, patch: "- {op: remove, path: /a}"}]}`, `unknown field "kinds"`},
		{"bad patch", `postRender: {patches: [{target: {kind: Deployment}, patch: "- {op: nope, path: /a}"}]}`, `entry 0 (A): postRender: patches[0]: patch[0]: op nope`},
		{"bad image", `postRender: {images: [{name: nginx}]}`, `entry 0 (A): postRender: images[0]: image nginx: set newName, newTag or digest`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := LoadPostRender(write(t, "- group: a.com\n  version: v1\n  kind: A\n  chart: x\n  "+tc.entry+"\n"))
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

package watchconfig

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestLoadCRDPolicies(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		want  []CRDPolicy // when the file loads
		error string      // else a part of the error
	}{
		{
			name: "absent is create; every policy reads",
			yaml: `
- {group: a.example.com, version: v1, kind: A, chart: c}
- {group: a.example.com, version: v1, kind: B, chart: c, crds: skip}
- {group: a.example.com, version: v1, kind: C, chart: c, crds: create}
- {group: a.example.com, version: v1, kind: D, chart: c, crds: create-replace}
`,
			want: []CRDPolicy{CRDsCreate, CRDsSkip, CRDsCreate, CRDsCreateReplace},
		},
		{
			name:  "a misspelt policy names the entry",
			yaml:  `[{kind: A}, {kind: B, crds: replace}]`,
			error: `entry 1 (B): crds: "replace" is not one of skip, create, create-replace`,
		},
		{
			name:  "Flux's capitalised names are not ours",
			yaml:  `[{kind: A, crds: CreateReplace}]`,
			error: `entry 0 (A): crds: "CreateReplace" is not one of skip, create, create-replace`,
		},
		{
			name:  "an empty value is no policy",
			yaml:  `[{kind: A, crds: ""}]`,
			error: `entry 0 (A): crds: empty`,
		},
		{
			name:  "not a string",
			yaml:  `[{kind: A, crds: {policy: skip}}]`,
			error: `crds`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			path := filepath.Join(t.TempDir(), "watches.yaml")
			g.Expect(os.WriteFile(path, []byte(tc.yaml), 0o600)).To(Succeed())
			got, err := LoadCRDPolicies(path)
			if tc.error != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.error)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
			ignored, err := IgnoredFields(path)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ignored).To(BeEmpty(), "the runtime reads the field")
		})
	}
}

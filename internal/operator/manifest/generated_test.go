package manifest

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
)

func chartWithAnnotation(value string) *chart.Chart {
	return &chart.Chart{Metadata: &chart.Metadata{Name: "demo", Annotations: map[string]string{GeneratedValuesAnnotation: value}}}
}

func TestParseGeneratedValues(t *testing.T) {
	cases := []struct {
		name       string
		annotation string // "" means no annotation at all
		want       []GeneratedValue
		wantErr    string
	}{
		// No annotation: nothing to generate.
		{name: "none"},
		// Path only: default length, no Secret.
		{name: "path only", annotation: "- path: auth.password", want: []GeneratedValue{{Path: "auth.password", Length: 32}}},
		// Everything set.
		{
			name:       "full",
			annotation: "- path: a.b\n  length: 20\n  secret: {name: '{{ .Release.Name }}-x', key: k}\n- path: c",
			want: []GeneratedValue{
				{Path: "a.b", Length: 20, Secret: &GeneratedValueSecret{Name: "{{ .Release.Name }}-x", Key: "k"}},
				{Path: "c", Length: 32},
			},
		},
		// Mistakes are errors, so a chart cannot silently lose its password.
		{name: "not a list", annotation: "path: a", wantErr: "annotation"},
		{name: "unknown field", annotation: "- path: a\n  size: 20", wantErr: "size"},
		{name: "empty path", annotation: "- length: 20", wantErr: "path must be set"},
		{name: "empty segment", annotation: "- path: a..b", wantErr: "empty segment"},
		{name: "too short", annotation: "- path: a\n  length: 8", wantErr: "length must be"},
		{name: "duplicate", annotation: "- path: a\n- path: a", wantErr: "declared twice"},
		{name: "secret without key", annotation: "- path: a\n  secret: {name: x}", wantErr: "name and a key"},
		{name: "bad secret template", annotation: "- path: a\n  secret: {name: '{{ .Release.Name', key: k}", wantErr: "secret name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ch := &chart.Chart{Metadata: &chart.Metadata{Name: "demo"}}
			if tc.annotation != "" {
				ch = chartWithAnnotation(tc.annotation)
			}
			got, err := ParseGeneratedValues(ch)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if len(tc.want) == 0 {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestGeneratedValueSecretName(t *testing.T) {
	g := NewWithT(t)
	gv := GeneratedValue{Path: "p", Secret: &GeneratedValueSecret{Name: `{{ .Release.Name | trunc 5 | trimSuffix "-" }}-db-{{ .Release.Namespace }}`, Key: "k"}}
	name, err := gv.SecretName("shop-frontend", "ns")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(name).To(Equal("shop-db-ns"))
	name, err = GeneratedValue{Path: "p"}.SecretName("x", "ns")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(name).To(BeEmpty())
}

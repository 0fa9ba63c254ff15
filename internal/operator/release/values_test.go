package release

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

func TestSetNestedString(t *testing.T) {
	g := NewWithT(t)
	m := map[string]interface{}{"a": map[string]interface{}{"keep": 1}, "n": nil, "s": "str"}
	g.Expect(setNestedString(m, []string{"a", "b", "c"}, "v")).To(Succeed())
	g.Expect(setNestedString(m, []string{"n", "x"}, "w")).To(Succeed())
	g.Expect(m).To(Equal(map[string]interface{}{
		"a": map[string]interface{}{"keep": 1, "b": map[string]interface{}{"c": "v"}},
		"n": map[string]interface{}{"x": "w"},
		"s": "str",
	}))
	g.Expect(setNestedString(m, []string{"s", "x"}, "v")).To(MatchError(ContainSubstring("s is not a map")))
	v, ok := NestedString(m, []string{"a", "b", "c"})
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal("v"))
	_, ok = NestedString(m, []string{"a", "keep"})
	g.Expect(ok).To(BeFalse(), "not a string")
	_, ok = NestedString(nil, []string{"a"})
	g.Expect(ok).To(BeFalse())
}

// TestValuesCompute: the values of a release are the spec with the
// override values set, the generated values the spec leaves empty filled,
// coalesced with the chart's defaults.
func TestValuesCompute(t *testing.T) {
	g := NewWithT(t)
	chrt := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "db", Version: "1.0.0", Annotations: map[string]string{
			manifest.GeneratedValuesAnnotation: "- path: auth.password\n- path: auth.token\n  length: 16",
		}},
		Values: map[string]interface{}{
			"replicas": 1,
			"image":    map[string]interface{}{"repository": "db", "tag": "1.0"},
			"auth":     map[string]interface{}{"user": "admin"},
			"metrics":  map[string]interface{}{"enabled": true},
		},
	}
	generated, err := manifest.CompileGeneratedValues(chrt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(generated).To(HaveLen(2))
	v := Values{Chart: chrt, Overrides: map[string]string{"replicas": "5"}, Generated: generated}

	spec := map[string]interface{}{
		"replicas": int64(3), // as decoded from JSON
		"image":    map[string]interface{}{"tag": "2.0"},
		"auth":     map[string]interface{}{"token": "mine"},
		"metrics":  nil, // drops the chart's default
	}
	before := runtime.DeepCopyJSONValue(spec)
	var filled []string
	fill := func(gv manifest.CompiledValue) (string, error) {
		filled = append(filled, gv.Path)
		return "generated", nil
	}

	vals, err := v.Compute(spec, fill, nil)
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("the override wins over the spec")
	g.Expect(vals).To(HaveKeyWithValue("replicas", BeNumerically("==", 5)))
	t.Log("only the generated value the spec leaves empty is filled")
	g.Expect(filled).To(Equal([]string{"auth.password"}))
	g.Expect(vals["auth"]).To(Equal(map[string]interface{}{"user": "admin", "password": "generated", "token": "mine"}))
	t.Log("the chart's defaults fill what the spec does not set")
	g.Expect(vals["image"]).To(Equal(map[string]interface{}{"repository": "db", "tag": "2.0"}))
	t.Log("a null in the spec removes the default")
	g.Expect(vals).NotTo(HaveKey("metrics"))
	g.Expect(spec).To(Equal(before), "the spec is not changed")
}

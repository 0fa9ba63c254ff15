package manifest

import (
	"math"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// sameAsSigsYAML checks that MarshalObject writes obj as sigs.k8s.io/yaml's
// Marshal does, and fails where it fails.
func sameAsSigsYAML(g Gomega, obj map[string]any) {
	want, wantErr := yaml.Marshal(obj)
	got, err := MarshalObject(obj)
	if wantErr != nil {
		g.Expect(err).To(HaveOccurred(), "sigs.k8s.io/yaml refused %v: %v", obj, wantErr)
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(string(want)), "for %#v", obj)
}

// TestMarshalObjectWritesWhatSigsYAMLWrites: every object of the rendered
// manifests of testdata, decoded as the library's post-renderer decodes
// it, and values chosen where a direct encoding could differ from the
// JSON round trip (integral floats, nil maps and lists, strings YAML
// would read as other types, characters the YAML parser refuses), are
// written byte for byte as sigs.k8s.io/yaml writes them.
func TestMarshalObjectWritesWhatSigsYAMLWrites(t *testing.T) {
	g := NewWithT(t)
	for _, file := range []string{"testdata/rendered-manifest.yaml", "testdata/operator-sdk-manifest.yaml"} {
		b, err := os.ReadFile(file)
		g.Expect(err).NotTo(HaveOccurred())
		docs := 0
		for _, doc := range releaseutil.SplitManifests(string(b)) {
			j, err := yaml.YAMLToJSON([]byte(doc))
			g.Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{}
			if string(j) == "null" {
				continue
			}
			g.Expect(u.UnmarshalJSON(j)).To(Succeed())
			sameAsSigsYAML(g, u.Object)
			docs++
		}
		g.Expect(docs).To(BeNumerically(">", 2), file)
	}

	long := strings.Repeat("word ", 40)
	values := []any{
		0.5, 1e6, 123456789.0, 1234567.8, 1e20, 1e21, 1.5e300, 1e-7, -3.0, math.Copysign(0, -1),
		float64(1 << 53), 9223372036854775807.0, 9223372036854775808.0, 18446744073709551615.0, 18446744073709551616.0, -9223372036854775808.0, -9223372036854777856.0,
		int64(-1), int64(math.MaxInt64), int64(math.MinInt64), 7,
		"", " lead", "trail ", "yes", "no", "on", "off", "y", "n", "true", "null", "~", "123", "0x1F", "1e3", "0o17", "1_000", ".5", "-", "- item", "key: value", "#comment", "a #b",
		"multi\nline\n", "tab\there", "cr\rhere", "ünïcödé 日本", "\u2028sep", "nul\x00", "bell\a", "del\x7f", "c1\u0085nel", "c1\u0090", "bom\ufeff", "nonchar\ufffe", "'quoted'", `"dq"`, "%percent", "@at", "`tick", "!bang", "&anchor", "*alias", "{flow}", "[list]", long, long + "\n" + long,
		true, false, nil,
		map[string]any{}, []any{}, map[string]any(nil), []any(nil),
		map[string]any{"nested": []any{map[string]any{"a": 1.0, "b": []any{nil, "x", 2.5}}}},
	}
	for _, v := range values {
		sameAsSigsYAML(g, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"v": v}, "list": []any{v, v}})
	}
	for _, k := range []string{"", "yes", "1", "a b", "x: y", "del\x7f", "日本"} {
		sameAsSigsYAML(g, map[string]any{k: "value"})
	}
	// A type JSON decoding never yields goes through sigs.k8s.io/yaml.
	sameAsSigsYAML(g, map[string]any{"int32": int32(5), "float32": float32(0.1), "strings": []string{"a"}})
}

// FuzzMarshalObject: any JSON object, decoded as the cache and the
// post-renderers decode objects, is written as sigs.k8s.io/yaml writes it
// (go test -fuzz FuzzMarshalObject ./internal/operator/manifest/).
func FuzzMarshalObject(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"b":1.5,"c":"yes","d":null,"e":[],"f":{},"g":[{"h":1e21}]}`,
		`{"s":"multi\nline","t":"\u0085","u":"\u007f","v":12345678.0,"w":-0.0}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x","labels":{"a10":"1","a9":"2"}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
			t.Skip()
		}
		sameAsSigsYAML(NewWithT(t), obj)
	})
}

// BenchmarkMarshalObject: the objects of the rendered Nginx manifest of
// testdata, written by sigs.k8s.io/yaml's Marshal and by MarshalObject.
func BenchmarkMarshalObject(b *testing.B) {
	data, err := os.ReadFile("testdata/rendered-manifest.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var objs []map[string]any
	for _, doc := range releaseutil.SplitManifests(string(data)) {
		var obj map[string]any
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			b.Fatal(err)
		}
		if err := utiljson.Unmarshal(j, &obj); err != nil {
			b.Fatal(err)
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
	for name, marshal := range map[string]func(map[string]any) ([]byte, error){
		"sigs": func(o map[string]any) ([]byte, error) { return yaml.Marshal(o) },
		"ours": MarshalObject,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, o := range objs {
					if _, err := marshal(o); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

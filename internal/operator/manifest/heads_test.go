package manifest

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// fullHeads is what parsing every document in full says of each object,
// the way the post-release hooks read manifests before Heads.
func fullHeads(manifest string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || u.Object == nil {
			continue
		}
		gvk := u.GroupVersionKind()
		out[gvk.String()+" "+u.GetNamespace()+"/"+u.GetName()] = u.GetAnnotations()
	}
	return out
}

// TestHeadsAgreeWithFullParse: on the rendered manifests of testdata and
// on documents with comments, kept objects, cluster-scoped kinds and
// empty documents, Heads names the same objects with the same
// annotations as a full parse.
func TestHeadsAgreeWithFullParse(t *testing.T) {
	g := NewWithT(t)
	manifests := []string{`# Source: x/templates/a.yaml
apiVersion: v1
kind: Secret
metadata:
  name: kept
  annotations:
    helm.sh/resource-policy: keep
    "quoted/key": "a: b"
stringData:
  password: hunter2
---
---
# Source: x/templates/b.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: []
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: other
spec:
  replicas: 0
`}
	for _, f := range []string{"testdata/rendered-manifest.yaml", "testdata/operator-sdk-manifest.yaml"} {
		b, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		manifests = append(manifests, string(b))
	}
	for _, m := range manifests {
		got := map[string]map[string]string{}
		for _, h := range Heads(m) {
			annotations := h.Metadata.Annotations
			if len(annotations) == 0 {
				annotations = nil
			}
			got[h.GroupVersionKind().String()+" "+h.Metadata.Namespace+"/"+h.Metadata.Name] = annotations
		}
		g.Expect(got).To(Equal(fullHeads(m)))
		g.Expect(got).NotTo(BeEmpty())
	}
}

// BenchmarkHeads and BenchmarkFullParse read the heads of the rendered
// manifest in testdata, one way and the other.
func BenchmarkHeads(b *testing.B) {
	m, _ := os.ReadFile("testdata/rendered-manifest.yaml")
	b.ReportAllocs()
	for b.Loop() {
		_ = Heads(string(m))
	}
}

func BenchmarkFullParse(b *testing.B) {
	m, _ := os.ReadFile("testdata/rendered-manifest.yaml")
	b.ReportAllocs()
	for b.Loop() {
		_ = fullHeads(string(m))
	}
}

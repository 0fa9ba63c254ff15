package cachefilter

import (
	"fmt"
	"maps"
	"runtime"
	"testing"
	"unsafe"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// decoded returns the object JSON decodes from doc: every string its own
// copy, as a watch delivers it.
func decoded(g Gomega, doc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	g.Expect(u.UnmarshalJSON([]byte(doc))).To(Succeed())
	return u
}

func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestTransformSharesRepeatedStrings: two objects decoded separately hold
// one copy of the strings they repeat, and their own copy of what is
// unique to each; the objects are equal to what they were.
func TestTransformSharesRepeatedStrings(t *testing.T) {
	g := NewWithT(t)
	transform := CacheOptions(nil, []schema.GroupVersionKind{nginxGVK}, nil, nil).DefaultTransform
	doc := func(i int) string {
		return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web-%d","namespace":"team-a","uid":"u-%d","resourceVersion":"%d","generation":2,"creationTimestamp":"2026-12-01T00:00:00Z",
"labels":{"app.kubernetes.io/managed-by":"Helm","app.kubernetes.io/instance":"web-%d"},"annotations":{"meta.helm.sh/release-namespace":"team-a"},
"ownerReferences":[{"apiVersion":"platform.acme.com/v1alpha1","kind":"Nginx","name":"web-%d","uid":"o-%d","controller":true}]},
"spec":{"replicas":1},"status":{"phase":"Running"}}`, i, i, i, i, i, i)
	}
	var kept [2]*unstructured.Unstructured
	for i := range kept {
		out, err := transform(decoded(g, doc(i)))
		g.Expect(err).NotTo(HaveOccurred())
		kept[i] = out.(*unstructured.Unstructured)
	}
	a, b := kept[0], kept[1]
	g.Expect(sameBytes(a.GetLabels()["app.kubernetes.io/managed-by"], b.GetLabels()["app.kubernetes.io/managed-by"])).To(BeTrue())
	g.Expect(sameBytes(a.GetNamespace(), b.GetNamespace())).To(BeTrue())
	g.Expect(sameBytes(a.GetOwnerReferences()[0].Kind, b.GetOwnerReferences()[0].Kind)).To(BeTrue())
	for k := range a.Object["metadata"].(map[string]any) {
		for l := range b.Object["metadata"].(map[string]any) {
			if k == l {
				g.Expect(sameBytes(k, l)).To(BeTrue(), "key %s", k)
			}
		}
	}
	g.Expect(a.GetName()).To(Equal("web-0"))
	g.Expect(b.GetUID()).To(BeEquivalentTo("u-1"))
	g.Expect(b.GetResourceVersion()).To(Equal("1"))
	g.Expect(b.GetOwnerReferences()[0].UID).To(BeEquivalentTo("o-1"))
	// A fingerprint keeps no creation time and no generation.
	g.Expect(b.Object["metadata"]).NotTo(HaveKey("creationTimestamp"))
	g.Expect(b.Object["metadata"]).NotTo(HaveKey("generation"))

	// Compacting again changes nothing.
	again, err := transform(b.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.(*unstructured.Unstructured).Object).To(Equal(b.Object))
}

// TestTransformSharesTypedMetadata: the labels, annotations, namespace and
// owner of typed objects (release records, Pods) are shared too.
func TestTransformSharesTypedMetadata(t *testing.T) {
	g := NewWithT(t)
	transform := CacheOptions(nil, nil, nil, nil).DefaultTransform
	secret := func(v int) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("sh.helm.release.v1.web.v%d", v), Namespace: string([]byte("team-a")),
				Labels:          map[string]string{string([]byte("owner")): string([]byte("helm")), "version": fmt.Sprint(v)},
				OwnerReferences: []metav1.OwnerReference{{Kind: string([]byte("Nginx")), Name: "web", UID: "o"}},
			},
			Type: HelmReleaseSecretType,
			Data: map[string][]byte{"release": []byte("H4sI")},
		}
	}
	var kept [2]*corev1.Secret
	for i := range kept {
		out, err := transform(secret(i + 1))
		g.Expect(err).NotTo(HaveOccurred())
		kept[i] = out.(*corev1.Secret)
	}
	g.Expect(sameBytes(kept[0].Labels["owner"], kept[1].Labels["owner"])).To(BeTrue())
	g.Expect(sameBytes(kept[0].Namespace, kept[1].Namespace)).To(BeTrue())
	g.Expect(sameBytes(kept[0].OwnerReferences[0].Kind, kept[1].OwnerReferences[0].Kind)).To(BeTrue())
	g.Expect(kept[1].Labels).To(Equal(map[string]string{"owner": "helm", "version": "2"}))
	g.Expect(kept[1].Data).To(BeNil())
}

// TestInternerIsBounded: the table never holds more than its bound, and
// keeps sharing after it starts again.
func TestInternerIsBounded(t *testing.T) {
	g := NewWithT(t)
	var in interner
	for i := range internMaxEntries + 10 {
		in.str(fmt.Sprint("release-", i))
	}
	g.Expect(len(in.m)).To(BeNumerically("<=", internMaxEntries))
	first := in.str(string([]byte("Helm")))
	g.Expect(sameBytes(in.str(string([]byte("Helm"))), first)).To(BeTrue())
	long := string(make([]byte, internMaxLen+1))
	g.Expect(sameBytes(in.str(long), long)).To(BeTrue())
	g.Expect(in.m).NotTo(HaveKey(long))
}

// BenchmarkCachedObjectSize reports the heap a cached copy of a rendered
// Deployment retains (retained-B/object), as a watch decodes it, with the
// transform as it is ("shared") and with the strings left as decoded and
// the whole metadata kept ("decoded", the transform before compact.go).
func BenchmarkCachedObjectSize(b *testing.B) {
	const n = 20000
	doc := func(i int) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bench-%05d-nginx","namespace":"bench","uid":"8f1c2a3b-1111-2222-3333-%012d","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-12-01T00:00:00Z",
"labels":{"app.kubernetes.io/instance":"bench-%05d","app.kubernetes.io/managed-by":"Helm","app.kubernetes.io/name":"nginx","app.kubernetes.io/version":"1.25.3","helm.sh/chart":"nginx-0.1.0"},
"annotations":{"meta.helm.sh/release-name":"bench-%05d","meta.helm.sh/release-namespace":"bench"},
"ownerReferences":[{"apiVersion":"platform.acme.com/v1alpha1","kind":"Nginx","name":"bench-%05d","uid":"9f1c2a3b-1111-2222-3333-%012d","controller":true,"blockOwnerDeletion":true}]},
"spec":{"replicas":0,"selector":{"matchLabels":{"app.kubernetes.io/name":"nginx","app.kubernetes.io/instance":"bench-%05d"}},"template":{"metadata":{"labels":{"app.kubernetes.io/name":"nginx","app.kubernetes.io/instance":"bench-%05d"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.25.3","ports":[{"containerPort":80,"name":"http","protocol":"TCP"}]}]}}},
"status":{"observedGeneration":1,"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability.","lastUpdateTime":"2026-12-01T00:00:00Z","lastTransitionTime":"2026-12-01T00:00:00Z"}]}}`, i, i, 100000+i, i, i, i, i, i, i)
	}
	decodedOnly := func(obj any) (any, error) {
		obj, err := trimObject(obj)
		if u, ok := obj.(*unstructured.Unstructured); ok && err == nil {
			md := maps.Clone(u.Object["metadata"].(map[string]any))
			fingerprint(u)
			u.Object["metadata"] = md // every field kept
		}
		return obj, err
	}
	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"decoded", decodedOnly},
		{"shared", CacheOptions(nil, nil, nil, nil).DefaultTransform},
	} {
		b.Run(tc.name, func(b *testing.B) {
			raw := make([][]byte, n)
			for i := range raw {
				raw[i] = doc(i)
			}
			for b.Loop() {
				kept := make([]any, n)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i := range raw {
					u := &unstructured.Unstructured{}
					if err := u.UnmarshalJSON(raw[i]); err != nil {
						b.Fatal(err)
					}
					kept[i], _ = tc.transform(u)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "retained-B/object")
				runtime.KeepAlive(kept)
			}
		})
	}
}

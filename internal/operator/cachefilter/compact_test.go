package cachefilter

import (
	"fmt"
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

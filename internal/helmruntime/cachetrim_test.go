package helmruntime

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestCacheOptionsTrimWhatIsNotRead(t *testing.T) {
	opts := cacheOptions(nil)
	managed := []metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate}}
	var secretTransform func(any) (any, error)
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*corev1.Secret); ok {
			secretTransform = by.Transform
		}
	}

	tests := []struct {
		name      string
		transform func(any) (any, error)
		in        client.Object
		check     func(g Gomega, out client.Object)
	}{
		{
			name:      "a Helm release Secret loses its payload and managedFields, keeps labels and owners",
			transform: secretTransform,
			in: &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.web.v1", Labels: map[string]string{"owner": "helm", "name": "web"},
					OwnerReferences: []metav1.OwnerReference{{Name: "web"}}, ManagedFields: managed},
				Type: helmReleaseSecretType,
				Data: map[string][]byte{"release": []byte("H4sI...")},
			},
			check: func(g Gomega, out client.Object) {
				s := out.(*corev1.Secret)
				g.Expect(s.Data).To(BeNil())
				g.Expect(s.ManagedFields).To(BeNil())
				g.Expect(s.Labels).To(HaveKeyWithValue("owner", "helm"))
				g.Expect(s.OwnerReferences).To(HaveLen(1))
			},
		},
		{
			// A chart's own Secrets, and kept Secrets with generated values,
			// are read from the cache.
			name:      "any other Secret keeps its data",
			transform: secretTransform,
			in: &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "web-password", ManagedFields: managed},
				Type:       corev1.SecretTypeOpaque,
				Data:       map[string][]byte{"password": []byte("s3cret")},
			},
			check: func(g Gomega, out client.Object) {
				s := out.(*corev1.Secret)
				g.Expect(s.Data).To(HaveKeyWithValue("password", []byte("s3cret")))
				g.Expect(s.ManagedFields).To(BeNil())
			},
		},
		{
			name:      "unstructured children lose managedFields only",
			transform: opts.DefaultTransform,
			in: func() client.Object {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "apps/v1", "kind": "Deployment",
					"metadata": map[string]any{"name": "web"},
					"spec":     map[string]any{"replicas": int64(2)},
				}}
				u.SetManagedFields(managed)
				return u
			}(),
			check: func(g Gomega, out client.Object) {
				u := out.(*unstructured.Unstructured)
				g.Expect(u.GetManagedFields()).To(BeNil())
				g.Expect(u.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("replicas", int64(2))))
			},
		},
		{
			name:      "a Deployment loses the deployment controller's annotations, keeps the chart's",
			transform: opts.DefaultTransform,
			in: func() client.Object {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "apps/v1", "kind": "Deployment",
					"metadata": map[string]any{"name": "web"},
				}}
				u.SetAnnotations(map[string]string{
					"deployment.kubernetes.io/revision":    "3",
					"meta.helm.sh/release-name":            "web",
					"example.com/deployment.kubernetes.io": "kept",
				})
				return u
			}(),
			check: func(g Gomega, out client.Object) {
				g.Expect(out.GetAnnotations()).To(Equal(map[string]string{
					"meta.helm.sh/release-name":            "web",
					"example.com/deployment.kubernetes.io": "kept",
				}))
			},
		},
		{
			name:      "a ReplicaSet with only bookkeeping annotations is left with none",
			transform: opts.DefaultTransform,
			in: func() client.Object {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "apps/v1", "kind": "ReplicaSet",
					"metadata": map[string]any{"name": "web-5d8f"},
				}}
				u.SetAnnotations(map[string]string{"deployment.kubernetes.io/desired-replicas": "2", "deployment.kubernetes.io/max-replicas": "3"})
				return u
			}(),
			check: func(g Gomega, out client.Object) {
				g.Expect(out.GetAnnotations()).To(BeEmpty())
			},
		},
		{
			name:      "typed objects are trimmed the same way",
			transform: opts.DefaultTransform,
			in: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: managed,
				Annotations: map[string]string{"deployment.kubernetes.io/revision": "1", "a": "b"}}},
			check: func(g Gomega, out client.Object) {
				g.Expect(out.GetManagedFields()).To(BeNil())
				g.Expect(out.GetAnnotations()).To(Equal(map[string]string{"a": "b"}))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.transform).NotTo(BeNil())
			out, err := tt.transform(tt.in)
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, out.(client.Object))
		})
	}
}

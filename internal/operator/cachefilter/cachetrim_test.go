package cachefilter

import (
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/readiness"
)

func TestCacheOptionsTrimWhatIsNotRead(t *testing.T) {
	opts := CacheOptions(nil, []schema.GroupVersionKind{nginxGVK}, labels.Everything(), nil)
	managed := []metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate}}
	secretTransform := opts.DefaultTransform

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
				Type: HelmReleaseSecretType,
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
			name:      "a rendered object keeps its metadata, a digest of the rest and its health",
			transform: opts.DefaultTransform,
			in: func() client.Object {
				u := deployment(2, "Running")
				u.SetManagedFields(managed)
				return u
			}(),
			check: func(g Gomega, out client.Object) {
				u := out.(*unstructured.Unstructured)
				g.Expect(u.GetManagedFields()).To(BeNil())
				g.Expect(u.GetName()).To(Equal("web"))
				g.Expect(u.GetOwnerReferences()).To(HaveLen(1))
				g.Expect(u.GetAnnotations()).To(HaveKeyWithValue("meta.helm.sh/release-name", "web"))
				g.Expect(u.GroupVersionKind()).To(Equal(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}))
				g.Expect(u.Object).To(HaveKeyWithValue(contentDigestField, HaveLen(64)))
				g.Expect(u.Object).NotTo(HaveKey("spec"))
				h, ok := readiness.Stashed(u)
				g.Expect(ok).To(BeTrue(), "the status is replaced by the health")
				g.Expect(h.Status).To(Equal(kstatus.InProgressStatus))
				g.Expect(u.Object["status"]).To(HaveLen(3), "nothing of the live status is kept: health, message, waiting for Pods")
				g.Expect(h.WaitingForPods).To(BeTrue())
			},
		},
		{
			name:      "the watched custom resources keep metadata and spec, lose status",
			transform: opts.DefaultTransform,
			in: func() client.Object {
				u := &unstructured.Unstructured{Object: map[string]any{
					"metadata": map[string]any{"name": "web"},
					"spec":     map[string]any{"replicaCount": int64(2)},
					"status":   map[string]any{"deployedRelease": map[string]any{"name": "web", "manifest": "---\nkind: Deployment\n"}},
				}}
				u.SetGroupVersionKind(nginxGVK)
				u.SetManagedFields(managed)
				u.SetLabels(map[string]string{"platform.acme.com/shard": "a"})
				u.SetFinalizers([]string{"uninstall-helm-release"})
				u.SetGeneration(3)
				return u
			}(),
			check: func(g Gomega, out client.Object) {
				u := out.(*unstructured.Unstructured)
				g.Expect(u.GetManagedFields()).To(BeNil())
				g.Expect(u.GetLabels()).To(HaveKeyWithValue("platform.acme.com/shard", "a"))
				g.Expect(u.GetFinalizers()).To(ConsistOf("uninstall-helm-release"))
				g.Expect(u.GetGeneration()).To(BeEquivalentTo(3))
				g.Expect(u.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("replicaCount", int64(2))))
				g.Expect(u.Object).NotTo(HaveKey("status"))
				g.Expect(u.Object).NotTo(HaveKey(contentDigestField))
			},
		},
		{
			name:      "the watched custom resources keep what a chart rollout counts of their status",
			transform: opts.DefaultTransform,
			in: func() client.Object {
				u := &unstructured.Unstructured{Object: map[string]any{
					"metadata": map[string]any{"name": "web"},
					"status": map[string]any{
						"deployedRelease": map[string]any{"name": "web", "manifest": "---\nkind: Deployment\n"},
						"chartVersion":    "0.2.0",
						"conditions": []any{
							map[string]any{"type": "Deployed", "status": "True", "message": "long"},
							map[string]any{"type": "Ready", "status": "True", "observedGeneration": int64(3), "message": "long"},
						},
						"history":     []any{map[string]any{"revision": int64(2), "chartVersion": "0.2.0", "appliedAt": "t", "ready": true, "digest": "abc"}},
						"remediation": map[string]any{"revision": int64(2), "action": "rollback", "message": "long"},
					},
				}}
				u.SetGroupVersionKind(nginxGVK)
				return u
			}(),
			check: func(g Gomega, out client.Object) {
				u := out.(*unstructured.Unstructured)
				g.Expect(u.Object["status"]).To(Equal(map[string]any{
					"chartVersion": "0.2.0",
					"conditions":   []any{map[string]any{"type": "Ready", "status": "True", "observedGeneration": int64(3)}},
					"history":      []any{map[string]any{"revision": int64(2), "chartVersion": "0.2.0", "appliedAt": "t"}},
					"remediation":  map[string]any{"revision": int64(2), "action": "rollback"},
				}))
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

var nginxGVK = schema.GroupVersionKind{Group: "web.acme.com", Version: "v1alpha1", Kind: "Nginx"}

// The library's dependent watches reconcile the owner of an updated
// object unless old and new are deeply equal without status and
// resourceVersion. Fingerprints must give that predicate the same answers
// as the whole objects.
func TestFingerprintKeepsWhatTheDependentPredicateCompares(t *testing.T) {
	transform := CacheOptions(nil, []schema.GroupVersionKind{nginxGVK}, labels.Everything(), nil).DefaultTransform
	changed := func(g Gomega, old, updated *unstructured.Unstructured) bool {
		var cached [2]*unstructured.Unstructured
		for i, u := range []*unstructured.Unstructured{old, updated} {
			out, err := transform(u)
			g.Expect(err).NotTo(HaveOccurred())
			c := out.(*unstructured.Unstructured).DeepCopy()
			delete(c.Object, "status")
			c.SetResourceVersion("")
			cached[i] = c
		}
		return !reflect.DeepEqual(cached[0].Object, cached[1].Object)
	}
	tests := []struct {
		name    string
		edit    func(u *unstructured.Unstructured)
		changed bool
	}{
		{name: "status and resourceVersion only", edit: func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"phase": "Failed"}
			u.SetResourceVersion("8")
		}},
		{name: "the same content decoded anew", edit: func(*unstructured.Unstructured) {}},
		{name: "replicas", edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
		}, changed: true},
		{name: "an image deep in the Pod template", edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "nginx", "image": "nginx:latest"}}, "spec", "template", "spec", "containers")
		}, changed: true},
		{name: "a field added next to spec", edit: func(u *unstructured.Unstructured) {
			u.Object["data"] = map[string]any{"k": "v"}
		}, changed: true},
		{name: "a label", edit: func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"team": "a"})
		}, changed: true},
		{name: "the owner reference removed", edit: func(u *unstructured.Unstructured) {
			u.SetOwnerReferences(nil)
		}, changed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			updated := deployment(2, "Running")
			tt.edit(updated)
			g.Expect(changed(g, deployment(2, "Running"), updated)).To(Equal(tt.changed))
		})
	}
}

// TestTransformIsIdempotent: an object the cache already transformed and
// is transformed again (client-go may pass one) keeps its fingerprint and
// the health of the real object, not the health of the fingerprint.
func TestTransformIsIdempotent(t *testing.T) {
	g := NewWithT(t)
	transform := CacheOptions(nil, []schema.GroupVersionKind{nginxGVK}, labels.Everything(), nil).DefaultTransform
	available := deployment(1, "")
	available.Object["status"] = map[string]any{"observedGeneration": int64(0), "replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True"},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
		}}
	once, err := transform(available)
	g.Expect(err).NotTo(HaveOccurred())
	first := once.(*unstructured.Unstructured).DeepCopy()
	h, ok := readiness.Stashed(first)
	g.Expect(ok).To(BeTrue())
	g.Expect(h.Status).To(Equal(kstatus.CurrentStatus), h.Message)

	twice, err := transform(once)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(twice.(*unstructured.Unstructured).Object).To(Equal(first.Object))
}

func TestCacheNamespaces(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CacheNamespaces(nil)).To(BeNil())        // all namespaces
	g.Expect(CacheNamespaces([]string{})).To(BeNil()) // all namespaces
	g.Expect(CacheNamespaces([]string{"a", "b"})).To(Equal(map[string]cache.Config{"a": {}, "b": {}}))
}

// deployment is a rendered Deployment as the API server returns it.
func deployment(replicas int64, phase string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "team-a", "resourceVersion": "7",
			"annotations":     map[string]any{"meta.helm.sh/release-name": "web"},
			"ownerReferences": []any{map[string]any{"apiVersion": nginxGVK.GroupVersion().String(), "kind": "Nginx", "name": "web", "uid": "u1", "controller": true}},
		},
		"spec": map[string]any{
			"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "nginx", "image": "nginx:1.27"}}}},
		},
		"status": map[string]any{"phase": phase},
	}}
	return u
}

// TestPodTrimKeepsWhatDescribesIt: a cached Pod says why it is not ready
// as the whole Pod does, and summarises the same.
func TestPodTrimKeepsWhatDescribesIt(t *testing.T) {
	g := NewWithT(t)
	transform := CacheOptions(nil, nil, nil, nil).DefaultTransform
	pods := []corev1.Pod{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app": "shop"}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "shop:1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}, ReadinessProbe: &corev1.Probe{PeriodSeconds: 3}}},
				Volumes: []corev1.Volume{
					{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
					{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Image: "shop:1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			}}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "b"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shop:2"}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available", LastTransitionTime: metav1.Now()},
				{Type: corev1.ContainersReady, Status: corev1.ConditionFalse},
			}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shop:3"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Image: "shop:3", RestartCount: 4,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: metav1.Now()}},
			}}},
		},
	}
	claims := map[string]corev1.PersistentVolumeClaimPhase{"data": corev1.ClaimPending}
	want := readiness.DescribePods(pods, claims)
	g.Expect(want).To(ContainSubstring("readiness probe failing"))
	var trimmed []corev1.Pod
	for i := range pods {
		p := pods[i].DeepCopy()
		out, err := transform(p)
		g.Expect(err).NotTo(HaveOccurred())
		again, err := transform(out)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(out), "idempotent")
		tp := out.(*corev1.Pod)
		g.Expect(tp.Spec.Volumes).To(HaveLen(min(1, len(pods[i].Spec.Volumes))), "only the claims are kept")
		g.Expect(tp.Spec.Containers[0].Env).To(BeNil())
		g.Expect(readiness.PodSummary(tp)).To(Equal(readiness.PodSummary(&pods[i])))
		trimmed = append(trimmed, *tp)
	}
	g.Expect(readiness.DescribePods(trimmed, claims)).To(Equal(want))

	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{}},
	}
	out, err := transform(pvc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*corev1.PersistentVolumeClaim).Spec).To(Equal(corev1.PersistentVolumeClaimSpec{}))
	g.Expect(out.(*corev1.PersistentVolumeClaim).Status).To(Equal(corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}))
}

package hostpath

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func claim(mutate func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "data", UID: "1234"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
			},
		},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func TestVolumeFor(t *testing.T) {
	pv := VolumeFor(claim(nil), "/state/volumes")

	if pv.Name != "pvc-1234" {
		t.Errorf("name = %q, want pvc-1234", pv.Name)
	}
	if got := pv.Spec.HostPath.Path; got != "/state/volumes/pvc-1234" {
		t.Errorf("hostPath = %q, want /state/volumes/pvc-1234", got)
	}
	if got := *pv.Spec.HostPath.Type; got != corev1.HostPathDirectoryOrCreate {
		t.Errorf("hostPath type = %q", got)
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Namespace != "apps" || ref.Name != "data" || ref.UID != "1234" {
		t.Errorf("claimRef = %+v, want apps/data uid 1234 (pre-bound)", ref)
	}
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("capacity = %s, want the claim's 2Gi", got.String())
	}
	if pv.Spec.StorageClassName != StorageClassName {
		t.Errorf("storageClassName = %q", pv.Spec.StorageClassName)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaim policy = %q", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	if pv.Annotations[provisionedByAnnotation] != ProvisionerName {
		t.Errorf("provisioned-by = %q", pv.Annotations[provisionedByAnnotation])
	}
}

func TestVolumeForDefaults(t *testing.T) {
	pv := VolumeFor(claim(func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Resources.Requests = nil
		c.Spec.AccessModes = nil
	}), "/v")
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("capacity = %s, want 1Gi for a claim without a request", got.String())
	}
	if len(pv.Spec.AccessModes) != 1 || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("access modes = %v, want [ReadWriteOnce]", pv.Spec.AccessModes)
	}
}

func TestWants(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		c    *corev1.PersistentVolumeClaim
		want bool
	}{
		{"pending claim of our class", claim(nil), true},
		{"other class", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("fast") }), false},
		{"no class (default admission not applied)", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = nil }), false},
		{"already bound", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" }), false},
		{"being deleted", claim(func(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = &now }), false},
		{"block volume", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }), false},
	} {
		if got := wants(tc.c); got != tc.want {
			t.Errorf("%s: wants = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReleasable(t *testing.T) {
	pv := VolumeFor(claim(nil), "/v")
	if releasable(pv) {
		t.Error("a volume without phase Released is releasable")
	}
	pv.Status.Phase = corev1.VolumeReleased
	if !releasable(pv) {
		t.Error("a released volume of ours is not releasable")
	}
	pv.Annotations[provisionedByAnnotation] = "someone-else"
	if releasable(pv) {
		t.Error("another provisioner's volume is releasable")
	}
}

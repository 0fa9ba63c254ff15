package readiness

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name string, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		},
	}
	mutate(&p)
	return p
}

func TestDescribePods(t *testing.T) {
	tests := []struct {
		name   string
		pods   []corev1.Pod
		claims map[string]corev1.PersistentVolumeClaimPhase
		// want is the whole description.
		want string
	}{{
		name: "an image that cannot be pulled, with the image",
		pods: []corev1.Pod{pod("shop-7d9-abc", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.acme.com/shop/app:v9",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
		})},
		want: "Pod shop-7d9-abc: ImagePullBackOff (registry.acme.com/shop/app:v9)",
	}, {
		name: "a crash loop, with the last exit",
		pods: []corev1.Pod{pod("shop-db-0", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "postgres",
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
		})},
		want: "Pod shop-db-0: CrashLoopBackOff (container postgres exited 1, Error)",
	}, {
		name: "a failing readiness probe",
		pods: []corev1.Pod{pod("web-1", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		})},
		want: "Pod web-1: container app running, readiness probe failing",
	}, {
		name: "an unbound claim and the Pod it keeps from being scheduled",
		pods: []corev1.Pod{pod("shop-db-0", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-shop-db-0"}}}}
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "pod has unbound immediate PersistentVolumeClaims"})
		})},
		claims: map[string]corev1.PersistentVolumeClaimPhase{"data-shop-db-0": corev1.ClaimPending},
		want:   "PersistentVolumeClaim data-shop-db-0: Pending; Pod shop-db-0: not scheduled: pod has unbound immediate PersistentVolumeClaims",
	}, {
		name: "ready and terminating Pods explain nothing",
		pods: []corev1.Pod{
			pod("ok", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionTrue }),
			pod("going", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }),
		},
		want: "",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(DescribePods(tc.pods, tc.claims)).To(Equal(tc.want))
		})
	}
}

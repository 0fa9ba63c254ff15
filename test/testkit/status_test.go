package testkit

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

func TestCondition(t *testing.T) {
	g := NewWithT(t)
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Deployed", "status": "True", "reason": "InstallSuccessful", "message": "installed"},
		map[string]any{"type": "Ready", "status": "False", "reason": "Progressing"},
	}}}}
	status, reason, msg := Condition(u, "Deployed")
	g.Expect([]string{status, reason, msg}).To(Equal([]string{"True", "InstallSuccessful", "installed"}))
	status, reason, msg = Condition(u, "Ready")
	g.Expect([]string{status, reason, msg}).To(Equal([]string{"False", "Progressing", ""}))
	status, reason, msg = Condition(u, "ReleaseFailed")
	g.Expect([]string{status, reason, msg}).To(Equal([]string{"", "", ""}))
	status, _, _ = Condition(&unstructured.Unstructured{Object: map[string]any{}}, "Ready")
	g.Expect(status).To(BeEmpty())
}

func TestDeploymentAvailableAndReady(t *testing.T) {
	g := NewWithT(t)
	d := &appsv1.Deployment{}
	d.Generation = 2
	d.Spec.Replicas = ptr.To(int32(2))
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1}
	g.Expect(DeploymentReady(d)).To(BeTrue())
	g.Expect(DeploymentAvailable(d)).To(BeFalse(), "one replica is not available yet")
	d.Status.AvailableReplicas = 2
	g.Expect(DeploymentAvailable(d)).To(BeTrue())
	d.Status.ObservedGeneration = 1
	g.Expect(DeploymentAvailable(d)).To(BeFalse(), "the controller has not seen generation 2")
	g.Expect(DeploymentReady(d)).To(BeFalse())

	one := &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
	g.Expect(DeploymentAvailable(one)).To(BeTrue(), "no spec.replicas means 1")
}

func TestLastLine(t *testing.T) {
	g := NewWithT(t)
	g.Expect(LastLine("first\n  second  \n\n")).To(Equal("second"))
	g.Expect(LastLine("only")).To(Equal("only"))
	g.Expect(LastLine("")).To(Equal(""))
}

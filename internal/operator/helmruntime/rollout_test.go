package helmruntime

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	platformv1alpha1 "github.com/acme/platform-operator/extensions/api/platform/v1alpha1"
)

// TestRolloutConditions: the phase reads as Complete, Progressing and
// Stalled, with the phase as reason and the message; a condition's
// transition time moves only when its status does.
func TestRolloutConditions(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cr := &platformv1alpha1.ChartRollout{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	setRolloutConditions(cr, t0)
	g.Expect(cr.Status.Conditions).To(BeEmpty(), "no phase yet")

	summary := func() map[string]string {
		out := map[string]string{}
		for _, c := range cr.Status.Conditions {
			out[c.Type] = string(c.Status) + " " + c.Reason + ": " + c.Message
		}
		return out
	}
	cr.Status.Phase, cr.Status.Message = platformv1alpha1.PhaseProgressing, "wave 1 of 4"
	setRolloutConditions(cr, t0)
	g.Expect(summary()).To(Equal(map[string]string{
		"Complete": "False Progressing: wave 1 of 4", "Progressing": "True Progressing: wave 1 of 4", "Stalled": "False Progressing: wave 1 of 4",
	}))

	cr.Generation = 2
	cr.Status.Phase, cr.Status.Message = platformv1alpha1.PhaseHalted, "wave 1: 1 of 1 releases failed"
	t1 := t0.Add(time.Minute)
	setRolloutConditions(cr, t1)
	stalled := meta.FindStatusCondition(cr.Status.Conditions, platformv1alpha1.ConditionStalled)
	g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(stalled.Reason).To(Equal("Halted"))
	g.Expect(stalled.LastTransitionTime.Time).To(Equal(t1))
	g.Expect(stalled.ObservedGeneration).To(Equal(int64(2)))
	complete := meta.FindStatusCondition(cr.Status.Conditions, platformv1alpha1.ConditionComplete)
	g.Expect(complete.LastTransitionTime.Time).To(Equal(t0), "still False")

	cr.Status.Phase, cr.Status.Message = platformv1alpha1.PhaseComplete, "every release of the kind runs chart version 0.3.0"
	setRolloutConditions(cr, t1.Add(time.Minute))
	g.Expect(meta.IsStatusConditionTrue(cr.Status.Conditions, platformv1alpha1.ConditionComplete)).To(BeTrue())
	g.Expect(meta.IsStatusConditionFalse(cr.Status.Conditions, platformv1alpha1.ConditionStalled)).To(BeTrue())
	g.Expect(meta.IsStatusConditionFalse(cr.Status.Conditions, platformv1alpha1.ConditionProgressing)).To(BeTrue())

	cr.Status.Phase = platformv1alpha1.PhaseSuperseded
	setRolloutConditions(cr, t1.Add(2*time.Minute))
	for _, c := range cr.Status.Conditions {
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Type)
		g.Expect(c.Reason).To(Equal("Superseded"), c.Type)
	}
}

// TestRolloutFor: a kind's rollout is <kind>-<version> unless a kind
// of the same name in another group holds that name; then, and for as
// long as its own rollout lives, it is that name with the group's digest.
func TestRolloutFor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	web := schema.GroupVersionKind{Group: "web.acme.com", Version: "v1alpha1", Kind: "Nginx"}
	edge := schema.GroupVersionKind{Group: "edge.acme.com", Version: "v1", Kind: "Nginx"}
	rolloutOf := func(name string, gvk schema.GroupVersionKind) *platformv1alpha1.ChartRollout {
		return &platformv1alpha1.ChartRollout{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       platformv1alpha1.ChartRolloutSpec{Group: gvk.Group, Kind: gvk.Kind, Version: "0.2.0"},
		}
	}
	nameFor := func(c client.Client, gvk schema.GroupVersionKind) string {
		name, cr, err := rolloutFor(ctx, c, gvk, "0.2.0", nil)
		g.Expect(err).NotTo(HaveOccurred())
		if cr != nil {
			g.Expect(cr.Name).To(Equal(name), "the rollout returned is the one named")
			g.Expect(cr.Spec.Kind).To(Equal(gvk.Kind))
			g.Expect(cr.Spec.Group).To(Equal(gvk.Group), "never another kind's rollout")
		}
		return name
	}

	c := fake.NewClientBuilder().WithScheme(NewScheme()).Build()
	g.Expect(nameFor(c, web)).To(Equal("nginx-0.2.0"), "no rollout yet")
	g.Expect(c.Create(ctx, rolloutOf("nginx-0.2.0", web))).To(Succeed())
	g.Expect(nameFor(c, web)).To(Equal("nginx-0.2.0"), "its own")

	alt := nameFor(c, edge)
	g.Expect(alt).To(MatchRegexp(`^nginx-0\.2\.0-group-[0-9a-f]{10}$`), "the name is the other group's")
	g.Expect(c.Create(ctx, rolloutOf(alt, edge))).To(Succeed())
	g.Expect(nameFor(c, edge)).To(Equal(alt))
	g.Expect(nameFor(c, web)).To(Equal("nginx-0.2.0"))

	g.Expect(c.Delete(ctx, rolloutOf("nginx-0.2.0", web))).To(Succeed())
	g.Expect(nameFor(c, edge)).To(Equal(alt), "its rollout stays where it is when the other goes")
}

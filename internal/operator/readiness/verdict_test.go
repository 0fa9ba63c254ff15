package readiness

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/acme/platform-operator/internal/operator/workloadrefs"
)

func TestEvaluate(t *testing.T) {
	dep := Ref{Group: "apps", Kind: "Deployment", Namespace: "a", Name: "shop"}
	sts := Ref{Group: "apps", Kind: "StatefulSet", Namespace: "a", Name: "shop-db"}
	svc := Ref{Kind: "Service", Namespace: "a", Name: "shop"}
	current := Health{Status: kstatus.CurrentStatus, Message: "ok"}
	tests := []struct {
		name string
		objs []Observed
		// want is the whole verdict.
		want Verdict
	}{{
		name: "every object current",
		objs: []Observed{{Ref: dep, Health: current}, {Ref: svc, Health: current}},
		want: Verdict{Ready: true, Reason: ReasonReady, Message: "all 2 objects of the release are ready"},
	}, {
		name: "a rollout in progress names the object and kstatus's reason",
		objs: []Observed{{Ref: dep, Health: Health{Status: kstatus.InProgressStatus, Message: "Available: 0/2"}}, {Ref: svc, Health: current}},
		want: Verdict{Reason: ReasonProgressing, Message: "Deployment shop: Available: 0/2"},
	}, {
		name: "the Pods' detail follows; a release waiting for Pods is worth judging again",
		objs: []Observed{{Ref: dep, Health: Health{Status: kstatus.InProgressStatus, Message: "Available: 0/2", WaitingForPods: true}, Detail: "Pod shop-1: ImagePullBackOff (x:v9)"}},
		want: Verdict{Reason: ReasonProgressing, Message: "Deployment shop: Available: 0/2; Pod shop-1: ImagePullBackOff (x:v9)", WaitingForPods: true, Details: []string{"Pod shop-1: ImagePullBackOff (x:v9)"}},
	}, {
		name: "a failed object makes the release Failed and comes first",
		objs: []Observed{
			{Ref: dep, Health: Health{Status: kstatus.InProgressStatus, Message: "Available: 0/2"}},
			{Ref: sts, Health: Health{Status: kstatus.FailedStatus, Message: "Progress deadline exceeded"}},
		},
		want: Verdict{Reason: ReasonFailed, Message: "StatefulSet shop-db: Progress deadline exceeded; Deployment shop: Available: 0/2"},
	}, {
		name: "a deleted object",
		objs: []Observed{{Ref: dep, Health: NotFound}, {Ref: svc, Health: current}},
		want: Verdict{Reason: ReasonProgressing, Message: "Deployment shop: not found"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Evaluate(tc.objs)).To(Equal(tc.want))
		})
	}
}

func TestEvaluateBoundsTheMessage(t *testing.T) {
	g := NewWithT(t)
	var objs []Observed
	for i := range 200 {
		objs = append(objs, Observed{Ref: Ref{Kind: "ConfigMap", Name: strings.Repeat("x", 20) + string(rune('a'+i%26)) + strings.Repeat("y", i%7)}, Health: NotFound})
	}
	v := Evaluate(objs)
	g.Expect(len(v.Message)).To(BeNumerically("<=", MaxMessage+len("; and 200 more")))
	g.Expect(v.Message).To(MatchRegexp(`; and \d+ more$`))
}

func TestEvaluateMissingReference(t *testing.T) {
	g := NewWithT(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "shop", "generation": int64(1), "annotations": map[string]any{
			workloadrefs.MissingAnnotation: `Secret "api" key "token"`,
		}},
		"spec":   map[string]any{"replicas": int64(1)},
		"status": map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1), "updatedReplicas": int64(1)},
	}}
	h := Observe(u)
	g.Expect(h.MissingReferences).To(BeTrue())
	Stash(u, h)
	stashed, ok := Stashed(u)
	g.Expect(ok).To(BeTrue())
	g.Expect(stashed).To(Equal(h))
	v := Evaluate([]Observed{{Ref: Ref{Group: "apps", Kind: "Deployment", Name: "shop"}, Health: stashed}})
	g.Expect(v.Reason).To(Equal(ReasonMissingReference))
	g.Expect(v.Message).To(Equal(`Deployment shop: waiting for Secret "api" key "token" to exist`))
}

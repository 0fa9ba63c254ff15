package readiness

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func deployment(generation, observed, replicas, available int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "shop", "namespace": "team-a", "generation": generation},
		"spec":     map[string]any{"replicas": replicas},
		"status": map[string]any{
			"observedGeneration": observed, "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": available, "availableReplicas": available,
			"conditions": []any{map[string]any{"type": "Available", "status": map[bool]string{true: "True", false: "False"}[available == replicas]}},
		},
	}}
}

// rollingDeployment is a Deployment of one replica in a rolling update
// whose new Pod does not start: the old Pod keeps it ready and available.
func rollingDeployment() *unstructured.Unstructured {
	u := deployment(3, 3, 1, 1)
	_ = unstructured.SetNestedField(u.Object, int64(2), "status", "replicas")
	_ = unstructured.SetNestedField(u.Object, int64(1), "status", "updatedReplicas")
	_ = unstructured.SetNestedField(u.Object, int64(1), "status", "unavailableReplicas")
	return u
}

func TestObserve(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		// want is the kstatus status Observe must read.
		want kstatus.Status
	}{
		{"available Deployment", deployment(2, 2, 2, 2), kstatus.CurrentStatus},
		{"Deployment short of available replicas", deployment(2, 2, 2, 0), kstatus.InProgressStatus},
		{"Deployment whose new generation is not observed yet", deployment(3, 2, 2, 2), kstatus.InProgressStatus},
		{"pending claim", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "PersistentVolumeClaim",
			"metadata": map[string]any{"name": "data-shop-db-0"},
			"status":   map[string]any{"phase": "Pending"},
		}}, kstatus.InProgressStatus},
		{"ConfigMap", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"},
		}}, kstatus.CurrentStatus},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Observe(tc.obj).Status).To(Equal(tc.want))
		})
	}
}

func TestStashRoundTrip(t *testing.T) {
	g := NewWithT(t)
	u := deployment(2, 2, 2, 0)
	h := Observe(u)
	Stash(u, h)
	got, ok := Stashed(u)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(h))
	g.Expect(got.Message).To(Equal("Available: 0/2"))

	_, ok = Stashed(deployment(1, 1, 1, 1))
	g.Expect(ok).To(BeFalse(), "a live status is not a stashed health")
}

func TestObserveWaitingForPods(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		// want: whether the workload's Pods are what it waits for.
		want bool
	}{
		{"observed, short of ready Pods", deployment(2, 2, 2, 0), true},
		{"its controller has not observed the generation yet", deployment(3, 2, 2, 0), false},
		{"available", deployment(2, 2, 2, 2), false},
		{"no replicas asked for", deployment(1, 1, 0, 0), false},
		{"rolling out: the old Pods ready, the new one not", rollingDeployment(), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := Observe(tc.obj)
			g.Expect(h.WaitingForPods).To(Equal(tc.want))
			if tc.name == "rolling out: the old Pods ready, the new one not" {
				g.Expect(h.Message).To(Equal("rolling out: 1 of 1 Pod(s) of the new template created, 1 of the old one still running"))
			}
			Stash(tc.obj, h)
			back, _ := Stashed(tc.obj)
			g.Expect(back).To(Equal(h), "the flag survives the cache")
		})
	}
}

func TestObserveKeepsTheSelectorOfAWaitingWorkload(t *testing.T) {
	g := NewWithT(t)
	u := deployment(2, 2, 2, 0)
	g.Expect(unstructured.SetNestedMap(u.Object, map[string]any{
		"matchLabels":      map[string]any{"app": "shop"},
		"matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"web"}}},
	}, "spec", "selector")).To(Succeed())
	h := Observe(u)
	g.Expect(h.WaitingForPods).To(BeTrue())
	g.Expect(h.PodSelector).To(Equal("app=shop,tier in (web)"))
	Stash(u, h)
	back, _ := Stashed(u)
	g.Expect(back.PodSelector).To(Equal(h.PodSelector), "the selector survives the cache")

	ready := deployment(2, 2, 2, 2)
	g.Expect(unstructured.SetNestedMap(ready.Object, map[string]any{"matchLabels": map[string]any{"app": "shop"}}, "spec", "selector")).To(Succeed())
	g.Expect(Observe(ready).PodSelector).To(BeEmpty(), "only a workload that waits for Pods keeps one")
}

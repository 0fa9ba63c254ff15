package helmcharts_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/acme/platform-operator/internal/gen/chartrender"
	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// ownIngressPolicyLabel marks a Pod whose ingress its own NetworkPolicy
// decides: a NamespaceTenant's namespace-wide allowances skip it
// (docs/namespacetenant.md#network-isolation).
const ownIngressPolicyLabel = "platform.acme.com/own-ingress-policy"

// TestNetworkPoliciesCompose renders every chart-backed kind's chart with
// the value sets that render all its objects (nameLimitValues) and checks
// that its ingress NetworkPolicies hold inside a tenant's namespace, where
// NetworkPolicies only ever add allowed traffic: every Pod template an
// ingress allowance selects carries ownIngressPolicyLabel, and no
// allowance selects Pods it does not know (one that would select a Pod
// carrying the label widens that Pod's own policy). A chart that breaks
// either rule reopens the hole for every release of its kind.
func TestNetworkPoliciesCompose(t *testing.T) {
	kinds, err := apikinds.LoadKinds(filepath.Join("..", "config", "crd", "kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	policies := 0
	for _, k := range kinds {
		t.Run(k.Kind, func(t *testing.T) {
			valueSets, ok := nameLimitValues[k.Chart]
			if !ok {
				t.Fatalf("no values for %s: add the value sets that render all its objects to nameLimitValues", k.Chart)
			}
			chartDir := filepath.Join("..", filepath.FromSlash(k.Chart))
			for i, doc := range valueSets {
				g := NewWithT(t)
				vals, err := chartrender.ValuesFromYAML(doc)
				g.Expect(err).NotTo(HaveOccurred())
				r, err := chartrender.Render(chartDir, chartrender.Options{ReleaseName: "compose", Namespace: "ns", Values: vals})
				g.Expect(err).NotTo(HaveOccurred(), "values %d", i)
				problems, n := ingressPolicyProblems(r)
				policies += n
				g.Expect(problems).To(BeEmpty(), "values %d", i)
			}
		})
	}
	// The shipped charts have ingress allowances (tenant, nginx, webapp
	// database): a check that saw none checked nothing.
	NewWithT(t).Expect(policies).To(BeNumerically(">=", 3))
}

// The check catches both ways of reopening the hole: a chart whose policy
// selects a Pod template without the label, and an allowance that selects
// every Pod.
func TestIngressPolicyProblemsCatches(t *testing.T) {
	g := NewWithT(t)
	r, err := renderNginx(`networkPolicy: {enabled: true}`)
	g.Expect(err).NotTo(HaveOccurred())
	problems, n := ingressPolicyProblems(r)
	g.Expect(problems).To(BeEmpty())
	g.Expect(n).To(Equal(1))

	d := r.Get("Deployment", nginxRelease)
	unstructured.RemoveNestedField(d.Object, "spec", "template", "metadata", "labels", ownIngressPolicyLabel)
	problems, _ = ingressPolicyProblems(r)
	g.Expect(problems).To(ConsistOf(ContainSubstring(
		"NetworkPolicy " + nginxRelease + " admits ingress to the Pods of Deployment " + nginxRelease + ", whose template lacks label " + ownIngressPolicyLabel)))

	r, err = renderTenant(tenantMinimal)
	g.Expect(err).NotTo(HaveOccurred())
	problems, n = ingressPolicyProblems(r)
	g.Expect(problems).To(BeEmpty())
	g.Expect(n).To(Equal(1))
	same := r.Get("NetworkPolicy", "tenant-allow-same-namespace")
	g.Expect(unstructured.SetNestedMap(same.Object, map[string]any{}, "spec", "podSelector")).To(Succeed())
	problems, _ = ingressPolicyProblems(r)
	g.Expect(problems).To(ConsistOf(ContainSubstring(
		"NetworkPolicy tenant-allow-same-namespace admits ingress to Pods that carry " + ownIngressPolicyLabel)))
}

// ingressPolicyProblems lists how the ingress NetworkPolicies of r would
// widen a narrower policy in the same namespace, and counts the ingress
// allowances it checked. A policy without ingress rules (a deny) adds no
// traffic and is not an allowance.
func ingressPolicyProblems(r *chartrender.Result) (problems []string, allowances int) {
	carrier := labels.Set{ownIngressPolicyLabel: "true"}
	for _, o := range r.OfKind("NetworkPolicy") {
		var np networkingv1.NetworkPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np); err != nil {
			problems = append(problems, fmt.Sprintf("NetworkPolicy %s: %v", o.GetName(), err))
			continue
		}
		ingress := len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
		if !ingress || len(np.Spec.Ingress) == 0 {
			continue
		}
		allowances++
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			problems = append(problems, fmt.Sprintf("NetworkPolicy %s: podSelector: %v", np.Name, err))
			continue
		}
		if sel.Matches(carrier) {
			problems = append(problems, fmt.Sprintf(
				"NetworkPolicy %s admits ingress to Pods that carry %s: select only Pods without it (matchExpressions DoesNotExist), or only this chart's own Pods",
				np.Name, ownIngressPolicyLabel))
		}
		for _, w := range r.Objects {
			podLabels, ok := podTemplateLabels(w)
			if !ok || !sel.Matches(labels.Set(podLabels)) {
				continue
			}
			if _, has := podLabels[ownIngressPolicyLabel]; !has {
				problems = append(problems, fmt.Sprintf(
					"NetworkPolicy %s admits ingress to the Pods of %s %s, whose template lacks label %s: a tenant's namespace-wide allowance would admit every Pod of the namespace to them",
					np.Name, w.GetKind(), w.GetName(), ownIngressPolicyLabel))
			}
		}
	}
	return problems, allowances
}

// podTemplateLabels are the labels of the Pods o runs: a Pod's own, or
// those of its Pod template.
func podTemplateLabels(o *unstructured.Unstructured) (map[string]string, bool) {
	var path []string
	switch o.GetKind() {
	case "Pod":
		return o.GetLabels(), true
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController":
		path = []string{"spec", "template", "metadata", "labels"}
	case "CronJob":
		path = []string{"spec", "jobTemplate", "spec", "template", "metadata", "labels"}
	default:
		return nil, false
	}
	l, _, _ := unstructured.NestedStringMap(o.Object, path...)
	return l, true
}

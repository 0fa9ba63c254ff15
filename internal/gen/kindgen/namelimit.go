package kindgen

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/acme/platform-operator/internal/gen/chartrender"
	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// Longest names of the objects a release name ends up in.
const (
	// Object names are held to 63 characters (a DNS label), what most
	// charts' trunc 63 and the labels that repeat a name assume; for
	// Services it is the API server's rule.
	maxObjectName = 63
	// A StatefulSet's Pods carry the label controller-revision-hash:
	// "<statefulset>-<10-character hash>", and label values hold 63.
	maxStatefulSetName = 63 - 11
	maxLabelValue      = 63
)

// DeriveNameLimit finds the longest custom resource name the chart can be
// installed under with values, by rendering it: for each length from
// Helm's 53 down, it renders the chart with a release name of that length,
// with one that differs only in its last character, and with a wholly
// different one. The length fits when no object name or label value is too
// long and no two names that should differ come out the same (the chart
// would cut them with trunc). The name must also be a DNS-1035 label when
// a Service is named after the release.
func DeriveNameLimit(ch *chart.Chart, namespace string, values map[string]any) (apikinds.NameLimit, error) {
	var whyNot string
	for n := apikinds.MaxReleaseNameLength; n >= 1; n-- {
		problem, dns1035, err := checkLength(ch, namespace, values, n)
		if err != nil {
			return apikinds.NameLimit{}, err
		}
		if problem != "" {
			whyNot = problem
			continue
		}
		reason := "it names the Helm release and the chart's objects"
		if dns1035 {
			reason += ", among them a Service (a DNS-1035 label)"
		}
		if n == apikinds.MaxReleaseNameLength {
			reason += "; Helm allows at most 53 characters"
		} else {
			reason += fmt.Sprintf("; at %d characters %s", n+1, whyNot)
		}
		return apikinds.NameLimit{MaxLength: n, DNS1035Label: &dns1035, Reason: reason}, nil
	}
	return apikinds.NameLimit{}, fmt.Errorf("no name length renders the chart: %s", whyNot)
}

// checkLength returns what goes wrong at length n ("" when nothing does)
// and whether a Service is named after the release.
func checkLength(ch *chart.Chart, namespace string, values map[string]any, n int) (string, bool, error) {
	a := strings.Repeat("q", n)
	b := strings.Repeat("q", n-1) + "k"
	c := strings.Repeat("w", n)
	ra, err := renderAs(ch, namespace, values, a)
	if err != nil {
		return "", false, err
	}
	rb, err := renderAs(ch, namespace, values, b)
	if err != nil {
		return "", false, err
	}
	rc, err := renderAs(ch, namespace, values, c)
	if err != nil {
		return "", false, err
	}
	if len(ra) != len(rb) || len(ra) != len(rc) {
		return "", false, fmt.Errorf("the chart renders a different number of objects for different release names")
	}
	pattern := func(name string) string { return strings.ReplaceAll(name, a, "<name>") }
	dns1035 := false
	for i, o := range ra {
		name := o.GetName()
		if name != rc[i].GetName() { // named after the release
			if o.GetKind() == "Service" {
				dns1035 = true
			}
			if name == rb[i].GetName() {
				return fmt.Sprintf("the chart cuts the name of %s %q", o.GetKind(), pattern(name)), dns1035, nil
			}
		}
		limit, why := maxObjectName, ""
		if o.GetKind() == "StatefulSet" {
			limit, why = maxStatefulSetName, " (its Pods' label controller-revision-hash adds 11 to it)"
		}
		if len(name) > limit {
			return fmt.Sprintf("%s %q would be %d characters, over %d%s", o.GetKind(), pattern(name), len(name), limit, why), dns1035, nil
		}
		for _, labels := range labelSets(o) {
			for k, v := range labels {
				if len(v) > maxLabelValue {
					return fmt.Sprintf("the label %s of %s %q would be %d characters, over %d", k, o.GetKind(), pattern(name), len(v), maxLabelValue), dns1035, nil
				}
			}
		}
	}
	return "", dns1035, nil
}

func labelSets(o *unstructured.Unstructured) []map[string]string {
	sets := []map[string]string{o.GetLabels()}
	for _, path := range [][]string{{"spec", "template", "metadata", "labels"}, {"spec", "selector", "matchLabels"}} {
		if m, found, _ := unstructured.NestedStringMap(o.Object, path...); found {
			sets = append(sets, m)
		}
	}
	return sets
}

func renderAs(ch *chart.Chart, namespace string, values map[string]any, name string) ([]*unstructured.Unstructured, error) {
	res, err := chartrender.RenderChart(ch, chartrender.Options{ReleaseName: name, Namespace: namespace, Values: copyValues(values)})
	if err != nil {
		return nil, fmt.Errorf("render the chart as release %q: %w", name, err)
	}
	return res.Objects, nil
}

func copyValues(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, e := range v {
		if m, ok := e.(map[string]any); ok {
			e = copyValues(m)
		}
		out[k] = e
	}
	return out
}

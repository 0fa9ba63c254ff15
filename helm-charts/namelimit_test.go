package helmcharts_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/acme/platform-operator/internal/gen/chartrender"
	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// nameLimitValues are, per chart, value sets that between them render every
// object the chart can produce, so each object's name is checked at the
// kind's name limit. A chart listed in config/crd/kinds.yaml must be here.
var nameLimitValues = map[string][]string{
	"helm-charts/nginx": {
		allFeatures,
		`{serviceAccount: {create: true}, cronScaling: {enabled: true, jobs: [{name: day, schedule: "0 8 * * *", replicas: 2}]}}`,
	},
	"helm-charts/webapp": {
		webAppMinimal + `
ingress: {tls: {enabled: true}}
podDisruptionBudget: {mode: always}
cronScaling: {enabled: true, jobs: [{name: day, schedule: "0 8 * * *", replicas: 2}]}
`,
	},
	"helm-charts/namespace-tenant": {tenantAllOptions},
}

// TestNameLimitFitsChart renders every chart-backed kind's chart with a
// release name (the custom resource's name) of exactly the kind's
// nameLimit.maxLength from config/crd/kinds.yaml, and checks that every
// object name, Service name, StatefulSet name (with room for its pods and
// their controller-revision-hash) and label value fits its Kubernetes limit
// and still contains the whole release name: nothing was truncated, so two
// custom resources can never render the same object names. One character
// more must break something (Helm's 53, or a name above), so the limit is
// not lower than the chart needs.
func TestNameLimitFitsChart(t *testing.T) {
	kinds, err := apikinds.LoadKinds(filepath.Join("..", "config", "crd", "kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		t.Run(k.Kind, func(t *testing.T) {
			valueSets, ok := nameLimitValues[k.Chart]
			if !ok {
				t.Fatalf("no values for %s: add the value sets that render all its objects to nameLimitValues", k.Chart)
			}
			l := k.NameLimit
			// The longest name the CRD accepts, using every character it
			// accepts: a DNS-1035 label, or else dots and a leading digit.
			release := longestName(l.MaxLength, *l.DNS1035Label)
			longer := longestName(l.MaxLength+1, *l.DNS1035Label)
			chartDir := filepath.Join("..", filepath.FromSlash(k.Chart))
			for i, doc := range valueSets {
				t.Run(fmt.Sprintf("values %d", i), func(t *testing.T) {
					g := NewWithT(t)
					vals, err := chartrender.ValuesFromYAML(doc)
					g.Expect(err).NotTo(HaveOccurred())

					r, err := chartrender.Render(chartDir, chartrender.Options{ReleaseName: release, Namespace: "ns", Values: vals})
					g.Expect(err).NotTo(HaveOccurred(), "release %q (%d characters)", release, len(release))
					g.Expect(r.Objects).NotTo(BeEmpty())
					g.Expect(nameProblems(r, release)).To(BeEmpty(), "release %q (%d characters):\n%s", release, len(release), chartrender.ToYAML(r.Objects))

					r, err = chartrender.Render(chartDir, chartrender.Options{ReleaseName: longer, Namespace: "ns", Values: vals})
					if err == nil {
						g.Expect(nameProblems(r, longer)).NotTo(BeEmpty(),
							"a %d-character name renders fine: nameLimit.maxLength %d of %s is lower than the chart needs", len(longer), l.MaxLength, k.Kind)
					}
				})
			}
		})
	}
}

// The check itself must catch what it is for.
func TestNameProblemsCatches(t *testing.T) {
	g := NewWithT(t)
	vals, err := webAppValues("")
	g.Expect(err).NotTo(HaveOccurred())
	// 50 characters: "<name>-db" is 53, too long for a StatefulSet.
	release := longestName(50, true)
	r, err := chartrender.Render(webAppChartDir, chartrender.Options{ReleaseName: release, Namespace: "ns", Values: vals})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nameProblems(r, release)).To(ContainElement(ContainSubstring("StatefulSet " + release + "-db: revision label")))
	// 52 characters: webapp.fullname cuts the release at 50.
	release = longestName(52, true)
	r, err = chartrender.Render(webAppChartDir, chartrender.Options{ReleaseName: release, Namespace: "ns", Values: vals})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nameProblems(r, release)).To(ContainElement(ContainSubstring("truncated")))
	// Helm itself refuses release names over 53 characters.
	_, err = chartrender.Render(webAppChartDir, chartrender.Options{ReleaseName: longestName(54, true), Namespace: "ns", Values: vals})
	g.Expect(err).To(MatchError(ContainSubstring("release name")))
}

// longestName is a valid custom resource name of n characters; a DNS-1035
// label when dns1035, else starting with a digit and containing a dot.
func longestName(n int, dns1035 bool) string {
	prefix := "a"
	if !dns1035 {
		prefix = "0.a"
	}
	return prefix + strings.Repeat("x", n-len(prefix)-1) + "z"
}

// nameProblems lists what in the rendered objects Kubernetes would refuse,
// or what shows the release name was truncated.
func nameProblems(r *chartrender.Result, release string) []string {
	var p []string
	add := func(o *unstructured.Unstructured, format string, args ...any) {
		p = append(p, o.GetKind()+" "+o.GetName()+": "+fmt.Sprintf(format, args...))
	}
	// A string holding the release's first characters but not the whole
	// release was cut (trunc in a helper).
	stem := release[:10]
	for _, o := range append(append([]*unstructured.Unstructured{}, r.Objects...), r.Hooks...) {
		name := o.GetName()
		switch o.GetKind() {
		case "Service":
			for _, e := range validation.IsDNS1035Label(name) {
				add(o, "Service name: %s", e)
			}
		case "Namespace":
			for _, e := range validation.IsDNS1123Label(name) {
				add(o, "Namespace name: %s", e)
			}
		case "StatefulSet":
			for _, e := range validation.IsDNS1123Label(name) {
				add(o, "StatefulSet name: %s", e)
			}
			// Its pods carry controller-revision-hash: <name>-<hash of
			// up to 10 characters>, a label value.
			for _, e := range validation.IsValidLabelValue(name + "-" + strings.Repeat("h", 10)) {
				add(o, "revision label: %s", e)
			}
			// Its pods are <name>-<ordinal>, their hostname and the
			// statefulset.kubernetes.io/pod-name label value.
			replicas, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
			pod := name + "-" + strconv.FormatInt(max(replicas, 1)-1, 10)
			for _, e := range append(validation.IsDNS1123Label(pod), validation.IsValidLabelValue(pod)...) {
				add(o, "pod %s: %s", pod, e)
			}
		default:
			for _, e := range validation.IsDNS1123Subdomain(name) {
				add(o, "name: %s", e)
			}
		}
		walkStrings(o.Object, nil, func(path []string, key string, labels map[string]any) {
			for k, v := range labels {
				for _, e := range validation.IsQualifiedName(k) {
					add(o, "%s label key %q: %s", strings.Join(path, "."), k, e)
				}
				s, _ := v.(string)
				for _, e := range validation.IsValidLabelValue(s) {
					add(o, "%s label %s=%q: %s", strings.Join(path, "."), k, s, e)
				}
			}
		}, func(path []string, s string) {
			if strings.Contains(s, stem) && !strings.Contains(s, release) {
				add(o, "%s %q is truncated (release %q)", strings.Join(path, "."), s, release)
			}
		})
	}
	sort.Strings(p)
	return p
}

// walkStrings calls onLabels for every "labels" or "matchLabels" map and
// onString for every string value (and map key) in v.
func walkStrings(v any, path []string, onLabels func(path []string, key string, labels map[string]any), onString func(path []string, s string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			p := append(append([]string{}, path...), k)
			onString(p, k)
			if m, ok := child.(map[string]any); ok && (k == "labels" || k == "matchLabels") {
				onLabels(p, k, m)
			}
			walkStrings(child, p, onLabels, onString)
		}
	case []any:
		for i, child := range v {
			walkStrings(child, append(append([]string{}, path...), strconv.Itoa(i)), onLabels, onString)
		}
	case string:
		onString(path, v)
	}
}

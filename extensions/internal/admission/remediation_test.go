package admission

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func annotatedNginx(annotations map[string]string) *unstructured.Unstructured {
	u := obj("ns", "Nginx", "web", nil)
	u.SetAnnotations(annotations)
	return u
}

func TestRemediationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		// annotations are the resource's.
		annotations map[string]string
		// want are the refused fields, each with a part of its message.
		want map[string]string
	}{
		{name: "none"},
		{name: "valid", annotations: map[string]string{
			"platform.acme.com/ready-timeout": "90s", "platform.acme.com/remediation": "none", "platform.acme.com/retry": "x"}},
		{name: "retry takes anything", annotations: map[string]string{"platform.acme.com/retry": "!"}},
		{name: "timeout out of bounds", annotations: map[string]string{"platform.acme.com/ready-timeout": "999h"},
			want: map[string]string{"metadata.annotations[platform.acme.com/ready-timeout]": `annotation platform.acme.com/ready-timeout: "999h" is outside 10s to 24h`}},
		{name: "both wrong", annotations: map[string]string{"platform.acme.com/ready-timeout": "soon", "platform.acme.com/remediation": ""},
			want: map[string]string{
				"metadata.annotations[platform.acme.com/ready-timeout]": `"soon" is not a duration`,
				"metadata.annotations[platform.acme.com/remediation]":   `"" is not one of rollback, none`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := remediationErrors(annotatedNginx(tc.annotations))
			g.Expect(errs).To(HaveLen(len(tc.want)))
			for _, e := range errs {
				g.Expect(tc.want).To(HaveKey(e.Field))
				g.Expect(e.Detail).To(ContainSubstring(tc.want[e.Field]))
			}
		})
	}
}

func TestRemediationSet(t *testing.T) {
	const timeout, strategy = "platform.acme.com/ready-timeout", "platform.acme.com/remediation"
	for _, tc := range []struct {
		name string
		// old and edits are the annotations before and after the update.
		old, edits map[string]string
		// want: the update sets a remediation annotation.
		want bool
	}{
		{name: "no annotations"},
		{name: "others edited", old: map[string]string{"note": "a"}, edits: map[string]string{"note": "b", "platform.acme.com/retry": "1"}},
		{name: "kept", old: map[string]string{timeout: "5m"}, edits: map[string]string{timeout: "5m", "note": "b"}},
		{name: "removed", old: map[string]string{timeout: "5m"}},
		{name: "added", edits: map[string]string{strategy: "none"}, want: true},
		{name: "edited", old: map[string]string{timeout: "5m"}, edits: map[string]string{timeout: "2m"}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(remediationSet(annotatedNginx(tc.old), annotatedNginx(tc.edits))).To(Equal(tc.want))
		})
	}
}

// The matchConditions of the webhooks of kinds with a chart send edits of
// the annotations remediationErrors checks and of the chart version pin
// (the integration tests prove they do on an API server); the
// CronScaler's do not.
func TestMatchConditionsNameRemediationAnnotations(t *testing.T) {
	g := NewWithT(t)
	// TestMain moved to the repository root.
	data, err := os.ReadFile(filepath.Join("config", "webhook", "manifests.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(yaml.UnmarshalStrict(data, vwc)).To(Succeed())
	g.Expect(vwc.Webhooks).To(HaveLen(4))
	for _, w := range vwc.Webhooks {
		g.Expect(w.MatchConditions).To(HaveLen(1), w.Name)
		expr := w.MatchConditions[0].Expression
		for _, a := range append(slices.Clone(remediationAnnotations), pinAnnotations...) {
			g.Expect(strings.Contains(expr, "'"+a+"'")).To(Equal(w.Name != "vcronscaler.autoscaling.acme.com"), w.Name+" names "+a)
		}
	}
}

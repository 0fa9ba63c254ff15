package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// expectDeployed waits until the custom resource of kind gvk reports
// Deployed=True with reason.
func expectDeployed(t *testing.T, gvk schema.GroupVersionKind, ns, name, reason string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		status, got, msg := env.ConditionOf(g, gvk, ns, name, "Deployed")
		g.Expect(status).To(Equal("True"), msg)
		g.Expect(got).To(Equal(reason))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// applyCR applies a custom resource of kind gvk whose spec is the YAML
// spec.
func applyCR(g Gomega, gvk schema.GroupVersionKind, ns, name, spec string) {
	manifest := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n%s\n",
		gvk.GroupVersion(), gvk.Kind, name, ns, indent(spec, "  "))
	out, err := env.KubectlIn(manifest, "apply", "-f", "-")
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
}

// indent prefixes every line of s, trimmed.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

// tenantEvents are the Events about the NamespaceTenant name, as
// "Type/Reason: message".
func tenantEvents(ctx context.Context, name string) ([]string, error) {
	events, err := env.EventsOf(ctx, "", "NamespaceTenant", name)
	var out []string
	for _, e := range events {
		out = append(out, e.Type+"/"+e.Reason+": "+e.Message)
	}
	return out, err
}

// scaledEvents counts the Scaled Events of the CronScaler name in ns by
// message.
func scaledEvents(ctx context.Context, ns, name string) (map[string]int32, error) {
	events, err := env.EventsOf(ctx, ns, "CronScaler", name)
	out := map[string]int32{}
	for _, e := range events {
		if e.Reason == "Scaled" {
			out[e.Message] += max(e.Count, 1)
		}
	}
	return out, err
}

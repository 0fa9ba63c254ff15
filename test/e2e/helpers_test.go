package e2e

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// getCR reads a custom resource of kind gvk; ns is "" for cluster-scoped
// kinds.
func getCR(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

// applyYAML applies manifest with kubectl, as a user would; ns may be ""
// when the manifest names its namespace.
func applyYAML(g Gomega, ns, manifest string) {
	args := []string{"apply", "-f", "-"}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	out, err := kubectlIn(manifest, args...)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
}

// applyCR applies a custom resource of kind gvk whose spec is the YAML
// spec.
func applyCR(g Gomega, gvk schema.GroupVersionKind, ns, name, spec string) {
	manifest := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n%s\n",
		gvk.GroupVersion(), gvk.Kind, name, ns, indent(spec, "  "))
	out, err := kubectlIn(manifest, "apply", "-f", "-")
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

// eventsOf lists the Events about the object name in ns ("" for a
// cluster-scoped object, whose Events are in the default namespace) of
// kind ("" for any kind).
func eventsOf(ctx context.Context, ns, kind, name string) ([]corev1.Event, error) {
	var list corev1.EventList
	fields := client.MatchingFields{"involvedObject.name": name}
	if kind != "" {
		fields["involvedObject.kind"] = kind
	}
	opts := []client.ListOption{fields}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := env.client.List(ctx, &list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// eventReasons are the reasons of the Events about name in ns.
func eventReasons(ctx context.Context, ns, name string) ([]string, error) {
	events, err := eventsOf(ctx, ns, "", name)
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	return reasons, err
}

// eventsWithReason are the Events of reason about name in ns, as
// "Type: message".
func eventsWithReason(ctx context.Context, ns, name, reason string) ([]string, error) {
	events, err := eventsOf(ctx, ns, "", name)
	var out []string
	for _, e := range events {
		if e.Reason == reason {
			out = append(out, e.Type+": "+e.Message)
		}
	}
	return out, err
}

// warningEvents are the messages of the Warning Events of reason about name
// in ns, and how often they were recorded in all.
func warningEvents(ctx context.Context, ns, name, reason string) (messages []string, count int32, err error) {
	events, err := eventsOf(ctx, ns, "", name)
	for _, e := range events {
		if e.Reason == reason && e.Type == corev1.EventTypeWarning {
			messages = append(messages, e.Message)
			count += max(e.Count, 1)
		}
	}
	return messages, count, err
}

// tenantEvents are the Events about the NamespaceTenant name, as
// "Type/Reason: message".
func tenantEvents(ctx context.Context, name string) ([]string, error) {
	events, err := eventsOf(ctx, "", "NamespaceTenant", name)
	var out []string
	for _, e := range events {
		out = append(out, e.Type+"/"+e.Reason+": "+e.Message)
	}
	return out, err
}

// scaledEvents counts the Scaled Events of the CronScaler name in ns by
// message.
func scaledEvents(ctx context.Context, ns, name string) (map[string]int32, error) {
	events, err := eventsOf(ctx, ns, "CronScaler", name)
	out := map[string]int32{}
	for _, e := range events {
		if e.Reason == "Scaled" {
			out[e.Message] += max(e.Count, 1)
		}
	}
	return out, err
}

package testkit

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventsOf lists the Events about the object name in ns ("" for a
// cluster-scoped object, whose Events are in the default namespace) of
// kind ("" for any kind).
func (k *Kube) EventsOf(ctx context.Context, ns, kind, name string) ([]corev1.Event, error) {
	var list corev1.EventList
	fields := client.MatchingFields{"involvedObject.name": name}
	if kind != "" {
		fields["involvedObject.kind"] = kind
	}
	opts := []client.ListOption{fields}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := k.Client.List(ctx, &list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// EventReasons are the reasons of the Events about name in ns.
func (k *Kube) EventReasons(ctx context.Context, ns, name string) ([]string, error) {
	events, err := k.EventsOf(ctx, ns, "", name)
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	return reasons, err
}

// EventsWithReason are the Events of reason about name in ns, as
// "Type: message".
func (k *Kube) EventsWithReason(ctx context.Context, ns, name, reason string) ([]string, error) {
	events, err := k.EventsOf(ctx, ns, "", name)
	var out []string
	for _, e := range events {
		if e.Reason == reason {
			out = append(out, e.Type+": "+e.Message)
		}
	}
	return out, err
}

// WarningEvents are the messages of the Warning Events of reason about
// name in ns, and how often they were recorded in all.
func (k *Kube) WarningEvents(ctx context.Context, ns, name, reason string) (messages []string, count int32, err error) {
	events, err := k.EventsOf(ctx, ns, "", name)
	for _, e := range events {
		if e.Reason == reason && e.Type == corev1.EventTypeWarning {
			messages = append(messages, e.Message)
			count += max(e.Count, 1)
		}
	}
	return messages, count, err
}

package actionpath

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// condition is one condition the action path writes on a custom resource,
// beside the library's.
type condition struct {
	Type, Status, Reason, Message string
}

// conditionOf returns the condition of type typ on obj, if any.
func conditionOf(obj client.Object, typ string) (condition, bool) {
	cr, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return condition{}, false
	}
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != typ {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		return condition{Type: typ, Status: str("status"), Reason: str("reason"), Message: str("message")}, true
	}
	return condition{}, false
}

// patchCondition sets cond on obj (or removes the condition of type
// typ when cond is nil) with a status patch. obj is the library's copy of
// the custom resource; the patch refreshes it, so the library's own status
// update later keeps the condition and does not conflict. The transition
// time stays when neither the status nor the message changes.
func patchCondition(ctx context.Context, status client.Client, obj client.Object, typ string, cond *condition, now time.Time) error {
	cr, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected custom resource type %T", obj)
	}
	base := cr.DeepCopy()
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	out := make([]interface{}, 0, len(conds)+1)
	transition := now.UTC().Format(time.RFC3339)
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != typ {
			out = append(out, c)
			continue
		}
		if cond != nil && m["status"] == cond.Status && m["message"] == cond.Message {
			if t, ok := m["lastTransitionTime"].(string); ok {
				transition = t
			}
		}
	}
	if cond != nil {
		out = append(out, map[string]interface{}{
			"type":               typ,
			"status":             cond.Status,
			"reason":             cond.Reason,
			"message":            cond.Message,
			"lastTransitionTime": transition,
		})
	}
	if err := unstructured.SetNestedSlice(cr.Object, out, "status", "conditions"); err != nil {
		return err
	}
	return status.Status().Patch(ctx, cr, client.MergeFrom(base))
}

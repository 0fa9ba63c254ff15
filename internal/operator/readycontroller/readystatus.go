package readycontroller

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/readiness"
)

// stampStatus is the status edit that says which generation a status
// the library writes describes, and sets Ready (statusclient.go). Once the
// status is written, the tracker remembers what was written.
func (t *Tracker) StampStatus(ctx context.Context, obj client.Object) (written func()) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != t.gvk {
		return nil
	}
	key := client.ObjectKeyFromObject(u)
	st, _ := u.Object["status"].(map[string]any)
	t.mu.Lock()
	var e readyEntry
	if known := t.entries[key]; known != nil && known.uid == u.GetUID() {
		e = *known
	}
	t.mu.Unlock()
	e.uid = u.GetUID()
	known := e.held.get()
	e.status = keptStatus(st)
	e.release = releaseFromStatus(st, e.release)
	e.generation = u.GetGeneration()
	now := t.clock.Now()
	v, _ := t.testVerdict(t.verdict(ctx, key, &e, now), &e, u, t.policyOf(u))
	status, computed := withRemediation(withReady(st, v, u.GetGeneration(), now), known, &e, v, u, now)
	u.Object["status"] = status
	t.remember(key, u.GetUID(), computed)
	return func() {
		t.mu.Lock()
		stored := t.entryLocked(key, u.GetUID())
		stored.generation = u.GetGeneration()
		stored.stampedAt = t.clock.Now()
		t.mu.Unlock()
		t.written(key, &e, u, v)
	}
}

// releaseFromStatus reads the library's conditions into r.
func releaseFromStatus(st map[string]any, r readiness.Release) readiness.Release {
	r.Paused = readyCondStatus(st, "Paused") == string(metav1.ConditionTrue)
	r.Deployed = readyCondStatus(st, "Deployed") == string(metav1.ConditionTrue)
	r.ReleaseFailed = readyCondStatus(st, "ReleaseFailed") == string(metav1.ConditionTrue)
	r.ReleaseFailedMessage = ""
	if c := findCondition(st, "ReleaseFailed"); c != nil {
		r.ReleaseFailedMessage, _ = c["message"].(string)
	}
	return r
}

// condition returns the condition of type typ in st, or nil.
func findCondition(st map[string]any, typ string) map[string]any {
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// readyCondStatus is the status of the condition of type typ, or "".
func readyCondStatus(st map[string]any, typ string) string {
	s, _ := findCondition(st, typ)["status"].(string)
	return s
}

// withReady returns a copy of st whose observedGeneration and every
// condition's are generation, and whose Ready condition is v (its
// lastTransitionTime kept unless its status changes).
func withReady(st map[string]any, v readiness.Verdict, generation int64, now time.Time) map[string]any {
	out := runtime.DeepCopyJSON(orEmpty(st))
	out["observedGeneration"] = generation
	status := string(metav1.ConditionFalse)
	switch {
	case v.Ready:
		status = string(metav1.ConditionTrue)
	case v.Reason == readiness.ReasonPaused:
		status = string(metav1.ConditionUnknown)
	}
	ready := map[string]any{
		"type":               ConditionReady,
		"status":             status,
		"reason":             v.Reason,
		"message":            v.Message,
		"lastTransitionTime": now.UTC().Format(time.RFC3339),
	}
	conds, _ := out["conditions"].([]any)
	found := false
	for i, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if m["type"] == ConditionReady {
			if m["status"] == status && m["lastTransitionTime"] != nil {
				ready["lastTransitionTime"] = m["lastTransitionTime"]
			}
			conds[i] = ready
			m = ready
			found = true
		}
		m["observedGeneration"] = generation
	}
	if !found {
		ready["observedGeneration"] = generation
		conds = append(conds, ready)
	}
	out["conditions"] = conds
	return out
}

// heldStatus is a status as the tracker's entries hold it between
// judgements: what keptStatus keeps of it, as JSON. At N=10,000 the
// tracker held every release's status as decoded maps, 45 MB the
// collector marked on every cycle; as JSON it is a third of that and one
// object the collector does not scan (docs/benchmarks.md, "The cache's
// strings shared"). A judgement decodes it once.
type heldStatus struct {
	json []byte // nil: no status known
	// readiness is readinessOf the status, for the metrics.
	readiness string
}

// holdStatus returns what the tracker holds of st.
func holdStatus(st map[string]any) heldStatus {
	kept := keptFieldsOf(st)
	if kept == nil {
		return heldStatus{}
	}
	b, err := json.Marshal(kept)
	if err != nil { // not JSON data: never from the API server
		return heldStatus{}
	}
	return heldStatus{json: b, readiness: readinessOf(kept)}
}

// known reports whether a status is held.
func (h heldStatus) known() bool { return h.json != nil }

// get returns the status held, decoded (whole numbers as int64, as in an
// object read from the API server), or nil.
func (h heldStatus) get() map[string]any {
	if h.json == nil {
		return nil
	}
	var st map[string]any
	if err := utiljson.Unmarshal(h.json, &st); err != nil {
		return nil
	}
	return st
}

// keptFields are the fields of a status the tracker keeps.
var keptFields = []string{"conditions", "observedGeneration", "history", "remediation", StatusChartVersion}

// keptStatus is what the tracker keeps of a status: its conditions,
// observedGeneration, history and remediation, copied. Not deployedRelease: its manifest is a few
// KiB per resource, which the cache already avoids holding (package cachefilter).
func keptStatus(st map[string]any) map[string]any {
	kept := keptFieldsOf(st)
	if kept == nil {
		return nil
	}
	return runtime.DeepCopyJSON(kept)
}

// keptFieldsOf returns the fields of st the tracker keeps (keptFields),
// not copied; nil for no status.
func keptFieldsOf(st map[string]any) map[string]any {
	if st == nil {
		return nil
	}
	out := make(map[string]any, len(keptFields))
	for _, k := range keptFields {
		if v, ok := st[k]; ok {
			out[k] = v
		}
	}
	return out
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// statusEqual compares two statuses as JSON values (generations may be
// int64 in one and float64 or int64 in the other).
func statusEqual(a, b map[string]any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(m map[string]any) any {
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

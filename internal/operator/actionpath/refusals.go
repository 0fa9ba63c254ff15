package actionpath

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Refusals remembers the last refusal of the ownership, confinement or
// record size layer per resource, so that the status the library writes
// carries the refusal's reason (ReleaseNameConflict, InvalidReleaseName,
// ObjectConflict, OutsideNamespace, ReleaseTooLarge) instead of its generic
// InstallError and ReconcileError: the library sets reasons of its own and
// takes only the message from an action's error. An entry lives until the
// resource's next action goes ahead (or its deletion).
type Refusals struct {
	mu sync.Mutex
	m  map[types.UID]refusal
}

type refusal struct{ reason, message string }

// NewRefusals returns an empty store.
func NewRefusals() *Refusals { return &Refusals{m: map[types.UID]refusal{}} }

func (r *Refusals) refused(uid types.UID, reason, message string) {
	r.mu.Lock()
	r.m[uid] = refusal{reason: reason, message: message}
	r.mu.Unlock()
}

func (r *Refusals) forget(uid types.UID) {
	r.mu.Lock()
	delete(r.m, uid)
	r.mu.Unlock()
}

// Apply sets the refusal's reason on the True ReleaseFailed and
// Irreconcilable conditions of obj whose message is the refusal's.
func (r *Refusals) Apply(obj client.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	r.mu.Lock()
	ref, ok := r.m[obj.GetUID()]
	r.mu.Unlock()
	if !ok {
		return
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["status"] != string(corev1.ConditionTrue) || m["message"] != ref.message {
			continue
		}
		if m["type"] == "ReleaseFailed" || m["type"] == "Irreconcilable" {
			m["reason"] = ref.reason
		}
	}
	_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
}

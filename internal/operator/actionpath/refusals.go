package actionpath

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/reconcilerecord"
)

// A refusal of the ownership, confinement, remediation or record size
// layer keeps its own reason (ReleaseNameConflict, InvalidReleaseName,
// ObjectConflict, OutsideNamespace, Uninstalled, ReleaseTooLarge) on the
// conditions that report it, instead of the library's generic InstallError
// or ReconcileError: the library sets reasons of its own and takes only
// the message from an action's error. The layer records the refusal in
// the reconcile's record; the status writer, called with the same object
// at the end of the reconcile, applies it (ApplyRefusal).

// refused records a refusal in obj's reconcile record.
func refused(obj client.Object, reason, message string) {
	reconcilerecord.Of(obj).Refuse(reason, message)
}

// proceeded records that an action went ahead: an earlier refusal of the
// same reconcile no longer describes it.
func proceeded(obj client.Object) {
	reconcilerecord.Of(obj).Proceed()
}

// ApplyRefusal sets the reason of the refusal obj's reconcile ended with on
// the True ReleaseFailed and Irreconcilable conditions of obj whose message
// is the refusal's.
func ApplyRefusal(obj client.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	ref, ok := reconcilerecord.Of(obj).Refusal()
	if !ok {
		return
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["status"] != string(corev1.ConditionTrue) || m["message"] != ref.Message {
			continue
		}
		if m["type"] == "ReleaseFailed" || m["type"] == "Irreconcilable" {
			m["reason"] = ref.Reason
		}
	}
	_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
}

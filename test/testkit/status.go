package testkit

import (
	"context"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Condition returns the status, reason and message of the condition of
// type t in u's status ("" for each when there is none).
func Condition(u *unstructured.Unstructured, t string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == t {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
			return status, reason, message
		}
	}
	return "", "", ""
}

// ConditionOf reads the object name of kind gvk in ns ("" for
// cluster-scoped kinds) and returns its condition of type t; that the
// object can be read is an expectation of g.
func (k *Kube) ConditionOf(g Gomega, gvk schema.GroupVersionKind, ns, name, t string) (status, reason, message string) {
	cr, err := k.Get(context.Background(), gvk, ns, name)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return Condition(cr, t)
}

// DeploymentAvailable reports whether d's controller has seen its spec and
// every desired replica is updated and available.
func DeploymentAvailable(d *appsv1.Deployment) bool {
	return everyReplica(d, d.Status.AvailableReplicas)
}

// DeploymentReady reports whether d's controller has seen its spec and
// every desired replica is updated and ready: DeploymentAvailable with
// ready replicas in place of available ones (a replica is available once
// it has been ready for minReadySeconds).
func DeploymentReady(d *appsv1.Deployment) bool {
	return everyReplica(d, d.Status.ReadyReplicas)
}

// everyReplica reports whether d's controller has seen its spec and every
// desired replica is updated and counted (available or ready).
func everyReplica(d *appsv1.Deployment, counted int32) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
		counted == want && d.Status.Replicas == want
}

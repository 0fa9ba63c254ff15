package readiness

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/acme/platform-operator/internal/operator/workloadrefs"
)

// Health is what is kept of a live object's status: its kstatus status
// and message.
type Health struct {
	// Status is a kstatus status: Current, InProgress, Failed,
	// Terminating, NotFound or Unknown.
	Status kstatus.Status
	// Message is kstatus's explanation, e.g. "Deployment not Available".
	Message string
	// WaitingForPods: a workload whose controller has observed its
	// current generation but has fewer ready Pods than it asks for. Only
	// then do its Pods say more than kstatus (an image that cannot be
	// pulled, a failing probe); a workload whose controller is merely
	// behind is not waiting for Pods.
	WaitingForPods bool
	// PodSelector is, of a workload waiting for Pods, the label selector
	// of its Pods in the form labels.Parse reads, so that a cache that
	// keeps the workload without its spec still finds its Pods.
	PodSelector string
	// MissingReferences: a workload whose Pods read a Secret, ConfigMap
	// or key that does not exist (the message names it). Its Pods cannot
	// start until it does.
	MissingReferences bool
}

// NotFound is the Health of an object of the release that does not exist.
var NotFound = Health{Status: kstatus.NotFoundStatus, Message: "not found"}

// Observe computes the Health of a live object. An object kstatus cannot
// read is Unknown, with the reason in the message.
func Observe(u *unstructured.Unstructured) Health {
	res, err := kstatus.Compute(u)
	if err != nil {
		return Health{Status: kstatus.UnknownStatus, Message: err.Error()}
	}
	h := Health{Status: res.Status, Message: res.Message}
	if missing := u.GetAnnotations()[workloadrefs.MissingAnnotation]; missing != "" && u.GroupVersionKind().Group == "apps" {
		// Recorded by the sidecar's rotation controller: Pods that read a
		// Secret or ConfigMap that does not exist cannot start (on a real
		// node they wait in CreateContainerConfigError).
		return Health{Status: kstatus.InProgressStatus, Message: "waiting for " + missing + " to exist", MissingReferences: true}
	}
	if h.Status != kstatus.CurrentStatus {
		h.WaitingForPods = waitingForPods(u)
		if h.WaitingForPods {
			h.PodSelector = podSelector(u)
		}
		if msg, ok := rolloutMessage(u); ok {
			h.Message = msg
		}
	}
	return h
}

// rolloutMessage says where a rolling update of a Deployment stands, in
// place of kstatus's wording for it ("Pending termination: 1" while the
// Pod of the old template keeps serving and the new one cannot start).
func rolloutMessage(u *unstructured.Unstructured) (string, bool) {
	if u.GroupVersionKind().GroupKind().String() != "Deployment.apps" {
		return "", false
	}
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	want, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	if observed < u.GetGeneration() || !rollingOut(u, want) {
		return "", false
	}
	updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
	replicas, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
	return fmt.Sprintf("rolling out: %d of %d Pod(s) of the new template created, %d of the old one still running", updated, want, replicas-updated), true
}

// waitingForPods reports whether u is a Deployment, StatefulSet or
// DaemonSet whose controller has observed its generation and which has
// fewer ready Pods than it wants, or fewer ready Pods of its current
// template: during a rolling update the old Pods keep every replica
// ready while the new ones may never start (an image that does not
// exist), and only those say why the rollout does not end.
func waitingForPods(u *unstructured.Unstructured) bool {
	gk := u.GroupVersionKind().GroupKind()
	if gk.Group != "apps" {
		return false
	}
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if observed < u.GetGeneration() {
		return false
	}
	ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	switch gk.Kind {
	case "Deployment", "StatefulSet":
		want, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		if !found {
			want = 1
		}
		return ready < want || rollingOut(u, want)
	case "DaemonSet":
		want, _, _ := unstructured.NestedInt64(u.Object, "status", "desiredNumberScheduled")
		ready, _, _ = unstructured.NestedInt64(u.Object, "status", "numberReady")
		return ready < want
	}
	return false
}

// podSelector is the label selector of u's Pods (spec.selector) as a
// string; "" when it has none or selects everything.
func podSelector(u *unstructured.Unstructured) string {
	sel, found, err := unstructured.NestedMap(u.Object, "spec", "selector")
	if err != nil || !found {
		return ""
	}
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, ls); err != nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || s.Empty() {
		return ""
	}
	return s.String()
}

// rollingOut reports whether a Deployment or StatefulSet that wants want
// replicas still runs Pods of an earlier template: its controller created
// the new ones, which are what it now waits for.
func rollingOut(u *unstructured.Unstructured, want int64) bool {
	if want == 0 {
		return false
	}
	switch u.GetKind() {
	case "Deployment":
		updated, found, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
		replicas, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
		return found && (updated < want || replicas > updated)
	case "StatefulSet":
		current, _, _ := unstructured.NestedString(u.Object, "status", "currentRevision")
		update, _, _ := unstructured.NestedString(u.Object, "status", "updateRevision")
		return current != "" && update != "" && current != update
	}
	return false
}

// Ready reports whether h is Current.
func (h Health) Ready() bool { return h.Status == kstatus.CurrentStatus }

// Keys of the summary [Stash] leaves in an object's status.
const (
	stashStatus  = "platform-operator.acme.com/health"
	stashMessage = "platform-operator.acme.com/health-message"
	stashPods    = "platform-operator.acme.com/waiting-for-pods"
	stashMissing = "platform-operator.acme.com/missing-references"
	stashPodSel  = "platform-operator.acme.com/pod-selector"
)

// Stash replaces u's status with its Health, for caches that keep objects
// without their status: two stashed objects have equal statuses exactly
// when their Health is equal, and a cached copy answers [Stashed].
func Stash(u *unstructured.Unstructured, h Health) {
	st := map[string]any{stashStatus: string(h.Status), stashMessage: h.Message}
	if h.WaitingForPods {
		st[stashPods] = true
	}
	if h.MissingReferences {
		st[stashMissing] = true
	}
	if h.PodSelector != "" {
		st[stashPodSel] = h.PodSelector
	}
	u.Object["status"] = st
}

// Stashed returns the Health that [Stash] left in u, and false when u has
// none.
func Stashed(u *unstructured.Unstructured) (Health, bool) {
	st, ok := u.Object["status"].(map[string]any)
	if !ok {
		return Health{}, false
	}
	s, ok := st[stashStatus].(string)
	if !ok {
		return Health{}, false
	}
	m, _ := st[stashMessage].(string)
	p, _ := st[stashPods].(bool)
	missing, _ := st[stashMissing].(bool)
	sel, _ := st[stashPodSel].(string)
	return Health{Status: kstatus.Status(s), Message: m, WaitingForPods: p, PodSelector: sel, MissingReferences: missing}, true
}

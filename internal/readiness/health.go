package readiness

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Health is what is kept of a live object's status: its kstatus status
// and message.
type Health struct {
	// Status is a kstatus status: Current, InProgress, Failed,
	// Terminating, NotFound or Unknown.
	Status kstatus.Status
	// Message is kstatus's explanation, e.g. "Deployment not Available".
	Message string
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
	return Health{Status: res.Status, Message: res.Message}
}

// Ready reports whether h is Current.
func (h Health) Ready() bool { return h.Status == kstatus.CurrentStatus }

// Keys of the summary [Stash] leaves in an object's status.
const (
	stashStatus  = "platform-operator.acme.com/health"
	stashMessage = "platform-operator.acme.com/health-message"
)

// Stash replaces u's status with its Health, for caches that keep objects
// without their status: two stashed objects have equal statuses exactly
// when their Health is equal, and a cached copy answers [Stashed].
func Stash(u *unstructured.Unstructured, h Health) {
	u.Object["status"] = map[string]any{stashStatus: string(h.Status), stashMessage: h.Message}
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
	return Health{Status: kstatus.Status(s), Message: m}, true
}

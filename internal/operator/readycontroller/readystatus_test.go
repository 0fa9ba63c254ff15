package readycontroller

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHeldStatusKeepsWhatTheTrackerReads: a status held as JSON decodes to
// what keptStatus keeps of it, generations still int64 as in an object
// read from the API server, and knows its readiness without a decode.
func TestHeldStatusKeepsWhatTheTrackerReads(t *testing.T) {
	g := NewWithT(t)
	st := map[string]any{
		"conditions": []any{
			map[string]any{"type": "Deployed", "status": "True", "message": "notes"},
			map[string]any{"type": ConditionReady, "status": "True", "observedGeneration": int64(3)},
		},
		"observedGeneration": int64(3),
		"history":            []any{map[string]any{"revision": int64(2), "chartVersion": "0.1.0"}},
		"deployedRelease":    map[string]any{"manifest": "a few KiB"},
	}
	h := holdStatus(st)
	g.Expect(h.known()).To(BeTrue())
	g.Expect(h.readiness).To(Equal(releasesReady))
	got := h.get()
	g.Expect(got).To(Equal(keptStatus(st)))
	g.Expect(got).NotTo(HaveKey("deployedRelease"))
	gen, found, err := unstructured.NestedInt64(findCondition(got, ConditionReady), "observedGeneration")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(gen).To(Equal(int64(3)))

	g.Expect(holdStatus(nil).known()).To(BeFalse())
	g.Expect(holdStatus(nil).get()).To(BeNil())
	g.Expect(holdStatus(map[string]any{}).known()).To(BeTrue())
}

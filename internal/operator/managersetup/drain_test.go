package managersetup

import (
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

// TestDrain: until the process stops, the webhook's responses keep their
// connection and the readiness check passes; while it drains, every
// response closes its connection and the check fails.
func TestDrain(t *testing.T) {
	g := NewWithT(t)
	d := NewDrain(0)
	h := d.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	serve := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate", nil))
		return rec
	}
	g.Expect(serve().Header().Get("Connection")).To(BeEmpty())
	g.Expect(d.ReadyzCheck(nil)).To(Succeed())

	d.draining.Store(true)
	rec := serve()
	g.Expect(rec.Code).To(Equal(http.StatusOK), "still served")
	g.Expect(rec.Header().Get("Connection")).To(Equal("close"))
	g.Expect(d.ReadyzCheck(nil)).To(MatchError(errDraining))
}

package admission

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestResultOf(t *testing.T) {
	refused := refuse(obj("ns", "Nginx", "web", nil), field.ErrorList{field.Invalid(field.NewPath("spec"), nil, "no")})
	for _, tc := range []struct {
		name string
		resp admission.Response
		want string
	}{
		{name: "allowed", resp: admission.Allowed(""), want: resultAllowed},
		{name: "allowed with warnings", resp: admission.Allowed("").WithWarnings("careful"), want: resultAllowed},
		{name: "refused by a check", resp: refused, want: resultRefused},
		{name: "the API server could not be read", resp: admission.Errored(http.StatusInternalServerError, context.DeadlineExceeded), want: resultErrored},
		{name: "the request did not decode", resp: admission.Errored(http.StatusBadRequest, context.Canceled), want: resultErrored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(resultOf(tc.resp)).To(Equal(tc.want))
		})
	}
}

// TestCountedHandle: every answer is counted once, by the request's kind
// and its result, and is the Validator's answer unchanged.
func TestCountedHandle(t *testing.T) {
	g := NewWithT(t)
	c := counted{Validator: &Validator{}, responses: NewResponseCounter()}
	kind := metav1.GroupVersionKind{Group: "web.acme.com", Version: "v1alpha1", Kind: "Nginx"}

	// Deletes pass without a check.
	resp := c.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind: kind, Operation: admissionv1.Delete,
	}})
	g.Expect(resp.Allowed).To(BeTrue())
	// An object that does not decode is an error of the webhook's.
	resp = c.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind: kind, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte("{")},
	}})
	g.Expect(resp.Allowed).To(BeFalse())
	g.Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusBadRequest))

	g.Expect(testutil.ToFloat64(c.responses.WithLabelValues("Nginx", resultAllowed))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(c.responses.WithLabelValues("Nginx", resultErrored))).To(Equal(1.0))
	g.Expect(testutil.CollectAndCount(c.responses)).To(Equal(2), "no other series")
}

// TestRegisterResponseCounter: a second webhook server in one process
// counts on the first's counter.
func TestRegisterResponseCounter(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	first, err := registerResponseCounter(reg, NewResponseCounter())
	g.Expect(err).NotTo(HaveOccurred())
	second, err := registerResponseCounter(reg, NewResponseCounter())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).To(BeIdenticalTo(first))
}

package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Values of the result label of platform_operator_admission_responses_total.
const (
	// resultAllowed: the request passed (with or without warnings).
	resultAllowed = "allowed"
	// resultRefused: a check refused the object (422 Invalid, with the
	// fields at fault): the webhook did its job.
	resultRefused = "refused"
	// resultErrored: the webhook could not decide (a read of the API server
	// failed, the request did not decode); the API server refuses the
	// request all the same (failurePolicy has no say: the webhook answered).
	resultErrored = "errored"
)

// NewResponseCounter counts the webhook's answers by the kind of the
// object and their result (allowed, refused, errored). controller-runtime's
// controller_runtime_webhook_requests_total counts HTTP codes, which are
// 200 for all three.
func NewResponseCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_operator_admission_responses_total",
		Help: "Answers of the validating admission webhook by the object's kind and result: allowed, refused (a check refused the object) or errored (the webhook could not decide).",
	}, []string{"kind", "result"})
}

// registerResponseCounter registers c on reg, or returns the counter
// already registered there (a second webhook server in one process, as
// the integration tests start).
func registerResponseCounter(reg prometheus.Registerer, c *prometheus.CounterVec) (*prometheus.CounterVec, error) {
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, fmt.Errorf("register the admission metrics: %w", err)
		}
		return already.ExistingCollector.(*prometheus.CounterVec), nil
	}
	return c, nil
}

// counted is the Validator's Handle, counting each answer on responses.
type counted struct {
	*Validator
	responses *prometheus.CounterVec
}

var _ admission.Handler = counted{}

func (c counted) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := c.Validator.Handle(ctx, req)
	c.responses.WithLabelValues(req.Kind.Kind, resultOf(resp)).Inc()
	return resp
}

// resultOf is the result label of an answer: refuse answers 422 Invalid,
// admission.Errored any other code.
func resultOf(resp admission.Response) string {
	switch {
	case resp.Allowed:
		return resultAllowed
	case resp.Result != nil && resp.Result.Code == http.StatusUnprocessableEntity:
		return resultRefused
	}
	return resultErrored
}

package cronscaler

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
)

// patchOutcome is a client whose status patches return err.
type patchOutcome struct {
	client.Client
	err     error
	patches int
}

func (p *patchOutcome) Status() client.SubResourceWriter { return patchWriter{p: p} }

type patchWriter struct {
	client.SubResourceWriter
	p *patchOutcome
}

func (w patchWriter) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	w.p.patches++
	return w.p.err
}

func TestCommitEmitsEventsOnce(t *testing.T) {
	cases := []struct {
		name     string
		patchErr error
	}{
		// The status is written, then its Events emitted.
		{name: "status written"},
		// The Events say what was done to the target, which happened: they
		// are emitted anyway, and a retry of the write does not repeat them.
		{name: "status write fails", patchErr: errors.New("etcd is away")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &patchOutcome{err: tc.patchErr}
			rec := record.NewFakeRecorder(10)
			r := &Reconciler{Client: c, Recorder: rec}
			before := &autoscalingv1alpha1.CronScaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
			after := before.DeepCopy()
			after.Status.ObservedGeneration = 2
			w := &statusWrite{before: before, after: after, events: []eventCall{{object: after, eventType: corev1.EventTypeNormal, reason: ReasonScaled, message: "Scaled"}}}

			err := r.commit(t.Context(), w)
			g.Expect(c.patches).To(Equal(1))
			g.Expect(rec.Events).To(Receive(Equal("Normal Scaled Scaled")))
			if tc.patchErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tc.patchErr))
			g.Expect(r.commit(t.Context(), w)).To(MatchError(tc.patchErr)) // the retry
			g.Expect(c.patches).To(Equal(2))
			g.Expect(rec.Events).To(BeEmpty())
		})
	}
}

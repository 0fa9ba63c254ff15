package cronscaler

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
)

// A reconcile of a CronScaler changes its status and records Events in
// memory; where they go then is the status sink's business:
//
//   - immediately: commit writes them at the end of the reconcile;
//   - during a burst of fires (many CronScalers firing in the same minute),
//     a status that only records an applied fire is handed to the burst
//     writer, which writes it once the burst is over (burst.go), and a
//     later reconcile of the same CronScaler starts from it.
//
// Either way r.commit is the one place that writes a status and emits its
// Events. The Events say what was done to the target, which happened
// whether or not the status write succeeds, so they are emitted once,
// after the first attempt; a failed write is retried without them (by the
// request's backoff, or by the burst writer).

// statusSink is where one reconcile's status and Events go.
type statusSink struct {
	r   *Reconciler
	key types.NamespacedName
	// deferred is what an earlier reconcile left to the burst writer and
	// this one took back: it starts from it.
	deferred *statusWrite
	// before is the CronScaler as the API server has it.
	before *autoscalingv1alpha1.CronScaler
	// events buffers the Events of this reconcile.
	events eventBuffer
}

// sink opens the status sink of one reconcile; close it when the
// reconcile ends.
func (r *Reconciler) sink(key types.NamespacedName) *statusSink {
	s := &statusSink{r: r, key: key}
	if r.burst != nil {
		r.burst.begin()
		s.deferred = r.burst.take(key)
	}
	return s
}

// close ends the reconcile for the burst writer.
func (s *statusSink) close() {
	if s.r.burst != nil {
		s.r.burst.end()
	}
}

// startFrom makes cs, as read from the API server, the base of the status
// write, and puts on it the status an earlier reconcile left unwritten.
func (s *statusSink) startFrom(cs *autoscalingv1alpha1.CronScaler) {
	s.before = cs.DeepCopy()
	if s.deferred != nil {
		cs.Status = *s.deferred.after.Status.DeepCopy()
		s.events.calls = s.deferred.events
	}
}

// giveBack returns an unwritten status to the burst writer, for a
// reconcile that ends before it computed a status of its own.
func (s *statusSink) giveBack() {
	if s.deferred != nil {
		s.r.burst.put(s.key, s.deferred)
	}
}

// emitDeferred emits the Events an earlier reconcile left unwritten, for a
// CronScaler being deleted (its status no longer matters).
func (s *statusSink) emitDeferred() {
	if s.deferred != nil {
		emit(s.r.Recorder, s.deferred.events)
	}
}

// commit hands cs's status and the buffered Events on: to the burst writer
// when the reconcile succeeded and only applied a fire, else to r.commit
// now. enforceErr is the reconcile's error, returned with the write's.
func (s *statusSink) commit(ctx context.Context, cs *autoscalingv1alpha1.CronScaler, enforceErr error) error {
	w := &statusWrite{before: s.before, after: cs, events: s.events.calls, since: time.Now()}
	if s.deferred != nil {
		w.since = s.deferred.since
	}
	if enforceErr == nil && s.r.burst != nil && appliedFire(s.before, cs) {
		s.r.burst.put(s.key, w)
		return nil
	}
	return errors.Join(enforceErr, s.r.commit(ctx, w))
}

// commit writes w's status (when it changed) and emits its Events, once:
// a failed write keeps the status to retry, not the Events.
func (r *Reconciler) commit(ctx context.Context, w *statusWrite) error {
	err := r.patchStatus(ctx, w.before, w.after)
	emit(r.Recorder, w.events)
	w.events = nil
	return err
}

package cronscaler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
)

// Many CronScalers often fire in the same second (every workload scaled up
// at 08:00). Each fire is one write to the target, but reporting it is two
// more: the status patch and the Event, which the API server finds costlier
// than the scale itself. Written inline, they triple the time until the
// last target of a burst has its count. So a reconcile that applied a fire
// hands its status and Events to a burstWriter, which writes them once the
// burst is over: when no reconcile has been in flight for quiet, or after
// maxDelay at the latest. A lone fire's status is therefore written quiet
// after its reconcile; the first fires of a burst, which start before the
// others, wait for the burst like the rest instead of writing in the middle
// of it.
//
// Until then the status on the API server is the previous one. A reconcile
// of the same CronScaler in the meantime starts from the deferred status
// (take), so it never mistakes the applied fire for a new one. A process
// that dies with writes pending loses only them: the next leader finds the
// targets at their counts, changes nothing, and writes the status.

// eventCall is one Event a reconcile recorded.
type eventCall struct {
	object                     runtime.Object
	eventType, reason, message string
}

// eventBuffer is an EventRecorder that keeps the Events of one reconcile,
// to be emitted with its status.
type eventBuffer struct{ calls []eventCall }

var _ record.EventRecorder = &eventBuffer{}

func (b *eventBuffer) Event(object runtime.Object, eventType, reason, message string) {
	b.calls = append(b.calls, eventCall{object: object, eventType: eventType, reason: reason, message: message})
}

func (b *eventBuffer) Eventf(object runtime.Object, eventType, reason, messageFmt string, args ...any) {
	b.Event(object, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

func (b *eventBuffer) AnnotatedEventf(object runtime.Object, _ map[string]string, eventType, reason, messageFmt string, args ...any) {
	b.Eventf(object, eventType, reason, messageFmt, args...)
}

// emit records the Events on to.
func emit(to record.EventRecorder, calls []eventCall) {
	for _, c := range calls {
		to.Event(c.object, c.eventType, c.reason, c.message)
	}
}

// statusWrite is a deferred status patch (from before to after) and the
// Events to emit once it is written.
type statusWrite struct {
	before, after *autoscalingv1alpha1.CronScaler
	events        []eventCall
	since         time.Time
}

// burstWriter holds deferred status writes and writes them when the burst
// is over. It runs as a manager Runnable, on the leader only.
type burstWriter struct {
	// write patches one status and emits its Events.
	write   func(ctx context.Context, w *statusWrite) error
	workers int
	// quiet is how long no reconcile must have been in flight before the
	// burst counts as over; maxDelay bounds the wait of any write.
	quiet, maxDelay time.Duration
	log             logr.Logger

	mu       sync.Mutex
	inFlight int
	// lastEnd is when the in-flight count last dropped to zero.
	lastEnd time.Time
	pending map[types.NamespacedName]*statusWrite
	kick    chan struct{}
}

func newBurstWriter(write func(context.Context, *statusWrite) error, workers int, quiet, maxDelay time.Duration, log logr.Logger) *burstWriter {
	return &burstWriter{
		write: write, workers: max(workers, 1), quiet: quiet, maxDelay: maxDelay, log: log,
		pending: map[types.NamespacedName]*statusWrite{},
		kick:    make(chan struct{}, 1),
	}
}

// begin and end bracket a reconcile.
func (b *burstWriter) begin() {
	b.mu.Lock()
	b.inFlight++
	b.mu.Unlock()
}

func (b *burstWriter) end() {
	b.mu.Lock()
	b.inFlight--
	idle := b.inFlight == 0
	if idle {
		b.lastEnd = time.Now()
	}
	waiting := idle && len(b.pending) > 0
	b.mu.Unlock()
	if waiting {
		// Look again when the quiet period is over; a reconcile that
		// starts and ends meanwhile sets a later lastEnd and its own look.
		time.AfterFunc(b.quiet, b.wake)
	}
}

func (b *burstWriter) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// take removes and returns the deferred write of a CronScaler, nil when
// there is none. The reconcile that takes it writes it or defers it again.
func (b *burstWriter) take(key types.NamespacedName) *statusWrite {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.pending[key]
	delete(b.pending, key)
	return w
}

// put defers a write. A write that failed is put back unless a newer one
// was deferred meanwhile, which then also carries its Events.
func (b *burstWriter) put(key types.NamespacedName, w *statusWrite) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if newer, ok := b.pending[key]; ok {
		newer.events = append(w.events, newer.events...)
		if w.since.Before(newer.since) {
			newer.since = w.since
		}
		return
	}
	b.pending[key] = w
}

// due takes every deferred write when no reconcile has been in flight for
// quiet, or the oldest has waited maxDelay.
func (b *burstWriter) due(now time.Time) map[types.NamespacedName]*statusWrite {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		return nil
	}
	if b.inFlight > 0 || now.Sub(b.lastEnd) < b.quiet {
		overdue := false
		for _, w := range b.pending {
			if now.Sub(w.since) >= b.maxDelay {
				overdue = true
				break
			}
		}
		if !overdue {
			return nil
		}
	}
	out := b.pending
	b.pending = map[types.NamespacedName]*statusWrite{}
	return out
}

// Start writes deferred statuses until ctx ends, then writes what is left
// within a few seconds.
func (b *burstWriter) Start(ctx context.Context) error {
	tick := time.NewTicker(b.maxDelay / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			b.mu.Lock()
			b.inFlight, b.lastEnd = 0, time.Time{} // the controllers have stopped
			b.mu.Unlock()
			b.flush(final, b.due(time.Now()))
			return nil
		case <-b.kick:
		case <-tick.C:
		}
		b.flush(ctx, b.due(time.Now()))
	}
}

// flush writes the given writes with a few workers; failed ones are put
// back for the next round.
func (b *burstWriter) flush(ctx context.Context, writes map[types.NamespacedName]*statusWrite) {
	if len(writes) == 0 {
		return
	}
	work := make(chan types.NamespacedName)
	var wg sync.WaitGroup
	for range min(b.workers, len(writes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range work {
				w := writes[key]
				if err := b.write(ctx, w); err != nil {
					b.log.Error(err, "Writing a deferred CronScaler status; retrying", "cronscaler", key)
					b.put(key, w)
				}
			}
		}()
	}
	for key := range writes {
		work <- key
	}
	close(work)
	wg.Wait()
}

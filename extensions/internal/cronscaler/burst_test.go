package cronscaler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
)

// writeLog is a fake status writer: it records the keys written and fails
// each key's first failFirst attempts.
type writeLog struct {
	mu        sync.Mutex
	written   []string
	attempts  map[string]int
	failFirst int
}

func (l *writeLog) write(_ context.Context, w *statusWrite) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := w.after.Name
	l.attempts[name]++
	if l.attempts[name] <= l.failFirst {
		return errors.New("API server unavailable")
	}
	l.written = append(l.written, name)
	return nil
}

func (l *writeLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.written...)
}

func pendingWrite(name string, since time.Time, events ...string) (types.NamespacedName, *statusWrite) {
	cs := &autoscalingv1alpha1.CronScaler{}
	cs.Namespace, cs.Name = "ns", name
	w := &statusWrite{before: cs.DeepCopy(), after: cs, since: since}
	for _, e := range events {
		w.events = append(w.events, eventCall{object: cs, eventType: "Normal", reason: "Scaled", message: e})
	}
	return types.NamespacedName{Namespace: "ns", Name: name}, w
}

func startBurstWriter(t *testing.T, log *writeLog, quiet, maxDelay time.Duration) *burstWriter {
	t.Helper()
	b := newBurstWriter(log.write, 4, quiet, maxDelay, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = b.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// TestBurstWriterWritesWhenTheBurstEnds: writes wait while reconciles are in
// flight and go out once none has been for the quiet period.
func TestBurstWriterWritesWhenTheBurstEnds(t *testing.T) {
	g := NewWithT(t)
	log := &writeLog{attempts: map[string]int{}}
	const quiet = 300 * time.Millisecond
	b := startBurstWriter(t, log, quiet, time.Hour)

	b.begin()
	b.begin()
	for _, name := range []string{"a", "b", "c"} {
		b.put(pendingWrite(name, time.Now()))
	}
	b.end()
	g.Consistently(log.names).WithTimeout(quiet+100*time.Millisecond).Should(BeEmpty(), "a reconcile is still in flight")

	b.end()
	ended := time.Now()
	g.Eventually(log.names).WithTimeout(2 * time.Second).Should(ConsistOf("a", "b", "c"))
	g.Expect(time.Since(ended)).To(BeNumerically(">=", quiet), "written only after the quiet period")
}

// TestBurstWriterQuietRestarts: a reconcile that starts and ends within the
// quiet period (the burst goes on) holds the writes back for another quiet
// period; a lone deferred write goes out one quiet period after its
// reconcile.
func TestBurstWriterQuietRestarts(t *testing.T) {
	g := NewWithT(t)
	log := &writeLog{attempts: map[string]int{}}
	const quiet = 400 * time.Millisecond
	b := startBurstWriter(t, log, quiet, time.Hour)

	b.begin()
	b.put(pendingWrite("a", time.Now()))
	b.end()
	time.Sleep(quiet / 2)
	b.begin()
	b.end()
	lastEnd := time.Now()
	g.Eventually(log.names).WithTimeout(2 * time.Second).Should(ConsistOf("a"))
	g.Expect(time.Since(lastEnd)).To(BeNumerically(">=", quiet), "the quiet period counts from the last reconcile's end")
}

// TestBurstWriterTake: a reconcile of a CronScaler with a deferred write
// takes it over, so the writer does not write it.
func TestBurstWriterTake(t *testing.T) {
	g := NewWithT(t)
	b := newBurstWriter(nil, 1, 0, time.Hour, logr.Discard())
	key, w := pendingWrite("a", time.Now(), "Scaled from 1 to 2")
	b.put(key, w)
	g.Expect(b.take(key)).To(BeIdenticalTo(w))
	g.Expect(b.take(key)).To(BeNil())
	g.Expect(b.due(time.Now())).To(BeEmpty())
}

// TestBurstWriterMaxDelay: a burst that never ends does not hold a status
// back longer than maxDelay.
func TestBurstWriterMaxDelay(t *testing.T) {
	g := NewWithT(t)
	log := &writeLog{attempts: map[string]int{}}
	b := startBurstWriter(t, log, 0, 200*time.Millisecond)
	b.begin()
	defer b.end()
	b.put(pendingWrite("a", time.Now()))
	g.Consistently(log.names).WithTimeout(100 * time.Millisecond).Should(BeEmpty())
	g.Eventually(log.names).WithTimeout(2 * time.Second).Should(ConsistOf("a"))
}

// TestBurstWriterRetries: a failed write is put back and retried; a newer
// deferred write of the same CronScaler meanwhile keeps the older Events.
func TestBurstWriterRetries(t *testing.T) {
	g := NewWithT(t)
	log := &writeLog{attempts: map[string]int{}, failFirst: 1}
	b := startBurstWriter(t, log, 0, 100*time.Millisecond)
	b.put(pendingWrite("a", time.Now()))
	b.wake()
	g.Eventually(log.names).WithTimeout(2 * time.Second).Should(ConsistOf("a"))
	g.Expect(log.attempts).To(HaveKeyWithValue("a", 2))

	older, newer := time.Now().Add(-time.Minute), time.Now()
	unit := newBurstWriter(nil, 1, 0, time.Hour, logr.Discard())
	key, failed := pendingWrite("x", older, "first fire")
	_, next := pendingWrite("x", newer, "second fire")
	unit.put(key, next)
	unit.put(key, failed) // the failed write comes back
	w := unit.take(key)
	g.Expect(w).To(BeIdenticalTo(next))
	g.Expect(w.since).To(Equal(older))
	g.Expect(w.events).To(HaveLen(2))
	g.Expect(w.events[0].message).To(Equal("first fire"))
}

// TestBurstWriterFlushesOnStop: what is pending when the manager stops is
// written before Start returns.
func TestBurstWriterFlushesOnStop(t *testing.T) {
	g := NewWithT(t)
	log := &writeLog{attempts: map[string]int{}}
	b := newBurstWriter(log.write, 2, time.Hour, time.Hour, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = b.Start(ctx); close(done) }()
	b.begin()
	b.put(pendingWrite("a", time.Now()))
	cancel()
	<-done
	g.Expect(log.names()).To(ConsistOf("a"))
}

package managersetup

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// Drain is the graceful stop of a process that serves requests behind a
// Service (the sidecar's admission webhook). On the first SIGTERM or
// SIGINT it starts draining: its readiness check fails, so the Pod leaves
// the Service's endpoints (a Pod being deleted leaves them anyway), and
// every response closes its connection, so that clients holding a
// keep-alive connection to it (the API server) open a new one, which goes
// to another replica. Delay later the context ends and the process stops
// as usual. A second signal ends the drain at once, a third the process.
type Drain struct {
	delay    time.Duration
	draining atomic.Bool
}

// NewDrain returns a drain of delay; 0 stops at the first signal.
func NewDrain(delay time.Duration) *Drain { return &Drain{delay: delay} }

// SignalContext returns a context that ends delay after the first SIGTERM
// or SIGINT, or at the second. Call it once.
func (d *Drain) SignalContext(log logr.Logger) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		d.draining.Store(true)
		if d.delay > 0 {
			log.Info("Stopping: draining connections first", "delay", d.delay.String())
			select {
			case <-signals:
			case <-time.After(d.delay):
			}
		}
		cancel()
		<-signals
		os.Exit(1) // a second signal after the drain: stop now
	}()
	return ctx
}

// Draining reports whether the process is stopping.
func (d *Drain) Draining() bool { return d.draining.Load() }

// errDraining is the readiness check's answer while draining.
var errDraining = errors.New("stopping: draining connections")

// ReadyzCheck fails while the process drains.
func (d *Drain) ReadyzCheck(*http.Request) error {
	if d.Draining() {
		return errDraining
	}
	return nil
}

// Handler serves h; while draining, every response closes its connection.
func (d *Drain) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.Draining() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

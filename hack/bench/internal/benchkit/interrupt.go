package benchkit

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The local control plane runs in process groups of its own (so that it
// outlives a test's or a command's Ctrl-C on purpose elsewhere), and Go's
// default reaction to SIGINT exits without running deferred calls: an
// interrupted benchmark used to leave etcd and kube-apiserver running.
// Benchmarks call StopOnInterrupt first and register what they start with
// OnInterrupt.

var interrupts struct {
	mu      sync.Mutex
	next    int
	cleanup map[int]func()
}

// StopOnInterrupt makes SIGINT and SIGTERM run every cleanup registered
// with OnInterrupt, newest first, and then exit with status 130.
func StopOnInterrupt() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "\n%s: stopping what the benchmark started ...\n", s)
		interrupts.mu.Lock()
		for id := interrupts.next; id > 0; id-- {
			if f, ok := interrupts.cleanup[id]; ok {
				f()
			}
		}
		os.Exit(130)
	}()
}

// OnInterrupt registers stop to run if the benchmark is interrupted before
// the returned function is called; call that after stopping normally.
func OnInterrupt(stop func()) (unregister func()) {
	interrupts.mu.Lock()
	defer interrupts.mu.Unlock()
	if interrupts.cleanup == nil {
		interrupts.cleanup = map[int]func(){}
	}
	interrupts.next++
	id := interrupts.next
	interrupts.cleanup[id] = stop
	return func() {
		interrupts.mu.Lock()
		defer interrupts.mu.Unlock()
		delete(interrupts.cleanup, id)
	}
}

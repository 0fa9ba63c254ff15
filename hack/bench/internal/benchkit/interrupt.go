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
// Benchmarks call StopOnInterrupt first and release what they start with
// Cleanup.

var cleanups struct {
	mu   sync.Mutex
	next int
	run  map[int]func()
}

// StopOnInterrupt makes SIGINT and SIGTERM run every cleanup registered
// with Cleanup and not run yet, newest first, and then exit with status
// 130.
func StopOnInterrupt() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "\n%s: stopping what the benchmark started ...\n", s)
		// Held until exit: a cleanup the benchmark runs meanwhile waits.
		cleanups.mu.Lock()
		for id := cleanups.next; id > 0; id-- {
			if f, ok := cleanups.run[id]; ok {
				f()
			}
		}
		os.Exit(130)
	}()
}

// Cleanup registers f to run on an interrupt and returns a function that
// runs it now instead (at most once); defer that:
//
//	defer benchkit.Cleanup(proc.Stop)()
func Cleanup(f func()) (run func()) {
	cleanups.mu.Lock()
	defer cleanups.mu.Unlock()
	if cleanups.run == nil {
		cleanups.run = map[int]func(){}
	}
	cleanups.next++
	id := cleanups.next
	cleanups.run[id] = f
	return func() {
		cleanups.mu.Lock()
		f, ok := cleanups.run[id]
		delete(cleanups.run, id)
		cleanups.mu.Unlock()
		if ok {
			f()
		}
	}
}

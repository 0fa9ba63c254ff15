// Supervision keeps a process's controller-runtime manager running
// through API server and etcd outages.
//
// controller-runtime stops a manager for good when it cannot renew its
// leader lease within the renew deadline, which any outage longer than
// that causes. A process that then exits is restarted by the kubelet and
// fails at start-up for as long as the API server is down: a crash loop
// through every outage. Lengthening the renew deadline would slow down
// failover instead. [Supervise] replaces such a manager with a new one, which
// campaigns for the lease again.

package managersetup

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Backoff between two managers.
const (
	BackoffMin = time.Second
	BackoffMax = 30 * time.Second
)

// BuildFunc creates and sets up a manager; run counts the managers built
// before it (from 0). A manager built after the first must skip
// controller name validation (ctrl.Options.Controller.SkipNameValidation),
// since the controllers of the earlier ones registered the same names.
// When set-up fails after the manager was created, return the manager with
// the error, so that Supervise can release the addresses it listens on.
type BuildFunc func(run int) (ctrl.Manager, error)

// Supervise builds and runs managers until ctx ends, and returns nil then.
//
// Before any manager of the process has been elected, an error from build
// or Start is returned, so that a configuration error still fails fast.
// After that, a manager that stops while ctx is alive is replaced: Supervise
// waits until the API server answers (build usually needs it), then builds
// and starts a new one, with a backoff from BackoffMin doubling to
// BackoffMax. Reconciles of the stopped manager that still run go on in
// the background; their context has been cancelled.
func Supervise(ctx context.Context, cfg *rest.Config, build BuildFunc, log logr.Logger) error {
	var everElected atomic.Bool
	backoff := BackoffMin
	for run := 0; ; run++ {
		err := runOnce(ctx, cfg, build, run, &everElected, log)
		if ctx.Err() != nil {
			if err != nil {
				log.Info("Manager stopped with an error during shutdown", "error", err.Error())
			}
			return nil
		}
		if !everElected.Load() {
			if err == nil {
				return nil
			}
			return err
		}
		log.Error(err, "Manager stopped while the process runs; starting a new one", "run", run+1, "retryIn", backoff.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, BackoffMax)
	}
}

func runOnce(ctx context.Context, cfg *rest.Config, build BuildFunc, run int, everElected *atomic.Bool, log logr.Logger) error {
	if run > 0 {
		if err := waitForAPIServer(ctx, cfg); err != nil {
			return err
		}
	}
	mgr, err := build(run)
	if err != nil {
		if mgr != nil {
			// The manager already listens on its probe and metrics
			// addresses; starting it with a context that has ended makes
			// it close them, so that the next one can bind.
			stopped, cancel := context.WithCancel(ctx)
			cancel()
			_ = mgr.Start(stopped)
		}
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-mgr.Elected():
			everElected.Store(true)
		case <-runCtx.Done():
		}
	}()
	log.Info("Starting manager", "run", run)
	if err := mgr.Start(runCtx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	log.Info("Manager stopped", "run", run)
	return nil
}

// waitForAPIServer waits until the API server answers a version request,
// or ctx ends.
func waitForAPIServer(ctx context.Context, cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create discovery client: %w", err)
	}
	for {
		if _, err := dc.ServerVersion(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

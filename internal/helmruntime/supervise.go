package helmruntime

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Rerun backoff of the manager after it stopped on its own.
const (
	rerunBackoffMin = time.Second
	rerunBackoffMax = 30 * time.Second
)

// runManagers builds, sets up and runs the manager until ctx ends.
//
// controller-runtime stops a manager for good when it loses its leader
// lease, which happens whenever the API server is unreachable for longer
// than the renew deadline (10 s); the process would exit, and a restarted
// process fails at start-up for as long as the API server is down (it
// looks up each kind's scope): a crash loop through every API server or
// etcd outage. So once a manager of this process has been elected, a
// manager that stops while ctx is alive is replaced by a new one (which
// campaigns for the lease again), with a backoff, and set-up errors of the
// new one are retried too. Before the first election, errors are returned,
// so that a configuration error still fails fast. Actions of the old
// manager that are still running are tracked process-wide (see
// releaseActivity), so recovery does not unlock their releases.
func runManagers(ctx context.Context, cfg *rest.Config, opts Options, ws []watches.Watch, log logr.Logger) error {
	var everElected atomic.Bool
	backoff := rerunBackoffMin
	for run := 0; ; run++ {
		err := runManagerOnce(ctx, cfg, opts, ws, run, &everElected, log)
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
		log.Error(err, "Manager stopped while the operator runs; starting a new one", "run", run+1, "retryIn", backoff.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, rerunBackoffMax)
	}
}

// runManagerOnce runs one manager; run counts the managers before it.
func runManagerOnce(ctx context.Context, cfg *rest.Config, opts Options, ws []watches.Watch, run int, everElected *atomic.Bool, log logr.Logger) error {
	mo := ManagerOptions(opts)
	if run > 0 {
		// The controllers of the previous manager registered these names.
		mo.Controller.SkipNameValidation = ptr.To(true)
		// Set-up needs the API server (it looks up each kind's scope).
		if err := waitForAPIServer(ctx, cfg); err != nil {
			return err
		}
	}
	mgr, err := newManager(cfg, mo)
	if err != nil {
		return err
	}
	if _, err := SetupReconcilers(mgr, ws, opts); err != nil {
		// The new manager already listens on the probe and metrics
		// addresses; starting it with a context that has ended makes it
		// close them, so that the next one can bind.
		stopped, cancel := context.WithCancel(ctx)
		cancel()
		_ = mgr.Start(stopped)
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

	log.Info("Starting manager",
		"watchesFile", opts.WatchesFile,
		"watches", len(ws),
		"watchNamespaces", describeNamespaces(opts.WatchNamespaces),
		"releaseNamespace", opts.ReleaseNamespace,
		"leaderElect", opts.LeaderElect,
		"metricsBindAddress", opts.MetricsBindAddress,
		"metricsSecure", opts.MetricsSecure,
		"healthProbeBindAddress", opts.HealthProbeBindAddress,
		"run", run,
	)
	if err := mgr.Start(runCtx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	log.Info("Manager stopped")
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

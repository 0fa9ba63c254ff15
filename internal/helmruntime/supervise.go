package helmruntime

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/acme/platform-operator/internal/supervisor"
)

// runManagers builds, sets up and runs the manager until ctx ends, and
// replaces it when it stops on its own after a lost lease (an API server
// or etcd outage) instead of exiting (see package supervisor). Actions of
// a stopped manager that still run are tracked process-wide (see
// releaseActivity), so recovery does not unlock their releases.
func runManagers(ctx context.Context, cfg *rest.Config, opts Options, ws []watches.Watch, log logr.Logger) error {
	build := func(run int) (ctrl.Manager, error) {
		mo := ManagerOptions(opts, ws)
		if run > 0 {
			mo.Controller.SkipNameValidation = ptr.To(true)
		}
		mgr, err := newManager(cfg, mo)
		if err != nil {
			return nil, err
		}
		if _, err := SetupReconcilers(mgr, ws, opts); err != nil {
			return mgr, err
		}
		log.Info("Manager set up",
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
		return mgr, nil
	}
	return supervisor.Run(ctx, cfg, build, log)
}

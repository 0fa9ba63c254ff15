package helmruntime

import (
	"fmt"

	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/acme/platform-operator/internal/metricsserving"
)

// NewScheme returns the scheme of the manager: the client-go built-in types
// plus apiextensions/v1. Custom resource kinds stay unstructured; the
// reconcilers register them when they are set up.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// ManagerOptions translates the runtime options into controller-runtime
// manager options: leader election, metrics server, health probes and the
// namespaces of the cache. opts should be completed (see Options.Complete);
// ws are the watches the manager's reconcilers will serve (their custom
// resources are cached whole, see cacheOptions).
func ManagerOptions(opts Options, ws []watches.Watch) ctrl.Options {
	metricsOpts := metricsserving.Options(opts.MetricsBindAddress, opts.MetricsSecure, opts.EnableHTTP2)

	o := ctrl.Options{
		Scheme:                        NewScheme(),
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		PprofBindAddress:              opts.PprofBindAddress,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true, // the process exits right after the manager stops
		// Below the Pod's termination grace period; see shutdown.go.
		GracefulShutdownTimeout: ptr.To(DefaultGracefulShutdownTimeout),
		Cache:                   cacheOptions(opts.WatchNamespaces, watchedKinds(ws)),
	}
	opts.LeaderElectionTiming.Apply(&o)
	return o
}

// CacheNamespaces turns the watched namespaces into the cache's
// DefaultNamespaces; nil (all namespaces) for an empty list.
func CacheNamespaces(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// NewManager creates the controller-runtime manager with health and
// readiness checks, but without any reconciler (see SetupReconcilers).
func NewManager(cfg *rest.Config, opts Options, ws []watches.Watch) (ctrl.Manager, error) {
	return newManager(cfg, ManagerOptions(opts, ws))
}

// watchedKinds are the custom resource kinds of ws.
func watchedKinds(ws []watches.Watch) []schema.GroupVersionKind {
	kinds := make([]schema.GroupVersionKind, 0, len(ws))
	for _, w := range ws {
		kinds = append(kinds, w.GroupVersionKind)
	}
	return kinds
}

// newManager is NewManager with the manager options given.
func newManager(cfg *rest.Config, mo ctrl.Options) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add readiness check: %w", err)
	}
	return mgr, nil
}

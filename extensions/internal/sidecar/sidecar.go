// Package sidecar builds the extensions process: a controller-runtime
// manager, leader-elected on its own Lease, with its own metrics and health
// endpoints, to which the extension controllers (scheduled scaling,
// finalizers) are added. It does what Helm templates cannot; it never
// writes the status of the Helm-managed kinds.
package sidecar

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/acme/platform-operator/internal/leaderelection"
	"github.com/acme/platform-operator/internal/metricsserving"
)

// Options are the process-level settings of the sidecar.
type Options struct {
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaderElectionTiming    leaderelection.Timing
	MetricsBindAddress      string
	MetricsSecure           bool
	EnableHTTP2             bool
	HealthProbeBindAddress  string
	// PprofBindAddress is the address of Go's /debug/pprof endpoints; "0"
	// (the default) disables them.
	PprofBindAddress string
	// SkipControllerNameValidation is set (not by a flag) on managers
	// built after the first one in the same process (see package
	// supervisor), whose controllers registered the same names.
	SkipControllerNameValidation bool
}

// DefaultOptions returns the options used when no flag is given. The ports
// differ from the manager's, since both containers share the Pod's network.
func DefaultOptions() Options {
	return Options{
		LeaderElectionID:       "platform-operator-extensions.acme.com",
		LeaderElectionTiming:   leaderelection.DefaultTiming(),
		MetricsBindAddress:     ":8444",
		MetricsSecure:          true,
		HealthProbeBindAddress: ":8082",
		PprofBindAddress:       "0",
	}
}

// BindFlags registers the options as flags; call it on DefaultOptions.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Enable leader election, so that only one replica of the sidecar is active.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID,
		"Name of the Lease used for leader election.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace,
		"Namespace of the leader election Lease (default: the namespace the sidecar runs in).")
	o.LeaderElectionTiming.BindFlags(fs)
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		"Address the metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"Serve metrics over HTTPS with Kubernetes authentication and authorization; false serves plain HTTP.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2,
		"Allow HTTP/2 on the metrics server.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		"Address the /healthz and /readyz endpoints bind to; \"0\" disables them.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress,
		"Address Go's /debug/pprof endpoints bind to (unauthenticated: keep it on loopback); \"0\" disables them.")
}

// NewManager creates the sidecar's manager with health and readiness
// checks and no controllers.
func NewManager(cfg *rest.Config, scheme *runtime.Scheme, o Options) (ctrl.Manager, error) {
	if err := o.LeaderElectionTiming.Validate(); err != nil {
		return nil, fmt.Errorf("invalid options: %w", err)
	}
	mgrOpts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserving.Options(o.MetricsBindAddress, o.MetricsSecure, o.EnableHTTP2),
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		PprofBindAddress:              o.PprofBindAddress,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		// Below the Pod's 30 s termination grace period, so the lease is
		// released and the process exits before the kubelet kills it.
		GracefulShutdownTimeout: ptr.To(20 * time.Second),
		Controller:              config.Controller{SkipNameValidation: ptr.To(o.SkipControllerNameValidation)},
	}
	o.LeaderElectionTiming.Apply(&mgrOpts)
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
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

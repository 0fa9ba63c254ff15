// Package managersetup builds the controller-runtime managers of the
// operator's two processes, the Helm runtime (cmd/manager) and the
// extensions sidecar (extensions/): the settings they share (leader
// election, metrics, health probes, pprof), their flags and defaults, and
// the manager itself with its health and readiness checks. Each process
// adds what is its own: the runtime its cache and watches, the sidecar its
// controllers.
//
// It also keeps a manager running through API server outages ([Supervise],
// supervisor.go) and splits the custom resources between shards
// ([ParseShard], shard.go).
package managersetup

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// GracefulShutdownTimeout bounds how long a stopping manager waits for its
// runnables. It is below the Pod's default 30 s termination grace period,
// so that the lease is released and the process exits before the kubelet
// kills it.
const GracefulShutdownTimeout = 20 * time.Second

// Options are the settings every manager of the operator has.
type Options struct {
	// LeaderElect enables leader election, so that only one replica is
	// active.
	LeaderElect bool
	// LeaderElectionID is the name of the leader election Lease.
	LeaderElectionID string
	// LeaderElectionNamespace is the namespace of the Lease; empty means
	// the namespace the process runs in.
	LeaderElectionNamespace string
	// LeaderElectionTiming sets the Lease duration, renew deadline and
	// retry period, and with them how fast a standby takes over.
	LeaderElectionTiming LeaderElectionTiming

	// MetricsBindAddress is the address of the metrics endpoint; "0"
	// disables it.
	MetricsBindAddress string
	// MetricsSecure serves metrics over HTTPS, guarded by Kubernetes
	// authentication and authorization (TokenReview/SubjectAccessReview).
	// When false, metrics are served over plain HTTP without any check.
	MetricsSecure bool
	// EnableHTTP2 allows HTTP/2 on the metrics server. It is off by
	// default to avoid the HTTP/2 stream cancellation and rapid reset
	// vulnerabilities.
	EnableHTTP2 bool
	// HealthProbeBindAddress is the address of /healthz and /readyz; "0"
	// disables it.
	HealthProbeBindAddress string
	// PprofBindAddress is the address of Go's /debug/pprof endpoints; "0"
	// (the default) disables them.
	PprofBindAddress string
	// ShardSelector is a label selector on the custom resources: the
	// process owns the resources it matches and no others (see package
	// shard). Empty means all of them.
	ShardSelector string
}

// Defaults returns the options of a process whose Lease is leaseID and
// whose metrics and probes listen on metricsAddr and probeAddr (the two
// processes share a Pod's network, so their ports differ).
func Defaults(leaseID, metricsAddr, probeAddr string) Options {
	return Options{
		LeaderElectionID:       leaseID,
		LeaderElectionTiming:   DefaultLeaderElectionTiming(),
		MetricsBindAddress:     metricsAddr,
		MetricsSecure:          true,
		HealthProbeBindAddress: probeAddr,
		PprofBindAddress:       "0",
	}
}

// BindFlags registers the options as flags on fs; the current values are
// the defaults. process names the process in the help texts ("operator",
// "sidecar").
func (o *Options) BindFlags(fs *pflag.FlagSet, process string) {
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Enable leader election, so that only one replica of the "+process+" is active.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID,
		"Name of the Lease used for leader election.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace,
		"Namespace of the leader election Lease (default: the namespace the "+process+" runs in).")
	o.LeaderElectionTiming.BindFlags(fs)
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		"Address the metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"Serve metrics over HTTPS with Kubernetes authentication and authorization; false serves plain HTTP.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2,
		"Allow HTTP/2 on the metrics server.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		"Address the /healthz and /readyz endpoints bind to; \"0\" disables them.")
	fs.StringVar(&o.ShardSelector, "shard-selector", o.ShardSelector,
		"Label selector on the custom resources: this "+process+" owns the resources it matches and no others, "+
			"so that several Deployments can split them (e.g. \""+ShardLabel+"=b\"). Each shard's leader election Lease "+
			"is the --leader-election-id with a digest of the selector. Empty: all resources.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress,
		"Address Go's /debug/pprof endpoints bind to (unauthenticated: keep it on loopback); \"0\" disables them.")
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if o.LeaderElect && o.LeaderElectionID == "" {
		errs = append(errs, errors.New("leader election ID must not be empty when leader election is enabled"))
	}
	if err := o.LeaderElectionTiming.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseShard(o.ShardSelector); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Shard is the parsed ShardSelector; call it on validated options.
func (o *Options) Shard() labels.Selector {
	sel, err := ParseShard(o.ShardSelector)
	if err != nil {
		return labels.Nothing() // Validate reports it; own nothing meanwhile
	}
	return sel
}

// ManagerOptions returns the controller-runtime options these settings
// make, with scheme. A shard's Lease is its own (shard.LeaseID).
func (o *Options) ManagerOptions(scheme *runtime.Scheme) ctrl.Options {
	mo := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOptions(o.MetricsBindAddress, o.MetricsSecure, o.EnableHTTP2),
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		PprofBindAddress:              o.PprofBindAddress,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              ShardLeaseID(o.LeaderElectionID, o.Shard()),
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true, // the process exits right after the manager stops
		GracefulShutdownTimeout:       ptr.To(GracefulShutdownTimeout),
	}
	o.LeaderElectionTiming.Apply(&mo)
	return mo
}

// New creates a manager with mo and the health and readiness checks.
func New(cfg *rest.Config, mo ctrl.Options) (ctrl.Manager, error) {
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

// ParseFlags parses the command line: the flags registered on
// pflag.CommandLine so far, Go's flag.CommandLine (controller-runtime's
// --kubeconfig) and the logging flags (--zap-devel, --zap-log-level, ...).
// It sets controller-runtime's logger, JSON unless --zap-devel is given
// and quiet about write conflicts (QuietConflicts),
// and returns the logger of the process's setup.
func ParseFlags() logr.Logger {
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	ctrl.SetLogger(QuietConflicts(zap.New(zap.UseFlagOptions(&zapOpts))))
	return ctrl.Log.WithName("setup")
}

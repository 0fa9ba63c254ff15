package helmruntime

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/acme/platform-operator/internal/operator/managersetup"
	"github.com/acme/platform-operator/internal/operator/releaseidentity"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

const (
	// DefaultWatchesFile is the default path of the watches file, relative to
	// the working directory.
	DefaultWatchesFile = "./watches.yaml"
	// DefaultLeaderElectionID is the default name of the leader election lease.
	DefaultLeaderElectionID = "platform-operator-helm.acme.com"
	// DefaultMetricsBindAddress is the default address of the metrics endpoint.
	DefaultMetricsBindAddress = ":8443"
	// DefaultHealthProbeBindAddress is the default address of the /healthz and
	// /readyz endpoints.
	DefaultHealthProbeBindAddress = ":8081"
)

// Options configures the runtime. Build it with [DefaultOptions], optionally
// bind it to command-line flags with [Options.BindFlags], then call
// [Options.Complete] to fill the values that come from the environment.
type Options struct {
	// WatchesFile is the path of the watches file mapping kinds to charts.
	WatchesFile string

	// Options are the settings every manager of the operator has:
	// leader election, metrics, health probes, pprof.
	managersetup.Options

	// ReconcilePeriod is the resync period used for watches that set no
	// reconcilePeriod of their own.
	ReconcilePeriod time.Duration
	// MaxConcurrentReconciles is the number of parallel reconciles per kind
	// used for watches that set no maxConcurrentReconciles of their own.
	MaxConcurrentReconciles int
	// MaxReleaseHistory is the number of Helm release revisions kept per
	// release; 0 keeps all of them.
	MaxReleaseHistory int

	// ReleaseNamespace is where the Helm releases of cluster-scoped kinds are
	// stored (and the namespace Helm installs them "into"). Releases of
	// namespaced kinds always live in the custom resource's namespace.
	// Empty means: resolve it in Complete (see watchconfig.ResolveReleaseNamespace).
	ReleaseNamespace string

	// ReleaseIdentity names the ServiceAccount the runtime creates and
	// applies the releases of namespaced kinds as, when neither their
	// namespace nor their kind names one (package releaseidentity).
	ReleaseIdentity releaseidentity.Options

	// WatchNamespaces restricts the namespaces whose objects are cached and
	// reconciled; empty means all namespaces. Complete fills it from
	// WATCH_NAMESPACE when it is nil.
	WatchNamespaces []string

	// SuppressOverrideValues masks the values of the watches' override
	// values in the Events that report them.
	SuppressOverrideValues bool

	// Log is the logger of the runtime and its reconcilers. The zero value
	// means controller-runtime's global logger (ctrl.Log).
	Log logr.Logger
}

// DefaultOptions returns the options used when no flag is given.
func DefaultOptions() Options {
	return Options{
		WatchesFile:             DefaultWatchesFile,
		Options:                 managersetup.Defaults(DefaultLeaderElectionID, DefaultMetricsBindAddress, DefaultHealthProbeBindAddress),
		ReconcilePeriod:         watchconfig.DefaultReconcilePeriod,
		MaxConcurrentReconciles: watchconfig.DefaultMaxConcurrentReconciles(),
		MaxReleaseHistory:       watchconfig.DefaultMaxReleaseHistory,
		ReleaseIdentity:         releaseidentity.DefaultOptions(),
	}
}

// BindFlags registers the runtime's command-line flags on fs. The current
// field values of o are the flag defaults, so call it on [DefaultOptions].
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.WatchesFile, "watches-file", o.WatchesFile,
		"Path to the watches file that maps custom resource kinds to Helm charts.")
	o.Options.BindFlags(fs, "operator")
	fs.DurationVar(&o.ReconcilePeriod, "reconcile-period", o.ReconcilePeriod,
		"Resync period of releases whose watch sets no reconcilePeriod.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles,
		"Parallel reconciles per kind for watches that set no maxConcurrentReconciles; defaults to four per CPU.")
	fs.IntVar(&o.MaxReleaseHistory, "max-release-history", o.MaxReleaseHistory,
		"Helm release revisions kept per release; 0 keeps all.")
	fs.StringVar(&o.ReleaseNamespace, "release-namespace", o.ReleaseNamespace,
		"Namespace that stores the Helm releases of cluster-scoped kinds "+
			"(default: $"+watchconfig.PodNamespaceEnvVar+", else the in-cluster service-account namespace, else \""+watchconfig.FallbackReleaseNamespace+"\").")
	o.ReleaseIdentity.BindFlags(fs)
}

// Complete fills the options that come from the environment: the release
// namespace (when empty) and the watched namespaces (when nil, from
// WATCH_NAMESPACE). It then validates the result.
func (o *Options) Complete(env watchconfig.Env) error {
	if o.ReleaseNamespace == "" {
		o.ReleaseNamespace = watchconfig.ResolveReleaseNamespace(env)
	}
	if o.WatchNamespaces == nil && env.Getenv != nil {
		o.WatchNamespaces = watchconfig.ParseWatchNamespaces(env.Getenv(watchconfig.WatchNamespaceEnvVar))
	}
	return o.Validate()
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if o.WatchesFile == "" {
		errs = append(errs, errors.New("watches file must not be empty"))
	}
	if err := o.Options.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, watchconfig.CheckSettings(o.WatchDefaults(), watchconfig.SettingNames{
		ReconcilePeriod:         "reconcile period",
		MaxConcurrentReconciles: "max concurrent reconciles",
		MaxReleaseHistory:       "max release history",
	})...)
	if o.ReleaseNamespace == "" {
		errs = append(errs, errors.New("release namespace must not be empty"))
	}
	if err := o.ReleaseIdentity.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid options: %w", err)
	}
	return nil
}

// logger returns the configured logger, or controller-runtime's global one.
func (o *Options) logger() logr.Logger {
	if o.Log.GetSink() != nil {
		return o.Log
	}
	return ctrl.Log.WithName("helmruntime")
}

// WatchDefaults returns the per-watch fallbacks carried by the options.
func (o *Options) WatchDefaults() watchconfig.WatchDefaults {
	return watchconfig.WatchDefaults{
		ReconcilePeriod:         o.ReconcilePeriod,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		MaxReleaseHistory:       o.MaxReleaseHistory,
	}
}

package helmruntime

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/acme/platform-operator/internal/managersetup"
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
	// DefaultReconcilePeriod is the default resync period of a release whose
	// watch sets no reconcilePeriod. The resync is a safety net (spec edits
	// and drift of rendered objects are watched), jittered per resource
	// (see ResyncJitter), so it can be long.
	DefaultReconcilePeriod = time.Hour
	// DefaultMaxReleaseHistory is the default number of Helm release revisions
	// kept per release.
	DefaultMaxReleaseHistory = 10
	// FallbackReleaseNamespace is the release namespace used when neither the
	// flag, POD_NAMESPACE nor the service-account namespace file provide one.
	FallbackReleaseNamespace = "default"

	// WatchNamespaceEnvVar names the environment variable that restricts the
	// namespaces the operator watches: empty means all namespaces, otherwise a
	// comma-separated list.
	WatchNamespaceEnvVar = "WATCH_NAMESPACE"
	// PodNamespaceEnvVar names the environment variable (usually set through
	// the downward API) holding the namespace the operator runs in.
	PodNamespaceEnvVar = "POD_NAMESPACE"
	// ServiceAccountNamespaceFile is the file a pod reads its own namespace from.
	ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
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
	// Empty means: resolve it in Complete (see ResolveReleaseNamespace).
	ReleaseNamespace string

	// WatchNamespaces restricts the namespaces whose objects are cached and
	// reconciled; empty means all namespaces. Complete fills it from
	// WATCH_NAMESPACE when it is nil.
	WatchNamespaces []string

	// Log is the logger of the runtime and its reconcilers. The zero value
	// means controller-runtime's global logger (ctrl.Log).
	Log logr.Logger
}

// DefaultMaxConcurrentReconciles is the default parallelism per kind: four
// reconciles per CPU. A Helm reconcile spends most of its time waiting for
// the API server (existence checks, creates, release records, status), so
// one per CPU left both idle: on 2 CPUs, 300 Nginx resources were all
// Deployed after 23.0 s with 2 workers, 20.0 s with 4 and 17.9 s with 8
// (docs/benchmarks.md).
func DefaultMaxConcurrentReconciles() int {
	return 4 * runtime.NumCPU()
}

// DefaultOptions returns the options used when no flag is given.
func DefaultOptions() Options {
	return Options{
		WatchesFile:             DefaultWatchesFile,
		Options:                 managersetup.Defaults(DefaultLeaderElectionID, DefaultMetricsBindAddress, DefaultHealthProbeBindAddress),
		ReconcilePeriod:         DefaultReconcilePeriod,
		MaxConcurrentReconciles: DefaultMaxConcurrentReconciles(),
		MaxReleaseHistory:       DefaultMaxReleaseHistory,
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
			"(default: $"+PodNamespaceEnvVar+", else the in-cluster service-account namespace, else \""+FallbackReleaseNamespace+"\").")
}

// Env abstracts the process environment so that option completion can be
// tested. [OSEnv] returns the real one.
type Env struct {
	// Getenv returns the value of an environment variable, "" when unset.
	Getenv func(key string) string
	// ReadFile returns the contents of a file.
	ReadFile func(path string) ([]byte, error)
}

// OSEnv returns the environment of the running process.
func OSEnv() Env {
	return Env{Getenv: os.Getenv, ReadFile: os.ReadFile}
}

// Complete fills the options that come from the environment: the release
// namespace (when empty) and the watched namespaces (when nil, from
// WATCH_NAMESPACE). It then validates the result.
func (o *Options) Complete(env Env) error {
	if o.ReleaseNamespace == "" {
		o.ReleaseNamespace = ResolveReleaseNamespace(env)
	}
	if o.WatchNamespaces == nil && env.Getenv != nil {
		o.WatchNamespaces = ParseWatchNamespaces(env.Getenv(WatchNamespaceEnvVar))
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
	if o.ReconcilePeriod < 0 {
		errs = append(errs, fmt.Errorf("reconcile period must not be negative, got %s", o.ReconcilePeriod))
	}
	if o.MaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("max concurrent reconciles must be at least 1, got %d", o.MaxConcurrentReconciles))
	}
	if o.MaxReleaseHistory < 0 {
		errs = append(errs, fmt.Errorf("max release history must not be negative, got %d", o.MaxReleaseHistory))
	}
	if o.ReleaseNamespace == "" {
		errs = append(errs, errors.New("release namespace must not be empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid options: %w", err)
	}
	return nil
}

// ResolveReleaseNamespace returns the namespace that stores the releases of
// cluster-scoped kinds when --release-namespace is not given: $POD_NAMESPACE,
// else the in-cluster service-account namespace file, else "default".
func ResolveReleaseNamespace(env Env) string {
	if env.Getenv != nil {
		if ns := strings.TrimSpace(env.Getenv(PodNamespaceEnvVar)); ns != "" {
			return ns
		}
	}
	if env.ReadFile != nil {
		if b, err := env.ReadFile(ServiceAccountNamespaceFile); err == nil {
			if ns := strings.TrimSpace(string(b)); ns != "" {
				return ns
			}
		}
	}
	return FallbackReleaseNamespace
}

// ParseWatchNamespaces parses the value of WATCH_NAMESPACE: a comma-separated
// list of namespaces. Blank items and duplicates are dropped; an empty result
// (nil) means all namespaces.
func ParseWatchNamespaces(value string) []string {
	var out []string
	seen := map[string]bool{}
	for _, item := range strings.Split(value, ",") {
		ns := strings.TrimSpace(item)
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		out = append(out, ns)
	}
	return out
}

// logger returns the configured logger, or controller-runtime's global one.
func (o *Options) logger() logr.Logger {
	if o.Log.GetSink() != nil {
		return o.Log
	}
	return ctrl.Log.WithName("helmruntime")
}

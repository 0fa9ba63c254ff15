package uninstall

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Name is the subcommand of the sidecar binary that runs Command.
const Name = "uninstall"

// Exit codes of Command.
const (
	// ExitLeft: resources are left (refused, or still there at the
	// timeout), or the API server could not be asked.
	ExitLeft = 1
	// ExitUsage: the flags are wrong.
	ExitUsage = 2
)

// Options are the command's flags.
type Options struct {
	DeleteResources bool
	Timeout         time.Duration
	Selector        string
	KindsFile       string
	WatchesFile     string
}

// DefaultOptions are the flags' defaults: the kinds and watches files
// where the repository and the image (working directory
// /opt/platform-operator) have them.
func DefaultOptions() Options {
	return Options{Timeout: 5 * time.Minute, KindsFile: "config/crd/kinds.yaml", WatchesFile: "watches.yaml"}
}

// BindFlags registers the command's flags on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.DeleteResources, "delete-resources", o.DeleteResources,
		"Delete every custom resource of the operator's kinds and wait until they are gone (their finalizers need the operator running). "+
			"Without it, the command refuses while any exists.")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait for deleted resources to be gone.")
	fs.StringVarP(&o.Selector, "selector", "l", o.Selector,
		"Only the resources with these labels (key=value,...); the CRDs' conversion is then left as it is.")
	fs.StringVar(&o.KindsFile, "kinds-file", o.KindsFile, "Kinds file (config/crd/kinds.yaml): the chart-backed kinds.")
	fs.StringVar(&o.WatchesFile, "watches-file", o.WatchesFile, "Watches file of the manager: its kinds.")
}

// Validate reports flag values that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s is not positive", o.Timeout))
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		errs = append(errs, fmt.Errorf("--selector: %w", err))
	}
	return errors.Join(errs...)
}

// Command runs `<program> uninstall args...` against the cluster of the
// kubeconfig (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config) and
// returns the exit code: 0 once nothing of the operator's kinds is left.
func Command(ctx context.Context, program string, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet(program+" "+Name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s %s [--delete-resources] [--timeout=5m] [--selector=...] [--kubeconfig=...]\n\n", program, Name)
		fmt.Fprintln(stderr, "Checks that no custom resource of the operator's kinds is left before the operator is removed, or with\n"+
			"--delete-resources deletes them while it still runs and waits until they are gone. Exits 0 when none is left\n"+
			"(after setting the conversion of the operator's CRDs that have a webhook to None when no object of theirs\n"+
			"is stored), 1 when some are left or the cluster cannot be asked, 2 on wrong flags.")
		fs.PrintDefaults()
	}
	opts := DefaultOptions()
	opts.BindFlags(fs)
	// controller-runtime's --kubeconfig, read by ctrl.GetConfig.
	fs.AddGoFlag(flag.CommandLine.Lookup("kubeconfig"))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%v (see %s %s --help)\n", err, program, Name)
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s %s takes no arguments, got %q\n", program, Name, fs.Args())
		return ExitUsage
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	kinds, err := LoadKinds(opts.KindsFile, opts.WatchesFile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	// The messages are the output; the libraries' logs are not wanted.
	ctrl.SetLogger(logr.Discard())
	u, err := newUninstaller(opts, kinds, stdout)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitLeft
	}
	u.DeleteCommand = deleteCommand(program, args)
	if err := u.Run(ctx); err != nil {
		if !errors.Is(err, ErrResourcesExist) && !errors.Is(err, ErrResourcesRemain) {
			fmt.Fprintln(stderr, "Error:", err)
		}
		return ExitLeft
	}
	return 0
}

// newUninstaller connects to the cluster of the kubeconfig.
func newUninstaller(opts Options, kinds []schema.GroupKind, out io.Writer) (*Uninstaller, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	crds, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connect to the API server: %w", err)
	}
	objects, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the API server: %w", err)
	}
	return &Uninstaller{
		CRDs: crds, Objects: objects, Out: out, Clock: clock.RealClock{}, Kinds: kinds,
		Delete: opts.DeleteResources, Timeout: opts.Timeout, Interval: time.Second, Selector: opts.Selector,
	}, nil
}

// deleteCommand is this command line with --delete-resources.
func deleteCommand(program string, args []string) string {
	return ShellCommand(append(append([]string{program, Name}, args...), "--delete-resources")...)
}

package helmruntime

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// operator-sdk's helm-operator (v1.42) takes flags and environment
// variables this operator names otherwise or does not need. They are
// accepted, so that its Deployment's arguments work unchanged after a
// migration (docs/migrating.md), and each one used is reported:
//
//   - --metrics-addr and --enable-leader-election: the deprecated names of
//     --metrics-bind-address and --leader-elect (pflag prints the
//     deprecation on use); giving both names is an error, as there;
//   - --suppress-override-values: the values of watches.yaml's
//     overrideValues are masked in the Events that report them;
//   - --metrics-require-rbac: this operator's --metrics-secure serves
//     HTTPS and requires authentication and authorization together, so
//     it asks for --metrics-secure;
//   - --config (a controller-runtime ComponentConfig file, deprecated
//     there): refused, with the flags to use instead, since ignoring the
//     settings in the file would change what runs;
//   - OPERATOR_NAME (deprecated there): the leader election ID when
//     --leader-election-id is not given.
//
// What else a migration needs is below: operator-sdk's finalizer is
// replaced by the library's, and a release it installed is adopted without
// an upgrade (actionpath/digest.go).

// OperatorNameEnvVar is operator-sdk's deprecated name of the leader
// election ID.
const OperatorNameEnvVar = "OPERATOR_NAME"

// SDKFlags holds operator-sdk's flags between parsing and [SDKFlags.Apply].
type SDKFlags struct {
	o           *Options
	config      string
	requireRBAC bool
}

// BindOperatorSDKFlags registers operator-sdk's helm-operator flags on fs,
// writing into o (call it after [Options.BindFlags]).
func (o *Options) BindOperatorSDKFlags(fs *pflag.FlagSet) *SDKFlags {
	f := &SDKFlags{o: o}
	fs.StringVar(&o.MetricsBindAddress, "metrics-addr", o.MetricsBindAddress, "Deprecated name of --metrics-bind-address.")
	_ = fs.MarkDeprecated("metrics-addr", "use --metrics-bind-address instead")
	fs.BoolVar(&o.LeaderElect, "enable-leader-election", o.LeaderElect, "Deprecated name of --leader-elect.")
	_ = fs.MarkDeprecated("enable-leader-election", "use --leader-elect instead")
	fs.BoolVar(&o.SuppressOverrideValues, "suppress-override-values", o.SuppressOverrideValues,
		"Mask the values of watches.yaml's overrideValues in the Events that report them (operator-sdk's flag).")
	fs.BoolVar(&f.requireRBAC, "metrics-require-rbac", false,
		"operator-sdk's flag: require authentication and authorization on /metrics; here that is what --metrics-secure does.")
	fs.StringVar(&f.config, "config", "", "operator-sdk's deprecated ComponentConfig file: not supported, use flags.")
	_ = fs.MarkHidden("config")
	return f
}

// Apply checks the operator-sdk flags given on fs and applies
// OPERATOR_NAME (read with lookupEnv), reporting each on log.
func (f *SDKFlags) Apply(fs *pflag.FlagSet, lookupEnv func(string) (string, bool), log logr.Logger) error {
	var errs []error
	if fs.Changed("metrics-addr") && fs.Changed("metrics-bind-address") {
		errs = append(errs, errors.New("only one of --metrics-addr and --metrics-bind-address may be set"))
	}
	if fs.Changed("enable-leader-election") && fs.Changed("leader-elect") {
		errs = append(errs, errors.New("only one of --leader-elect and --enable-leader-election may be set"))
	}
	if fs.Changed("config") {
		errs = append(errs, fmt.Errorf("--config %q: ComponentConfig files are not supported; set the same options as flags (docs/migrating.md lists them)", f.config))
	}
	if fs.Changed("metrics-require-rbac") {
		switch {
		case f.requireRBAC && !f.o.MetricsSecure:
			errs = append(errs, errors.New("--metrics-require-rbac needs --metrics-secure, which serves HTTPS with authentication and authorization"))
		case !f.requireRBAC && f.o.MetricsSecure:
			log.Info("--metrics-require-rbac=false has no effect: --metrics-secure always requires authentication and authorization; use --metrics-secure=false for plain HTTP")
		}
	}
	if name, ok := lookupEnv(OperatorNameEnvVar); ok && name != "" {
		if fs.Changed("leader-election-id") {
			log.Info("Ignoring the deprecated "+OperatorNameEnvVar+" environment variable: --leader-election-id is set", OperatorNameEnvVar, name)
		} else {
			log.Info("The "+OperatorNameEnvVar+" environment variable is deprecated; use --leader-election-id. Using it as the leader election ID", "leaderElectionID", name)
			f.o.LeaderElectionID = name
		}
	}
	return errors.Join(errs...)
}

// maskedOverrides is an event recorder that masks the values in the
// library's Events about watches.yaml's overrideValues
// (--suppress-override-values).
type maskedOverrides struct {
	record.EventRecorder
}

// reasonValueOverridden is the library's reason of the Event it records,
// per override value, on every install and upgrade.
const reasonValueOverridden = "ValueOverridden"

func (r maskedOverrides) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	if reason == reasonValueOverridden && len(args) == 2 {
		args = []interface{}{args[0], "****"}
	}
	r.EventRecorder.Eventf(obj, eventtype, reason, messageFmt, args...)
}

// Finalizers: operator-sdk's Helm operator guards the uninstall of a
// release with sdkUninstallFinalizer, the library with
// libraryUninstallFinalizer. A resource this operator takes over carries
// the first, which nothing would ever remove: its deletion would hang.
const (
	sdkUninstallFinalizer     = "helm.sdk.operatorframework.io/uninstall-release"
	libraryUninstallFinalizer = "uninstall-helm-release"
)

// takingOverFinalizers is the reconciler's client; when the library adds
// its finalizer to a resource that carries operator-sdk's, the same
// update drops operator-sdk's, whose work the library's now does.
type takingOverFinalizers struct {
	client.Client
}

func (c takingOverFinalizers) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if controllerutil.ContainsFinalizer(obj, libraryUninstallFinalizer) {
		controllerutil.RemoveFinalizer(obj, sdkUninstallFinalizer)
	}
	return c.Client.Update(ctx, obj, opts...)
}

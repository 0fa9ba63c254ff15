// Command extensions is the operator's Go sidecar: controllers for what Helm
// templates cannot express. It runs next to the manager (Helm runtime) in
// the same Pod, leader-elected on its own Lease. `extensions uninstall`
// prepares the operator's removal instead (extensions/internal/uninstall).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/extensions/internal/admission"
	"github.com/acme/platform-operator/extensions/internal/cronscaler"
	"github.com/acme/platform-operator/extensions/internal/rotation"
	"github.com/acme/platform-operator/extensions/internal/tenant"
	"github.com/acme/platform-operator/extensions/internal/uninstall"
	"github.com/acme/platform-operator/internal/operator/managersetup"
	"github.com/acme/platform-operator/internal/operator/releaseidentity"
)

// notHelmRecords selects every Secret but Helm's release records (label
// owner=helm).
var notHelmRecords = func() labels.Selector {
	req, err := labels.NewRequirement("owner", selection.NotEquals, []string{"helm"})
	utilruntime.Must(err)
	return labels.NewSelector().Add(*req)
}()

func main() {
	// `extensions uninstall ...` checks (or deletes) what is left before
	// the operator is removed; it has flags of its own.
	if len(os.Args) > 1 && os.Args[1] == uninstall.Name {
		os.Exit(uninstall.Command(ctrl.SetupSignalHandler(), os.Args[0], os.Args[2:], os.Stdout, os.Stderr))
	}
	// The ports differ from the manager's: both containers share the Pod's
	// network.
	opts := managersetup.Defaults("platform-operator-extensions.acme.com", ":8444", ":8082")
	opts.BindFlags(pflag.CommandLine, "sidecar")
	// Flags of the extension controllers are registered here.
	tenantOpts := tenant.DefaultOptions()
	tenantOpts.BindFlags(pflag.CommandLine)
	cronOpts := cronscaler.DefaultOptions()
	cronOpts.BindFlags(pflag.CommandLine)
	admissionOpts := admission.DefaultOptions()
	admissionOpts.BindFlags(pflag.CommandLine)
	// The identity the sidecar scales and annotates a release's workloads
	// as, the manager's for its releases (config/manager passes both the
	// same flags).
	identityOpts := releaseidentity.DefaultOptions()
	identityOpts.BindFlags(pflag.CommandLine)
	shutdownDelay := pflag.Duration("shutdown-delay", 0,
		"On SIGTERM, keep serving the webhook this long, not ready and closing each connection after its response, before stopping: "+
			"the API server moves to another replica meanwhile (config/manager sets 5s). 0 stops at once.")

	log := managersetup.ParseFlags()
	managersetup.SetMemoryLimitFromEnv(log)
	if *shutdownDelay < 0 {
		log.Error(errors.New("--shutdown-delay is negative"), "Invalid options")
		os.Exit(2)
	}
	if err := errors.Join(opts.Validate(), admissionOpts.Validate(), identityOpts.Validate()); err != nil {
		log.Error(err, "Invalid options")
		os.Exit(2)
	}
	// The controllers leave the resources of other shards alone; the
	// admission webhook judges every resource, whichever shard owns it.
	tenantOpts.Shard = opts.Shard()
	cronOpts.Shard = opts.Shard()

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	// API types of the extension controllers are added to the scheme here.
	utilruntime.Must(autoscalingv1alpha1.AddToScheme(scheme))

	drain := managersetup.NewDrain(*shutdownDelay)
	admissionOpts.Draining = drain

	cfg := ctrl.GetConfigOrDie()
	// The namespaces where the managed identity exists outlive each
	// manager.
	managed := identityOpts.Managed()
	// build creates and sets up one manager; the supervisor builds a new
	// one when a lost lease (an API server outage) stopped the previous.
	build := func(run int) (ctrl.Manager, error) {
		mo := opts.ManagerOptions(scheme)
		// The controllers of a stopped manager keep their names.
		mo.Controller.SkipNameValidation = ptr.To(run > 0)
		// Nothing here reads field managers: the cache keeps objects
		// without them (every Secret's and ConfigMap's metadata among
		// them, for the rotation controller).
		mo.Cache.DefaultTransform = cache.TransformStripManagedFields()
		// Helm's release records are most of a cluster's Secrets (up to ten
		// per release) and no workload reads them: the cache leaves them
		// out (the rotation controller watches the rest as metadata).
		mo.Cache.ByObject = map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: notHelmRecords},
		}
		mgr, err := managersetup.New(cfg, mo)
		if err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("draining", drain.ReadyzCheck); err != nil {
			return mgr, err
		}
		writers := &releaseidentity.Writers{
			Own: mgr.GetClient(), Namespaces: mgr.GetClient(), Managed: managed,
			Config: mgr.GetConfig(), Options: client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()},
		}
		cronOpts.Writers = writers
		// Extension controllers are set up here, one call each.
		if err := tenant.SetupWithManager(mgr, tenantOpts); err != nil {
			return mgr, fmt.Errorf("set up the NamespaceTenant finalizer controller: %w", err)
		}
		if err := cronscaler.SetupWithManager(mgr, cronOpts); err != nil {
			return mgr, fmt.Errorf("set up the CronScaler controller: %w", err)
		}
		if err := rotation.SetupWithManager(mgr, admissionOpts.WatchesFile, writers); err != nil {
			return mgr, fmt.Errorf("set up the rotation controller: %w", err)
		}
		// The admission webhook uses the CronScaler controller's indexes.
		if err := admission.SetupWithManager(mgr, admissionOpts); err != nil {
			return mgr, fmt.Errorf("set up the admission webhook: %w", err)
		}
		return mgr, nil
	}

	log.Info("Starting extensions")
	if err := managersetup.Supervise(drain.SignalContext(log), cfg, build, ctrl.Log.WithName("supervisor")); err != nil {
		log.Error(err, "Extensions stopped with an error")
		os.Exit(1)
	}
}

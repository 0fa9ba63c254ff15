// Command extensions is the operator's Go sidecar: controllers for what Helm
// templates cannot express. It runs next to the manager (Helm runtime) in
// the same Pod, leader-elected on its own Lease.
package main

import (
	"flag"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/extensions/internal/cronscaler"
	"github.com/acme/platform-operator/extensions/internal/sidecar"
	"github.com/acme/platform-operator/extensions/internal/tenant"
)

func main() {
	opts := sidecar.DefaultOptions()
	opts.BindFlags(pflag.CommandLine)
	// Flags of the extension controllers are registered here.
	tenantOpts := tenant.DefaultOptions()
	tenantOpts.BindFlags(pflag.CommandLine)
	cronOpts := cronscaler.DefaultOptions()
	cronOpts.BindFlags(pflag.CommandLine)

	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	// API types of the extension controllers are added to the scheme here.
	utilruntime.Must(autoscalingv1alpha1.AddToScheme(scheme))

	mgr, err := sidecar.NewManager(ctrl.GetConfigOrDie(), scheme, opts)
	if err != nil {
		log.Error(err, "Unable to create the manager")
		os.Exit(1)
	}

	// Extension controllers are set up here, one call each.
	if err := tenant.SetupWithManager(mgr, tenantOpts); err != nil {
		log.Error(err, "Unable to set up the NamespaceTenant finalizer controller")
		os.Exit(1)
	}
	if err := cronscaler.SetupWithManager(mgr, cronOpts); err != nil {
		log.Error(err, "Unable to set up the CronScaler controller")
		os.Exit(1)
	}

	log.Info("Starting extensions")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Extensions stopped with an error")
		os.Exit(1)
	}
}

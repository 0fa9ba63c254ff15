// Command manager runs the platform-operator: one Helm-backed controller per
// entry of the watches file. See package internal/operator/helmruntime.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/acme/platform-operator/internal/operator/helmruntime"
	"github.com/acme/platform-operator/internal/operator/managersetup"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

func main() {
	opts := helmruntime.DefaultOptions()
	opts.BindFlags(pflag.CommandLine)
	sdkFlags := opts.BindOperatorSDKFlags(pflag.CommandLine)

	log := managersetup.ParseFlags()
	managersetup.SetMemoryLimitFromEnv(log)

	if err := sdkFlags.Apply(pflag.CommandLine, os.LookupEnv, log); err != nil {
		log.Error(err, "Invalid options")
		os.Exit(2)
	}
	if err := opts.Complete(watchconfig.OSEnv()); err != nil {
		log.Error(err, "Invalid options")
		os.Exit(2)
	}
	opts.Log = ctrl.Log.WithName("helmruntime")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(fmt.Errorf("load kubeconfig: %w", err), "Unable to reach Kubernetes")
		os.Exit(1)
	}

	if err := helmruntime.Run(ctrl.SetupSignalHandler(), cfg, opts); err != nil {
		log.Error(err, "Operator failed")
		os.Exit(1)
	}
}

// Command manager runs the platform-operator: one Helm-backed controller per
// entry of the watches file. See package internal/helmruntime.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/acme/platform-operator/internal/helmruntime"
)

func main() {
	opts := helmruntime.DefaultOptions()
	opts.BindFlags(pflag.CommandLine)

	// Production (JSON) logs unless --zap-devel is given.
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	// flag.CommandLine also carries controller-runtime's --kubeconfig.
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	if err := opts.Complete(helmruntime.OSEnv()); err != nil {
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

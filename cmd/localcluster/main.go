// Command localcluster starts and stops the local Kubernetes control plane
// used by make cluster-up, make run and the end-to-end tests.
//
//	localcluster up   [--bin-dir bin/k8s] [--state-dir bin/local] [--kwok-module hack/kwok] [--nodes 1]
//	localcluster down [--state-dir bin/local]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/acme/platform-operator/internal/localcluster"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: localcluster up|down [flags]")
		os.Exit(2)
	}
	verb := os.Args[1]
	fs := flag.NewFlagSet(verb, flag.ExitOnError)
	binDir := fs.String("bin-dir", "bin/k8s", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok")
	stateDir := fs.String("state-dir", "bin/local", "directory for the cluster's state, logs and kubeconfig")
	kwokModule := fs.String("kwok-module", "hack/kwok", "Go module that pins kwok (its Stage files are used)")
	nodes := fs.Int("nodes", 1, "number of fake Nodes")
	_ = fs.Parse(os.Args[2:])

	if verb == "down" {
		if err := localcluster.Down(*stateDir); err != nil {
			fmt.Fprintln(os.Stderr, "localcluster down:", err)
			os.Exit(1)
		}
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stages, err := localcluster.KwokStages(*kwokModule)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster up:", err)
		os.Exit(1)
	}
	c, err := localcluster.Up(ctx, localcluster.Config{
		BinDir:     *binDir,
		StateDir:   *stateDir,
		KwokStages: stages,
		Nodes:      *nodes,
		Log:        os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster up:", err)
		os.Exit(1)
	}
	if c.Reused {
		fmt.Fprintf(os.Stderr, "local cluster already running at %s\n", c.Server)
	} else {
		fmt.Fprintf(os.Stderr, "local cluster running at %s\n", c.Server)
	}
	fmt.Fprintf(os.Stderr, "  export KUBECONFIG=%s\n", c.Kubeconfig)
}

// Command localcluster starts and stops the local Kubernetes cluster used by
// make cluster-up, make run and the end-to-end tests, and runs its storage
// provisioner.
//
//	localcluster up   [--bin-dir bin/k8s] [--state-dir bin/local] [--kwok-module hack/kwok] [--nodes 1|N|real]
//	localcluster down [--state-dir bin/local]
//	localcluster load [--state-dir bin/local] IMAGE.tar...   (real node: import images into its containerd)
//	localcluster provisioner --kubeconfig K --dir D          (started by up)
//
// The admission webhook of a sidecar run on this machine (make run, on the
// local cluster only: its API server can call loopback):
//
//	localcluster webhook-certs --state-dir D [--address 127.0.0.1:9443]
//	    issue (or keep) the webhook's CA and serving certificate in D/webhook
//	localcluster webhook-up    --state-dir D --kubeconfig K [--webhooks config/webhook/manifests.yaml] [--kinds config/crd/kinds.yaml] [--address 127.0.0.1:9443]
//	    the same, then apply the ValidatingWebhookConfiguration
//	    platform-operator-make-run calling https://ADDRESS/validate
//	localcluster webhook-down  --kubeconfig K
//	    delete it (nothing to delete is fine)
//
// webhook-certs and webhook-up print the certificate directory (for the
// sidecar's --admission-cert-dir) on stdout, and nothing else.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/acme/platform-operator/internal/devtools/localcluster"
	"github.com/acme/platform-operator/internal/devtools/localcluster/hostpath"
	"github.com/acme/platform-operator/internal/operator/apikinds"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: localcluster up|down|load|provisioner|webhook-certs|webhook-up|webhook-down [flags]")
		os.Exit(2)
	}
	verb := os.Args[1]
	fs := flag.NewFlagSet(verb, flag.ExitOnError)
	binDir := fs.String("bin-dir", "bin/k8s", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (and kubelet, kube-proxy, coredns, pause for a real node)")
	stateDir := fs.String("state-dir", "bin/local", "directory for the cluster's state, logs and kubeconfig")
	kwokModule := fs.String("kwok-module", "hack/kwok", "Go module that pins kwok (its Stage files are used)")
	nodes := fs.String("nodes", "1", `number of fake (kwok) Nodes, or "real" for one real node (root; make node-deps node-binaries)`)
	kubeconfig := fs.String("kubeconfig", "", "provisioner, webhook-up, webhook-down: kubeconfig of the cluster")
	volumeDir := fs.String("dir", "", "provisioner: directory of the volumes")
	webhooks := fs.String("webhooks", "config/webhook/manifests.yaml", "webhook-up: file with the ValidatingWebhookConfiguration to register")
	kinds := fs.String("kinds", "config/crd/kinds.yaml", "webhook-up: kinds file; the CRDs of kinds with a second version get their conversion webhook pointed at --address too")
	crdDir := fs.String("crds", "config/crd/bases", "webhook-up: directory of the CRD files of --kinds")
	address := fs.String("address", "127.0.0.1:9443", "webhook-certs, webhook-up: host:port the sidecar's webhook serves on")
	_ = fs.Parse(os.Args[2:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if verb == "webhook-up" || verb == "webhook-down" {
		// Bounded: make run calls webhook-down on its way out, whatever
		// state the cluster is in.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	var err error
	switch verb {
	case "up":
		err = up(ctx, *binDir, *stateDir, *kwokModule, *nodes)
	case "down":
		err = localcluster.Down(*stateDir)
	case "load":
		for _, tar := range fs.Args() {
			if err = localcluster.ImportImage(ctx, *stateDir, tar); err != nil {
				break
			}
		}
	case "provisioner":
		err = provision(ctx, *kubeconfig, *volumeDir)
	case "webhook-certs":
		var dir string
		if dir, _, err = localcluster.WebhookCerts(*stateDir, *address); err == nil {
			fmt.Println(dir)
		}
	case "webhook-up":
		if *kubeconfig == "" {
			err = fmt.Errorf("--kubeconfig is required")
			break
		}
		var ks []apikinds.Kind
		if ks, err = apikinds.LoadKinds(*kinds); err != nil {
			break
		}
		var dir string
		var crds []string
		for _, k := range ks {
			if len(k.Versions) > 0 {
				crds = append(crds, filepath.Join(*crdDir, k.FileName()))
			}
		}
		if dir, err = localcluster.RegisterWebhook(ctx, *kubeconfig, *stateDir, *webhooks, *address, crds); err == nil {
			fmt.Fprintf(os.Stderr, "registered the ValidatingWebhookConfiguration %s and the conversion webhook of %v: they call https://%s (CA and serving certificate in %s)\n",
				localcluster.WebhookConfigurationName, crds, *address, dir)
			fmt.Println(dir)
		}
	case "webhook-down":
		if *kubeconfig == "" {
			err = fmt.Errorf("--kubeconfig is required")
			break
		}
		err = localcluster.UnregisterWebhook(ctx, *kubeconfig)
	default:
		err = fmt.Errorf("unknown command %q (up, down, load, provisioner, webhook-certs, webhook-up, webhook-down)", verb)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcluster %s: %v\n", verb, err)
		os.Exit(1)
	}
}

func up(ctx context.Context, binDir, stateDir, kwokModule, nodes string) error {
	cfg := localcluster.Config{BinDir: binDir, StateDir: stateDir, Log: os.Stderr}
	if nodes == "real" {
		cfg.RealNode = true
	} else {
		n, err := strconv.Atoi(nodes)
		if err != nil || n < 1 {
			return fmt.Errorf(`--nodes %q: want a number of fake Nodes or "real"`, nodes)
		}
		cfg.Nodes = n
		if cfg.KwokStages, err = localcluster.KwokStages(kwokModule); err != nil {
			return err
		}
	}
	c, err := localcluster.Up(ctx, cfg)
	if err != nil {
		return err
	}
	if c.Reused {
		fmt.Fprintf(os.Stderr, "local cluster already running at %s\n", c.Server)
	} else {
		fmt.Fprintf(os.Stderr, "local cluster running at %s\n", c.Server)
	}
	fmt.Fprintf(os.Stderr, "  export KUBECONFIG=%s\n", c.Kubeconfig)
	if c.Registry != "" {
		fmt.Fprintf(os.Stderr, "  image registry (http): %s; or load a tarball: localcluster load --state-dir %s IMAGE.tar\n", c.Registry, stateDir)
		fmt.Fprintf(os.Stderr, "  the same registry over https: %s (CA: %s; e.g. SSL_CERT_FILE for operator-sdk)\n", localcluster.RegistryTLSAddress, c.RegistryCA)
	}
	return nil
}

func provision(ctx context.Context, kubeconfig, dir string) error {
	if kubeconfig == "" || dir == "" {
		return fmt.Errorf("--kubeconfig and --dir are required")
	}
	cs, err := localcluster.Clientset(kubeconfig)
	if err != nil {
		return err
	}
	return (&hostpath.Provisioner{Client: cs, Root: dir}).Run(ctx)
}

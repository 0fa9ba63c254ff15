// Package testenv starts the real API server (etcd and kube-apiserver,
// controller-runtime's envtest over the source-built binaries in
// KUBEBUILDER_ASSETS) that a package's integration tests run against: once
// per package, from TestMain. Without KUBEBUILDER_ASSETS those tests skip,
// so `go test ./...` runs the unit tests alone; `make test-integration`
// sets it.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is a started (or skipped, or failed) API server.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Webhooks says where the API server calls the webhooks installed
	// by StartWithWebhooks: serve them on Webhooks.LocalServingHost and
	// LocalServingPort with the certificate in LocalServingCertDir.
	Webhooks *envtest.WebhookInstallOptions
	env      *envtest.Environment
	skip     string
	err      error
}

// Start starts the API server with the CRDs of crdPaths installed; a path
// that does not exist is an error, not a silently missing kind.
func Start(crdPaths ...string) *Env {
	return StartWithWebhooks(nil, crdPaths...)
}

// StartWithWebhooks is Start with the webhook configurations in the YAML
// files of webhookPaths installed, pointed at a local server (see
// Env.Webhooks).
func StartWithWebhooks(webhookPaths []string, crdPaths ...string) *Env {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return &Env{skip: "KUBEBUILDER_ASSETS is not set: integration tests need a directory with etcd and kube-apiserver (`make test-integration` sets it)"}
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		fi, err := os.Stat(filepath.Join(assets, bin))
		if err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
			err = fmt.Errorf("%s is not an executable file", bin)
		}
		if err != nil {
			return &Env{err: fmt.Errorf("KUBEBUILDER_ASSETS=%s: %w", assets, err)}
		}
	}
	e := &Env{env: &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdPaths,
		ErrorIfCRDPathMissing: true,
		// The API server calls the webhooks at localhost: a serving
		// certificate for a DNS name (not an IP address) verifies too.
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: webhookPaths, LocalServingHostExternalName: "localhost"},
	}}
	started := time.Now()
	cfg, err := e.env.Start()
	if err != nil {
		// Start may fail after etcd and kube-apiserver run (installing
		// CRDs or webhooks): stop them, or they outlive the test binary.
		_ = e.env.Stop()
		e.err = fmt.Errorf("start envtest: %w", err)
		return e
	}
	fmt.Fprintf(os.Stderr, "envtest started in %s\n", time.Since(started).Round(time.Millisecond))
	e.Config = cfg
	if len(webhookPaths) > 0 {
		e.Webhooks = &e.env.WebhookInstallOptions
	}
	return e
}

// Running reports whether the API server runs.
func (e *Env) Running() bool { return e.Config != nil }

// Err is why the API server did not start; nil when it runs or was skipped.
func (e *Env) Err() error { return e.err }

// Require skips t without an API server and fails it when the server did
// not start; it returns the administrator's config.
func (e *Env) Require(t testing.TB) *rest.Config {
	t.Helper()
	if e.skip != "" {
		t.Skip(e.skip)
	}
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.Config
}

// Stop stops the API server, if it runs.
func (e *Env) Stop() error {
	if e.Config == nil {
		return nil
	}
	return e.env.Stop()
}

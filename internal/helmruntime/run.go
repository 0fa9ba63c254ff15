package helmruntime

import (
	"context"
	"fmt"

	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"k8s.io/client-go/rest"
)

// Run loads the watches file, builds the manager and one reconciler per
// watch, and runs them until ctx is cancelled. opts must be completed (see
// Options.Complete). A clean shutdown returns nil.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	log := opts.logger()

	ws, err := watches.Load(opts.WatchesFile)
	if err != nil {
		return fmt.Errorf("load watches file %q: %w", opts.WatchesFile, err)
	}
	if len(ws) == 0 {
		log.Info("Watches file has no entries; nothing will be reconciled", "watchesFile", opts.WatchesFile)
	}

	// Survives lost leadership and API server outages (see supervise.go).
	return runManagers(ctx, cfg, opts, ws, log)
}

// describeNamespaces renders the watched namespaces for logs.
func describeNamespaces(namespaces []string) any {
	if len(namespaces) == 0 {
		return "all"
	}
	return namespaces
}

// Package helmruntime runs the platform-operator's Helm-backed controllers.
//
// Every entry of watches.yaml maps a custom resource kind to a Helm chart.
// For each entry the runtime builds one controller from the
// helm-operator-plugins reconciler: the custom resource's spec becomes the
// chart's values and the resource itself is reconciled as a Helm release
// (install, upgrade when the spec changes, repair of drifted or deleted
// children, uninstall when the resource is deleted).
//
// The package deliberately does not use the library's stock "run" command.
// It assembles the manager and the reconcilers itself so that every
// watches.yaml field is honoured per entry, and so that cluster-scoped kinds
// get a real namespace for their Helm release (see [Options.ReleaseNamespace]).
//
// The usual entry point is [Run]; [NewManager] and [SetupReconcilers] are the
// two halves of it for callers that need the manager before it starts.
package helmruntime

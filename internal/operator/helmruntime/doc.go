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
// The package is the wiring. What it wires lives beside it: the layers
// between the library's reconciler and Helm in package actionpath (listed
// in order by actionpath.Layers), Helm's action configuration in package
// helmconfig, the rules of a release (owner, digest, values) in package
// release, the watches.yaml entries with their defaults in package
// watchconfig, the readiness controller in package readycontroller, and
// what the cache holds and which events ask for work in package
// cachefilter.
//
// Charts that render secrets get three safeguards on top of the library:
// Secret values are redacted from the release manifest the custom
// resource's status shows (redact.go); values a chart declares in
// Chart.yaml under manifest.GeneratedValuesAnnotation (passwords) are
// generated once and then passed from the stored release to every later
// dry-run and upgrade (values.go), so they never change and idle
// reconciles create no revision; and objects kept by helm.sh/resource-policy:
// keep are watched (keepwatch.go).
//
// Idle cost: the library renders and server-side dry-runs every release on
// every reconcile. Releases record a digest of their chart and final
// values (release.DigestLabel), and a dry-run whose digest matches the
// deployed release is answered without rendering (charts calling lookup
// are always rendered). Periodic resyncs are a safety net, each resource on
// a timer of its own: the reconcile period (one hour by default) times a
// factor drawn within ±[ResyncJitter] (resync.go); spec edits and drift of
// the rendered objects are watched.
//
// Memory: the informer cache keeps the rendered objects as their metadata
// and a digest of their content, which is all the dependent watches
// compare; nothing may read a rendered object's spec from the cache (see
// cachefilter.CacheOptions).
//
// The entry point is [Run]. It builds the runtime's state once (run.go) and
// hands the supervisor a function that builds a manager with one reconciler
// per watches.yaml entry (kind.go); nothing is kept in package variables.
package helmruntime

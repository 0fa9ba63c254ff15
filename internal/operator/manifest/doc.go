// Package manifest holds the pure functions over Helm charts and rendered
// release manifests that the runtime and the bundle generator share: the
// generated values a chart declares (see [GeneratedValuesAnnotation]), the
// redaction of Secret values from a manifest a custom resource's status
// shows, Helm's ownership metadata stamped on objects that drift repair
// recreates, and the digest of an object's content that the runtime's
// cache keeps in place of it. It depends on no Kubernetes client, so any
// tool may import it.
package manifest

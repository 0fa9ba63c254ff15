// Package watchconfig is what the operator's configuration says about the
// kinds it serves: the watches.yaml entries resolved against the
// operator-wide defaults (watch.go), and where each kind's releases live
// (env.go). Both processes read it: the runtime to build its reconcilers,
// the admission webhook of the sidecar to judge a resource as the runtime
// will.
package watchconfig

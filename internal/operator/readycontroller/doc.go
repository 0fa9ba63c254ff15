// Package readycontroller is the Helm runtime's second controller per
// kind: it judges whether the objects of each release work and writes the
// Ready condition (ready.go, with the library's own status writes stamped
// in readystatus.go), remediates a revision that did not become Ready in
// time (remediation.go: the decision; the rollback itself is the action
// path's) and counts releases by readiness (readymetrics.go). The rules it
// applies are pure, in package readiness; helmruntime wires it to each
// kind's reconciler.
package readycontroller

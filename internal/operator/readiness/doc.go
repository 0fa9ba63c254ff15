// Package readiness decides whether the objects of a Helm release work,
// not only whether Helm wrote them.
//
// It has three parts, each pure:
//
//   - [Observe] reduces a live object to its [Health] with kstatus
//     (sigs.k8s.io/cli-utils/pkg/kstatus/status), the library Flux and
//     kpt read object status with: Deployments rolled out and available,
//     StatefulSets ready, PersistentVolumeClaims bound, Jobs complete,
//     Namespaces active. No kind has a hand-written rule here; the one
//     addition is a workload whose Pods read a Secret or ConfigMap that
//     does not exist (workloadrefs.MissingAnnotation, kept by the sidecar's
//     rotation controller), which is InProgress and names it.
//   - [Evaluate] turns the health of every object of a release into a
//     [Verdict]: True when every object is Current, else False with reason
//     Progressing or Failed and a message that names the objects that are
//     not ready.
//   - [DescribePods] says why the Pods of a workload that is not ready are
//     not: ImagePullBackOff and the image, CrashLoopBackOff, a failing
//     readiness probe, an unbound claim.
//
// The runtime (internal/operator/readycontroller) keeps each object's Health
// in its informer cache, evaluates releases on health changes and writes
// the Ready condition.
package readiness

package cachefilter

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/readiness"
)

// HelmReleaseSecretType is the type of the Secrets Helm stores releases in.
const HelmReleaseSecretType corev1.SecretType = "helm.sh/release.v1"

// CacheOptions is what the runtime's informer cache keeps. Memory grows
// with the number of releases, so it keeps only what is read from it:
//
//   - No managedFields on any object. Nothing reads them from the cache,
//     and they are often a third of an object. Updates sent from a cached
//     object keep the server's managedFields.
//   - Helm release Secrets without their payload. They are cached so that
//     a change maps to its owner, and so that the storage knows a
//     release's records by name (recordindex.go); Helm reads the records
//     themselves from the API server, never from this cache. The payload, the gzipped chart,
//     values and manifest of one revision, is tens of KiB per revision.
//     Other Secrets are kept whole.
//   - No annotations that Kubernetes controllers write on the objects
//     they manage for their own bookkeeping (bookkeepingAnnotationPrefixes).
//     They are not drift, and the library's dependent watches saw every
//     such write as a change: each Deployment a release created cost one
//     more reconcile of its owner when the deployment controller recorded
//     its revision, seconds or (with many Deployments) minutes later.
//   - The objects releases render (unstructured, of any kind other than
//     the watched custom resources) as their metadata (without its
//     creationTimestamp and generation) and a digest of the rest (see
//     fingerprint). They were most of the cache.
//   - The watched custom resources with only the part of their status a
//     chart rollout counts (trimStatus). The status holds the release's
//     whole manifest (status.deployedRelease.manifest), a few KiB per
//     resource: at scale, most of the memory the runtime held
//     (docs/benchmarks.md). The whole status of the version cached is
//     kept compressed in statuses, from which the library's read of its
//     resource is answered (Statuses).
//   - Every object with the strings its metadata repeats (keys, labels,
//     the namespace, the owner's kind) shared with the other objects
//     (compact.go).
//   - Pods and PersistentVolumeClaims, cached once a release waits for
//     Pods (readycontroller), with only what says why a Pod is not ready
//     (trimPod) and a claim's phase.
//
// watched are the kinds of the watches file: the custom resources, of
// which the cache lists and watches only those the shard selector
// matches. Every watch of a custom resource reads this
// cache, so the selector applies to all of them; a resource whose labels
// stop matching leaves the cache as if it were deleted.
func CacheOptions(watchNamespaces []string, watched []schema.GroupVersionKind, shard labels.Selector, statuses *Statuses) cache.Options {
	t := cacheTrim{watched: make(map[schema.GroupVersionKind]bool, len(watched)), statuses: statuses}
	var byObject map[client.Object]cache.ByObject
	for _, gvk := range watched {
		t.watched[gvk] = true
		if shard != nil && !shard.Empty() {
			if byObject == nil {
				byObject = map[client.Object]cache.ByObject{}
			}
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(gvk)
			byObject[obj] = cache.ByObject{Label: shard}
		}
	}
	return cache.Options{
		DefaultNamespaces: CacheNamespaces(watchNamespaces),
		DefaultTransform:  t.transform,
		ByObject:          byObject,
	}
}

// cacheTrim is the transform of every object the cache stores.
type cacheTrim struct {
	watched  map[schema.GroupVersionKind]bool
	statuses *Statuses
}

func (t cacheTrim) transform(obj any) (any, error) {
	obj, err := trimObject(obj)
	if err != nil {
		return obj, err
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		stripReleasePayload(o)
	case *corev1.Pod:
		trimPod(o)
	case *corev1.PersistentVolumeClaim:
		o.Spec = corev1.PersistentVolumeClaimSpec{}
		o.Status = corev1.PersistentVolumeClaimStatus{Phase: o.Status.Phase}
	case *unstructured.Unstructured:
		if t.watched[o.GroupVersionKind()] {
			t.statuses.keep(o)
			trimStatus(o)
		} else {
			fingerprint(o)
		}
	}
	cacheStrings.compactObject(obj)
	return obj, nil
}

// contentDigestField holds a rendered object's content digest in the
// cache (fingerprint).
const contentDigestField = manifest.ContentDigestField

// fingerprint replaces the content of a rendered object (every top-level
// field but apiVersion, kind, metadata and status) with its SHA-256, and
// its status with its health (readiness.Stash): kstatus's verdict and
// message, all the Ready condition reads (ready.go).
//
// The runtime never reads rendered objects from the cache: Helm reads and
// patches them on the API server, and the library's drift repair compares
// the release's manifest with what the API server returns. The cached
// copies only feed the dependent watches, whose event handlers read the
// metadata (owner references, Helm's owner annotations) and whose
// predicate reconciles an update unless the object is unchanged apart
// from status and resourceVersion (so a change of health alone wakes only
// the readiness controller). Metadata plus a digest of the content
// keeps exactly that: two fingerprints are equal when the objects' content
// is (their JSON, which has sorted keys, has the same SHA-256). A cached
// Deployment shrinks from its whole spec, Pod template included, to its
// metadata and 64 hex digits. Of the metadata it drops the creation time
// and the generation (unreadMetadata), and with them no event is lost: a
// new generation is new content, and so a new digest.
//
// An object that is already a fingerprint is left as it is: the transform
// must be idempotent (client-go may pass an object it already transformed),
// and a second fingerprint would judge the health of the fingerprint
// itself (a Deployment without spec and status: "Replicas: 0/1").
func fingerprint(u *unstructured.Unstructured) {
	if _, done := u.Object[contentDigestField]; done {
		return
	}
	digest, ok := manifest.ContentDigest(u.Object)
	if !ok {
		return // not JSON data (never from an informer): kept whole
	}
	health := readiness.Observe(u)
	kept := map[string]any{contentDigestField: digest}
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		if v, ok := u.Object[k]; ok {
			kept[k] = v
		}
	}
	if m, ok := kept["metadata"].(map[string]any); ok {
		for _, k := range unreadMetadata {
			delete(m, k)
		}
	}
	u.Object = kept
	readiness.Stash(u, health)
}

// unreadMetadata are the metadata fields a fingerprint drops: nothing
// reads them from the cache, its generation changes only with its content
// (the digest), and without them the metadata map fits one group of Go's
// map (eight entries), a third less memory per object.
var unreadMetadata = []string{"creationTimestamp", "generation"}

// bookkeepingAnnotationPrefixes are the prefixes of annotations that
// Kubernetes controllers write on the objects they manage: the deployment
// controller's revision of a Deployment, and the desired and maximum
// replicas of its ReplicaSets.
var bookkeepingAnnotationPrefixes = []string{"deployment.kubernetes.io/"}

var stripManagedFields = cache.TransformStripManagedFields()

// trimObject drops managedFields and bookkeeping annotations from obj.
func trimObject(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil // not an object: nothing to trim
	}
	annotations := accessor.GetAnnotations()
	trimmed := false
	for key := range annotations {
		for _, prefix := range bookkeepingAnnotationPrefixes {
			if strings.HasPrefix(key, prefix) {
				delete(annotations, key)
				trimmed = true
			}
		}
	}
	if trimmed {
		accessor.SetAnnotations(annotations)
	}
	return obj, nil
}

// stripReleasePayload drops the data of a Helm release Secret.
func stripReleasePayload(s *corev1.Secret) {
	if s.Type == HelmReleaseSecretType {
		s.Data = nil
		s.StringData = nil
	}
}

// CacheNamespaces turns the watched namespaces into the cache's
// DefaultNamespaces; nil (all namespaces) for an empty list.
func CacheNamespaces(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// trimStatus keeps of a custom resource's status what the kind's rollout
// controller reads from the cache (helmruntime/rollout.go): the chart
// version the release runs, the Ready condition's status and generation,
// and, of status.history and status.remediation, the fields that tell a
// remediated revision and its chart version. Idempotent.
func trimStatus(u *unstructured.Unstructured) {
	st, ok := u.Object["status"].(map[string]any)
	if !ok {
		delete(u.Object, "status")
		return
	}
	kept := map[string]any{}
	if v, ok := st["chartVersion"]; ok {
		kept["chartVersion"] = v
	}
	if conds, ok := st["conditions"].([]any); ok {
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != "Ready" {
				continue
			}
			kept["conditions"] = []any{pick(m, "type", "status", "observedGeneration")}
		}
	}
	if hist, ok := st["history"].([]any); ok {
		out := make([]any, 0, len(hist))
		for _, h := range hist {
			if m, ok := h.(map[string]any); ok {
				out = append(out, pick(m, "revision", "chartVersion", "appliedAt", "remediation"))
			}
		}
		kept["history"] = out
	}
	if r, ok := st["remediation"].(map[string]any); ok {
		kept["remediation"] = pick(r, "revision", "generation", "retry", "action", "to", "retriesLeft")
	}
	if len(kept) == 0 {
		delete(u.Object, "status")
		return
	}
	u.Object["status"] = kept
}

// pick copies the keys of m that are set.
func pick(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// trimPod keeps of a Pod what readiness.DescribePods reads: its metadata,
// the claims it mounts, whether each container has a readiness probe, its
// phase, its PodScheduled and Ready conditions, and of each container's
// status its name, image, readiness, state and last termination reason.
// Idempotent.
func trimPod(p *corev1.Pod) {
	var volumes []corev1.Volume
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			volumes = append(volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.PersistentVolumeClaim.ClaimName},
			}})
		}
	}
	containers := make([]corev1.Container, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		kept := corev1.Container{Name: c.Name}
		if c.ReadinessProbe != nil {
			kept.ReadinessProbe = &corev1.Probe{}
		}
		containers = append(containers, kept)
	}
	p.Spec = corev1.PodSpec{Volumes: volumes, Containers: containers, NodeName: p.Spec.NodeName}
	var conds []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled || c.Type == corev1.PodReady {
			conds = append(conds, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	p.Status = corev1.PodStatus{
		Phase:                 p.Status.Phase,
		Conditions:            conds,
		InitContainerStatuses: trimContainerStatuses(p.Status.InitContainerStatuses),
		ContainerStatuses:     trimContainerStatuses(p.Status.ContainerStatuses),
	}
}

func trimContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, 0, len(in))
	for _, cs := range in {
		kept := corev1.ContainerStatus{Name: cs.Name, Image: cs.Image, Ready: cs.Ready}
		if w := cs.State.Waiting; w != nil {
			kept.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
		if cs.State.Running != nil {
			kept.State.Running = &corev1.ContainerStateRunning{}
		}
		if t := cs.State.Terminated; t != nil {
			kept.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason}
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			kept.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason}
		}
		out = append(out, kept)
	}
	return out
}

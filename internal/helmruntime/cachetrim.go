package helmruntime

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// helmReleaseSecretType is the type of the Secrets Helm stores releases in.
const helmReleaseSecretType corev1.SecretType = "helm.sh/release.v1"

// cacheOptions is what the runtime's informer cache keeps. Memory grows
// with the number of releases, so it keeps only what is read from it:
//
//   - No managedFields on any object. Nothing reads them from the cache,
//     and they are often a third of an object. Updates sent from a cached
//     object keep the server's managedFields.
//   - Helm release Secrets without their payload. They are cached only so
//     that a change maps to its owner; Helm reads releases from the API
//     server, never from this cache. The payload, the gzipped chart,
//     values and manifest of one revision, is tens of KiB per revision.
//     Other Secrets are kept whole.
//   - No annotations that Kubernetes controllers write on the objects
//     they manage for their own bookkeeping (bookkeepingAnnotationPrefixes).
//     They are not drift, and the library's dependent watches saw every
//     such write as a change: each Deployment a release created cost one
//     more reconcile of its owner when the deployment controller recorded
//     its revision, seconds or (with many Deployments) minutes later.
func cacheOptions(watchNamespaces []string) cache.Options {
	return cache.Options{
		DefaultNamespaces: CacheNamespaces(watchNamespaces),
		DefaultTransform:  trimObject,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Transform: func(obj any) (any, error) {
				obj, err := trimObject(obj)
				if err != nil {
					return obj, err
				}
				return stripReleasePayload(obj), nil
			}},
		},
	}
}

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
func stripReleasePayload(obj any) any {
	if s, ok := obj.(*corev1.Secret); ok && s.Type == helmReleaseSecretType {
		s.Data = nil
		s.StringData = nil
	}
	return obj
}

package helmruntime

import (
	corev1 "k8s.io/api/core/v1"
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
func cacheOptions(watchNamespaces []string) cache.Options {
	stripManagedFields := cache.TransformStripManagedFields()
	return cache.Options{
		DefaultNamespaces: CacheNamespaces(watchNamespaces),
		DefaultTransform:  stripManagedFields,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Transform: func(obj any) (any, error) {
				obj, err := stripManagedFields(obj)
				if err != nil {
					return obj, err
				}
				return stripReleasePayload(obj), nil
			}},
		},
	}
}

// stripReleasePayload drops the data of a Helm release Secret.
func stripReleasePayload(obj any) any {
	if s, ok := obj.(*corev1.Secret); ok && s.Type == helmReleaseSecretType {
		s.Data = nil
		s.StringData = nil
	}
	return obj
}

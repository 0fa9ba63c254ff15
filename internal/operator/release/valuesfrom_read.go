package release

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SourceReader is the ReadSource of a resource in namespace ns, reading
// with reader, which should read from the API server (a direct read of
// the few objects named, so that nobody caches the data of every Secret).
// The runtime reads with the operator's identity, the admission check
// with the webhook's; the webhook checks beforehand that the requesting
// user may get every object named. A resource without a namespace (of a
// cluster-scoped kind) has no reader: ApplyValuesFrom refuses its
// valuesFrom.
func SourceReader(ctx context.Context, reader client.Reader, ns string) ReadSource {
	if ns == "" {
		return nil
	}
	return func(kind, name string) (map[string][]byte, bool, error) {
		key := client.ObjectKey{Namespace: ns, Name: name}
		switch kind {
		case SourceSecret:
			var s corev1.Secret
			if err := reader.Get(ctx, key, &s); err != nil {
				return nil, false, client.IgnoreNotFound(err)
			}
			return s.Data, true, nil
		case SourceConfigMap:
			var c corev1.ConfigMap
			if err := reader.Get(ctx, key, &c); err != nil {
				return nil, false, client.IgnoreNotFound(err)
			}
			data := make(map[string][]byte, len(c.Data)+len(c.BinaryData))
			for k, v := range c.BinaryData {
				data[k] = v
			}
			for k, v := range c.Data {
				data[k] = []byte(v)
			}
			return data, true, nil
		}
		return nil, false, apierrors.NewBadRequest("valuesFrom reads only Secrets and ConfigMaps")
	}
}

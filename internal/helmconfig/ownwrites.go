package helmconfig

import (
	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/acme/platform-operator/internal/ownwrites"
)

// recordingKubeClient is Helm's Kubernetes client (with its interruptible
// waits) that registers its updates of a release's objects with the
// kind's ownwrites.Registry: an upgrade's or a rollback's writes, whose
// watch events would otherwise reconcile the owner once more. Only Update
// is recorded; an install's creations do not come back as reconciles (the
// library watches a release's objects from the end of its install on).
type recordingKubeClient struct {
	*interruptibleKubeClient
	writes *ownwrites.Registry
}

// recordWrites wraps kc when it is Helm's client and there is a registry.
func recordWrites(kc kube.Interface, writes *ownwrites.Registry) kube.Interface {
	c, ok := kc.(*interruptibleKubeClient)
	if !ok || writes == nil {
		return kc
	}
	return &recordingKubeClient{interruptibleKubeClient: c, writes: writes}
}

// Update patches (or replaces, or creates) the objects of target, deletes
// those of original that target lacks, and records the version each
// object was left at: Helm refreshes every object of target from the
// server, with the answer to its write or, when its patch was empty, with
// a read. The version of an object left alone makes no event and its
// record expires.
func (c *recordingKubeClient) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	keys := make([]ownwrites.Key, 0, len(target))
	for _, info := range target {
		if info.Mapping != nil {
			keys = append(keys, keyOf(info))
		}
	}
	written := map[ownwrites.Key]string{}
	end := c.writes.Begin(keys)
	defer func() { end(written) }()
	res, err := c.interruptibleKubeClient.Update(original, target, force)
	if res != nil {
		for _, list := range []kube.ResourceList{res.Updated, res.Created} {
			for _, info := range list {
				if info.Mapping != nil {
					written[keyOf(info)] = info.ResourceVersion
				}
			}
		}
	}
	return res, err
}

func keyOf(info *resource.Info) ownwrites.Key {
	return ownwrites.Key{GroupKind: info.Mapping.GroupVersionKind.GroupKind(), Namespace: info.Namespace, Name: info.Name}
}

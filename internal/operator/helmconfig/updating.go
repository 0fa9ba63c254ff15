package helmconfig

import (
	"io"

	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/cli-runtime/pkg/resource"
)

// updatingKubeClient is Helm's Kubernetes client (with its interruptible
// waits) whose updates of a release's objects (an upgrade's, a
// rollback's) are registered with the kind's Updates, so that they read
// each object once and their watch events do not reconcile the owner once
// more (updates.go). An install's creations need neither:
// they read nothing twice, and the library watches a release's objects
// from the end of its install on.
type updatingKubeClient struct {
	*interruptibleKubeClient
	updates *Updates
	// deletes keeps the errors of Delete (deleteerrors.go).
	deletes deleteErrors
	// deletingNamespace is the release's namespace when it is being
	// deleted along with the release's resource, else "" (deleteerrors.go).
	deletingNamespace string
	// absent reports whether the runtime's cache, which watches the
	// object's kind, holds no such object (nil: it is never asked).
	absent func(info *resource.Info) bool
}

// updating wraps kc when it is Helm's client.
func updating(kc kube.Interface, updates *Updates, deletingNamespace string, absent func(*resource.Info) bool) kube.Interface {
	c, ok := kc.(*interruptibleKubeClient)
	if !ok {
		return kc
	}
	return &updatingKubeClient{interruptibleKubeClient: c, updates: updates, deletingNamespace: deletingNamespace, absent: absent}
}

// Build reads a manifest into Helm's objects, and notes those the cache
// says do not exist, so that Helm's read of each (whether it exists, before
// an install or an upgrade creates it) is answered without a request
// (Updates.NoteAbsent). Helm builds a manifest right before it checks and
// creates its objects.
func (c *updatingKubeClient) Build(reader io.Reader, validate bool) (kube.ResourceList, error) {
	list, err := c.interruptibleKubeClient.Build(reader, validate)
	if err != nil || c.absent == nil {
		return list, err
	}
	var paths []string
	for _, info := range list {
		if info.Mapping != nil && c.absent(info) {
			paths = append(paths, objectPath(info))
		}
	}
	c.updates.NoteAbsent(paths)
	return list, nil
}

// Update patches (or replaces, or creates) the objects of target, deletes
// those of original that target lacks, and records the version each
// object was left at: Helm refreshes every object of target from the
// server, with the answer to its write or, when its patch was empty, with
// a read. The version of an object left alone makes no event and its
// record expires.
func (c *updatingKubeClient) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	targets := make([]UpdateTarget, 0, len(target))
	for _, info := range target {
		if info.Mapping != nil {
			targets = append(targets, UpdateTarget{Key: keyOf(info), Path: objectPath(info)})
		}
	}
	written := map[ObjectKey]string{}
	end := c.updates.Begin(targets)
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

func keyOf(info *resource.Info) ObjectKey {
	return ObjectKey{GroupKind: info.Mapping.GroupVersionKind.GroupKind(), Namespace: info.Namespace, Name: info.Name}
}

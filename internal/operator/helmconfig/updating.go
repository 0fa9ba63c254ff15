package helmconfig

import (
	"bytes"
	"encoding/json"
	"io"

	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// updatingKubeClient is Helm's Kubernetes client (with its interruptible
// waits) whose updates of a release's objects (an upgrade's, a
// rollback's) are registered with the kind's Updates, so that they read
// each object once, from the cache where the runtime's last write left it
// as it is, and their watch events do not reconcile the owner once more
// (updates.go). Its creates and updates record what they left; an
// install's creations need no more: they read nothing twice, and the
// library watches a release's objects from the end of its install on.
type updatingKubeClient struct {
	*interruptibleKubeClient
	updates *Updates
	// deletes keeps the errors of Delete (deleteerrors.go).
	deletes deleteErrors
	// deletingNamespace is the release's namespace when it is being
	// deleted along with the release's resource, else "" (deleteerrors.go).
	deletingNamespace string
	// cached returns the runtime's cache's copy of the object info names
	// (metadata and content digest; nil when it holds none), and whether
	// the cache watches its kind at all (nil: it is never asked).
	cached func(info *resource.Info) (*unstructured.Unstructured, bool)
	// reachable answers IsReachable (Capabilities.Reachable).
	reachable func() error
	// builds answers Build for the manifests this reconcile built already
	// (buildmemo.go).
	builds buildMemo
}

// updating wraps kc when it is Helm's client.
func updating(kc kube.Interface, updates *Updates, deletingNamespace string, cached func(*resource.Info) (*unstructured.Unstructured, bool), reachable func() error) kube.Interface {
	c, ok := kc.(*interruptibleKubeClient)
	if !ok {
		return kc
	}
	return &updatingKubeClient{interruptibleKubeClient: c, updates: updates, deletingNamespace: deletingNamespace, cached: cached, reachable: reachable}
}

// IsReachable is Helm's check, before every action, that the API server
// is reachable, answered without a request while the shared capabilities
// are recent (Capabilities.Reachable).
func (c *updatingKubeClient) IsReachable() error {
	if c.reachable == nil {
		return c.interruptibleKubeClient.IsReachable()
	}
	return c.reachable()
}

// Build reads a manifest into Helm's objects, and notes those the cache
// says do not exist, so that Helm's read of each (whether it exists, before
// an install or an upgrade creates it) is answered without a request
// (Updates.NoteAbsent). Helm builds a manifest right before it checks and
// creates its objects. A manifest this reconcile built already is
// answered with a copy of its objects (buildmemo.go).
func (c *updatingKubeClient) Build(reader io.Reader, validate bool) (kube.ResourceList, error) {
	in, err := io.ReadAll(reader)
	if err != nil {
		return nil, err
	}
	list, kept := c.builds.get(in, validate)
	if !kept {
		if list, err = c.interruptibleKubeClient.Build(bytes.NewReader(in), validate); err != nil {
			return list, err
		}
		c.builds.put(in, validate, list)
	}
	if c.cached == nil {
		return list, nil
	}
	var paths []string
	for _, info := range list {
		if info.Mapping == nil {
			continue
		}
		if obj, watched := c.cached(info); watched && obj == nil {
			paths = append(paths, objectPath(info))
		}
	}
	c.updates.NoteAbsent(paths)
	return list, nil
}

// keepBuild answers the next builds of manifest with list (buildKeeper).
func (c *updatingKubeClient) keepBuild(manifest []byte, validate bool, list kube.ResourceList) {
	c.builds.put(manifest, validate, list)
}

// KeptBuild returns a copy of the objects of manifest this reconcile
// built, or was told of (keepBuild), without parsing it; false when it
// has none.
func (c *updatingKubeClient) KeptBuild(manifest []byte) (kube.ResourceList, bool) {
	return c.builds.get(manifest, false)
}

// Create creates resources and records what each create left.
func (c *updatingKubeClient) Create(resources kube.ResourceList) (*kube.Result, error) {
	sent := contentDigests(resources)
	res, err := c.interruptibleKubeClient.Create(resources)
	if err != nil {
		c.forgetLeft(resources)
		return res, err
	}
	if res != nil {
		c.recordLeft(res.Created, sent, nil)
	}
	return res, nil
}

// Update patches (or replaces, or creates) the objects of target, deletes
// those of original that target lacks, and records the version each
// object was left at: Helm refreshes every object of target from the
// server, with the answer to its write or, when its patch was empty, with
// a read. The version of an object left alone makes no event and its
// record expires. An object of original the cache shows as the runtime's
// last write left it is not read from the API server (updates.go).
func (c *updatingKubeClient) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	sent := contentDigests(target)
	targets := make([]UpdateTarget, 0, len(target))
	answered := map[ObjectKey]string{} // the resourceVersion of each Current
	for _, info := range target {
		if info.Mapping == nil {
			continue
		}
		t := UpdateTarget{Key: keyOf(info), Path: objectPath(info)}
		if orig := original.Get(info); orig != nil {
			t.Current, answered[t.Key] = c.asLeft(t.Key, orig)
		}
		targets = append(targets, t)
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
		c.forgetLeft(res.Deleted)
	}
	if err != nil {
		c.forgetLeft(target)
		return res, err
	}
	if res != nil {
		c.recordLeft(res.Created, sent, nil)
		c.recordLeft(res.Updated, sent, answered)
	}
	return res, nil
}

// asLeft returns the live state of the object orig names as the runtime's
// last write left it, with the object's resourceVersion, when the cache
// shows it unchanged since and orig is the manifest object that write
// sent; nil otherwise (updates.go).
func (c *updatingKubeClient) asLeft(k ObjectKey, orig *resource.Info) ([]byte, string) {
	if c.cached == nil {
		return nil, ""
	}
	left, ok := c.updates.LeftBy(k)
	if !ok {
		return nil, ""
	}
	u, ok := orig.Object.(*unstructured.Unstructured)
	if !ok {
		return nil, ""
	}
	if d, ok := manifest.ContentDigest(u.Object); !ok || d != left.Sent {
		return nil, ""
	}
	live, _ := c.cached(orig)
	if live == nil || manifest.CachedDigest(live.Object) != left.Live {
		return nil, ""
	}
	obj := make(map[string]any, len(u.Object))
	for f, v := range u.Object {
		if f != "metadata" && f != "status" {
			obj[f] = v
		}
	}
	obj["metadata"] = live.Object["metadata"]
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, ""
	}
	return body, live.GetResourceVersion()
}

// recordLeft records what the writes of objects left: the manifest object
// each was sent as (sent, by key) and what the API server returned (each
// info's object, which Helm refreshed with it). An object whose update
// was answered with its state as left (answered: the resourceVersion of
// that answer) and not written since keeps its record.
func (c *updatingKubeClient) recordLeft(objects kube.ResourceList, sent, answered map[ObjectKey]string) {
	for _, info := range objects {
		if info.Mapping == nil {
			continue
		}
		k := keyOf(info)
		if rv, ok := answered[k]; ok && rv != "" && rv == info.ResourceVersion {
			continue
		}
		u, ok := info.Object.(*unstructured.Unstructured)
		live, digested := "", false
		if ok {
			live, digested = manifest.ContentDigest(u.Object)
		}
		if s := sent[k]; s != "" && digested {
			c.updates.SetLeft(k, Left{Sent: s, Live: live})
		} else {
			c.updates.ForgetLeft(k)
		}
	}
}

// forgetLeft forgets what writes of objects left.
func (c *updatingKubeClient) forgetLeft(objects kube.ResourceList) {
	keys := make([]ObjectKey, 0, len(objects))
	for _, info := range objects {
		if info.Mapping != nil {
			keys = append(keys, keyOf(info))
		}
	}
	c.updates.ForgetLeft(keys...)
}

// contentDigests returns the content digest of each object of list, as it
// is now (before a write refreshes it).
func contentDigests(list kube.ResourceList) map[ObjectKey]string {
	out := make(map[ObjectKey]string, len(list))
	for _, info := range list {
		if info.Mapping == nil {
			continue
		}
		if u, ok := info.Object.(*unstructured.Unstructured); ok {
			if d, ok := manifest.ContentDigest(u.Object); ok {
				out[keyOf(info)] = d
			}
		}
	}
	return out
}

func keyOf(info *resource.Info) ObjectKey {
	return ObjectKey{GroupKind: info.Mapping.GroupVersionKind.GroupKind(), Namespace: info.Namespace, Name: info.Name}
}

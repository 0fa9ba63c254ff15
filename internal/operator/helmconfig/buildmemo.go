package helmconfig

import (
	"bytes"

	"helm.sh/helm/v3/pkg/kube"
)

// Helm builds the same manifests again and again within one reconcile: an
// upgrade's dry-run validates the new manifest and builds the current and
// the new one, and the upgrade that follows does all three again, each a
// parse of every YAML document into objects. The action configuration's
// client is one reconcile's (ActionConfigFor), so it keeps what it built
// last and answers a build of the same bytes with a copy: Helm edits what
// it is given (its labels, the objects the API server returns), so the
// kept list is a copy too, never handed out.

// maxBuilds is how many builds a client keeps: an upgrade's current
// manifest, the chart's output the library's owner references parse, the
// post-rendered manifest they write (the new one), and a spare.
const maxBuilds = 4

// builtManifest is one build kept: its input and a private copy of its
// objects.
type builtManifest struct {
	manifest []byte
	validate bool
	list     kube.ResourceList
}

// buildMemo keeps one reconcile's last builds (not safe for concurrent
// use: a reconcile's actions run one after the other).
type buildMemo struct {
	builds []builtManifest
}

// get returns a copy of the objects built from manifest, if kept.
func (m *buildMemo) get(manifest []byte, validate bool) (kube.ResourceList, bool) {
	for _, b := range m.builds {
		if b.validate == validate && bytes.Equal(b.manifest, manifest) {
			return copyList(b.list), true
		}
	}
	return nil, false
}

// put keeps a copy of list, built from manifest, in place of a build of
// the same manifest, else of the oldest build when full.
func (m *buildMemo) put(manifest []byte, validate bool, list kube.ResourceList) {
	for i, b := range m.builds {
		if b.validate == validate && bytes.Equal(b.manifest, manifest) {
			m.builds[i].list = copyList(list)
			return
		}
	}
	if len(m.builds) == maxBuilds {
		m.builds = append(m.builds[:0], m.builds[1:]...)
	}
	m.builds = append(m.builds, builtManifest{manifest: manifest, validate: validate, list: copyList(list)})
}

// copyList returns list with every object deep-copied.
func copyList(list kube.ResourceList) kube.ResourceList {
	out := make(kube.ResourceList, len(list))
	for i, info := range list {
		c := *info
		if info.Object != nil {
			c.Object = info.Object.DeepCopyObject()
		}
		out[i] = &c
	}
	return out
}

package helmruntime

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// watchRecorder is a controller that records its watches.
type watchRecorder struct {
	watches int
	err     error
}

func (w *watchRecorder) Watch(source.Source) error {
	if w.err != nil {
		return w.err
	}
	w.watches++
	return nil
}

const keptManifest = `---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: db
  annotations:
    helm.sh/resource-policy: keep
---
apiVersion: v1
kind: Secret
metadata:
  name: db-replica
  annotations:
    helm.sh/resource-policy: keep
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  annotations:
    helm.sh/resource-policy: keep
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
---
kind: [not yaml
`

func TestKeptObjectWatcher(t *testing.T) {
	g := NewWithT(t)
	w := newKeptObjectWatcher(nil, schema.GroupKind{Group: "web.acme.com", Kind: "WebApp"})
	rel := release.Release{Name: "shop", Manifest: keptManifest}

	t.Log("before the controller exists there is nothing to watch with")
	g.Expect(w.Exec(nil, rel, logr.Discard())).To(MatchError(ContainSubstring("no controller")))

	t.Log("one watch per kind of kept object; objects without keep are the library's")
	ctrl := &watchRecorder{}
	g.Expect(w.setController(ctrl)).To(Succeed())
	g.Expect(w.Exec(nil, rel, logr.Discard())).To(Succeed())
	g.Expect(ctrl.watches).To(Equal(2)) // Secret, PersistentVolumeClaim
	g.Expect(w.watched).To(HaveKey(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}))
	g.Expect(w.watched).NotTo(HaveKey(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}))

	t.Log("the next release of the kind adds no watch")
	g.Expect(w.Exec(nil, rel, logr.Discard())).To(Succeed())
	g.Expect(ctrl.watches).To(Equal(2))

	t.Log("a watch that cannot start is an error, and is tried again next time")
	w2 := newKeptObjectWatcher(nil, schema.GroupKind{Kind: "WebApp"})
	failing := &watchRecorder{err: errors.New("no informer")}
	g.Expect(w2.setController(failing)).To(Succeed())
	g.Expect(w2.Exec(nil, rel, logr.Discard())).To(MatchError(ContainSubstring("no informer")))
	g.Expect(w2.watched).To(BeEmpty())
}

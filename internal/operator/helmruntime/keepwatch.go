package helmruntime

import (
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/operator-framework/helm-operator-plugins/pkg/manifestutil"
	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	sdkhandler "github.com/operator-framework/operator-lib/handler"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// keptObjectWatcher closes a gap in the library's dependent watches.
//
// Objects a chart marks helm.sh/resource-policy: keep get no owner
// reference (they must outlive the custom resource, and the garbage
// collector would delete them with it); the library marks them with owner
// annotations instead. Its dependent-resource hook, though, chooses one
// event handler per kind, from the first object of that kind it sees: when
// that object carries an owner reference, later kept objects of the kind
// (of any custom resource of the controller) are not watched at all, and a
// kept Secret deleted by hand comes back only with the next periodic
// resync. This post-release hook adds an annotation-based watch for every
// kind that has kept objects, once per kind. A duplicate watch only causes
// a duplicate enqueue, which the work queue folds into one.
type keptObjectWatcher struct {
	cache   cache.Cache
	ownerGK schema.GroupKind

	mu         sync.Mutex
	controller reconciler.ControllerSetup
	watched    map[schema.GroupVersionKind]bool
}

func newKeptObjectWatcher(c cache.Cache, ownerGK schema.GroupKind) *keptObjectWatcher {
	return &keptObjectWatcher{cache: c, ownerGK: ownerGK, watched: map[schema.GroupVersionKind]bool{}}
}

// setController is the reconciler.ControllerSetupFunc that hands the
// controller to the watcher.
func (w *keptObjectWatcher) setController(c reconciler.ControllerSetup) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.controller = c
	return nil
}

// Exec is the post-release hook: it watches the kinds of rel's kept objects.
func (w *keptObjectWatcher) Exec(_ *unstructured.Unstructured, rel release.Release, log logr.Logger) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.controller == nil {
		return errors.New("kept-object watcher has no controller")
	}
	for _, h := range manifest.Heads(rel.Manifest) {
		gvk := h.GroupVersionKind()
		if gvk.Empty() || w.watched[gvk] || !manifestutil.HasResourcePolicyKeep(h.Metadata.Annotations) {
			continue
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		err := w.controller.Watch(source.Kind[*unstructured.Unstructured](w.cache, obj,
			&sdkhandler.EnqueueRequestForAnnotation[*unstructured.Unstructured]{Type: w.ownerGK}))
		if err != nil {
			return fmt.Errorf("watch kept %s objects: %w", gvk, err)
		}
		w.watched[gvk] = true
		log.V(1).Info("Watching kept dependent objects by owner annotation", "dependentAPIVersion", gvk.GroupVersion().String(), "dependentKind", gvk.Kind)
	}
	return nil
}

package cachefilter

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/helmconfig"
)

func TestSpecChangeHandlerPassesOnlyUpdatesThatAskForWork(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"replicaCount": int64(1)},
		}}
		u.SetGroupVersionKind(nginxGVK)
		u.SetName("web")
		u.SetNamespace("team-a")
		u.SetResourceVersion("10")
		u.SetGeneration(1)
		u.SetLabels(map[string]string{"team": "a"})
		u.SetFinalizers([]string{"uninstall-helm-release"})
		return u
	}
	now := metav1.Now()
	tests := []struct {
		name   string
		edit   func(u *unstructured.Unstructured)
		passes bool
		resync bool
	}{
		{"the informer's resync (same resourceVersion)", func(*unstructured.Unstructured) {}, true, true},
		{"a spec edit", func(u *unstructured.Unstructured) {
			u.Object["spec"] = map[string]any{"replicaCount": int64(2)}
			u.SetGeneration(2)
		}, true, false},
		{"the deletion", func(u *unstructured.Unstructured) {
			u.SetDeletionTimestamp(&now)
			u.SetGeneration(2)
		}, true, false},
		{"a label edit", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "b"}) }, true, false},
		{"a label removed", func(u *unstructured.Unstructured) { u.SetLabels(nil) }, true, false},
		{"an annotation added", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"helm.sdk.operatorframework.io/reconcile-paused": "true"})
		}, true, false},
		{"the uninstall finalizer taken away", func(u *unstructured.Unstructured) { u.SetFinalizers(nil) }, true, false},
		{"a status write", func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Deployed"}}}
		}, false, false},
		{"a finalizer added", func(u *unstructured.Unstructured) {
			u.SetFinalizers([]string{"uninstall-helm-release", "example.com/other"})
		}, false, false},
		{"empty annotations written where there were none", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{})
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			old := base()
			updated := old.DeepCopy()
			tt.edit(updated)
			if !tt.resync {
				updated.SetResourceVersion("11")
			}
			rec := &recordingHandler{}
			specChangeHandler{rec}.OnUpdate(old, updated)
			want := 0
			if tt.passes {
				want = 1
			}
			g.Expect(rec.updates).To(Equal(want))
		})
	}
}

func TestSpecChangeHandlerPassesAddsAndDeletes(t *testing.T) {
	g := NewWithT(t)
	rec := &recordingHandler{}
	h := specChangeHandler{rec}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(nginxGVK)
	h.OnAdd(u, false)
	h.OnDelete(u)
	g.Expect(rec.adds).To(Equal(1))
	g.Expect(rec.deletes).To(Equal(1))
}

type recordingHandler struct {
	adds, updates, deletes int
}

var _ toolscache.ResourceEventHandler = (*recordingHandler)(nil)

func (r *recordingHandler) OnAdd(any, bool)   { r.adds++ }
func (r *recordingHandler) OnUpdate(any, any) { r.updates++ }
func (r *recordingHandler) OnDelete(any)      { r.deletes++ }

func TestReleaseWriteHandlerDropsOnlyHelmsWritesOfReleaseRecords(t *testing.T) {
	g := NewWithT(t)
	record := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.web.v1", Labels: map[string]string{"owner": "helm", "name": "web"}}}
	rendered := &unstructured.Unstructured{}
	rendered.SetAPIVersion("v1")
	rendered.SetKind("Secret")
	rendered.SetName("web-password")
	unstructuredRecord := &unstructured.Unstructured{}
	unstructuredRecord.SetName(record.Name)
	unstructuredRecord.SetLabels(record.Labels)

	withStatus := func(o client.Object, status string) client.Object {
		c := o.DeepCopyObject().(client.Object)
		l := map[string]string{}
		for k, v := range o.GetLabels() {
			l[k] = v
		}
		l["status"] = status
		c.SetLabels(l)
		return c
	}

	rec := &recordingHandler{}
	h := releaseWriteHandler{rec}
	h.OnAdd(record, false)
	h.OnUpdate(withStatus(record, "pending-install"), withStatus(record, "deployed"))
	h.OnAdd(unstructuredRecord, false)
	h.OnUpdate(withStatus(unstructuredRecord, "deployed"), withStatus(unstructuredRecord, "superseded"))
	g.Expect(*rec).To(Equal(recordingHandler{}), "Helm's writes of release records")

	edited := withStatus(record, "deployed")
	edited.GetLabels()["example.com/note"] = "by hand"
	h.OnUpdate(withStatus(record, "deployed"), edited)
	h.OnDelete(record)
	h.OnAdd(rendered, false)
	h.OnUpdate(rendered, rendered)
	g.Expect(*rec).To(Equal(recordingHandler{adds: 1, updates: 2, deletes: 1}))
}

func TestPrimaryEventsCacheFiltersEveryWatchOfTheLibrary(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := &primaryEventsCache{Cache: &informertest.FakeInformers{}, gvk: nginxGVK}
	kindOf := func(gvk schema.GroupVersionKind) client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
	for _, obj := range []client.Object{
		kindOf(nginxGVK),
		&corev1.Secret{},
		kindOf(secretGVK),
		kindOf(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}),
		&corev1.ConfigMap{},
	} {
		i, err := c.GetInformer(ctx, obj)
		g.Expect(err).NotTo(HaveOccurred())
		_, filtered := i.(*filteringInformer)
		g.Expect(filtered).To(BeTrue(), "%T %s", obj, obj.GetObjectKind().GroupVersionKind())
	}
}

func TestOwnWriteHandlerDropsTheKindsOwnWrites(t *testing.T) {
	g := NewWithT(t)
	writes := &helmconfig.Updates{}
	rec := &recordingHandler{}
	deployments := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	h := ownWriteHandler{rec, writes, deployments}
	at := func(version string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(deployments.WithVersion("v1"))
		u.SetNamespace("shop")
		u.SetName("web")
		u.SetResourceVersion(version)
		return u
	}
	key := helmconfig.ObjectKey{GroupKind: deployments, Namespace: "shop", Name: "web"}

	t.Log("an event that comes after the write was recorded")
	end := writes.Begin([]helmconfig.UpdateTarget{{Key: key}})
	end(map[helmconfig.ObjectKey]string{key: "2"})
	h.OnUpdate(at("1"), at("2"))
	g.Expect(*rec).To(Equal(recordingHandler{}))

	t.Log("one that comes while the object is being written waits, then is dropped")
	end = writes.Begin([]helmconfig.UpdateTarget{{Key: key}})
	h.OnUpdate(at("2"), at("3"))
	g.Expect(*rec).To(Equal(recordingHandler{}))
	end(map[helmconfig.ObjectKey]string{key: "3"})
	g.Expect(*rec).To(Equal(recordingHandler{}))

	t.Log("an edit by someone else passes, also when it comes during a write")
	h.OnUpdate(at("3"), at("4"))
	g.Expect(*rec).To(Equal(recordingHandler{updates: 1}))
	end = writes.Begin([]helmconfig.UpdateTarget{{Key: key}})
	h.OnUpdate(at("4"), at("5"))
	g.Expect(*rec).To(Equal(recordingHandler{updates: 1}))
	end(map[helmconfig.ObjectKey]string{key: "6"})
	g.Expect(*rec).To(Equal(recordingHandler{updates: 2}))

	t.Log("resyncs, and objects of other kinds, pass")
	h.OnUpdate(at("6"), at("6"))
	other := ownWriteHandler{rec, writes, schema.GroupKind{Kind: "ConfigMap"}}
	end = writes.Begin([]helmconfig.UpdateTarget{{Key: key}})
	end(map[helmconfig.ObjectKey]string{key: "7"})
	other.OnUpdate(at("6"), at("7"))
	g.Expect(*rec).To(Equal(recordingHandler{updates: 4}))
}

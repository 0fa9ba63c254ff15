// Package rotation rolls the Pods of the operator's workloads when a
// Secret or ConfigMap they read changes: a rotated API key, a new nginx
// configuration in an existing ConfigMap, a changed database password.
//
// Design: the sidecar patches the workload, not the release. A
// Deployment or StatefulSet that a resource of the operator owns and whose
// Pods read Secrets or ConfigMaps that its release does not render gets
// two annotations (package workloadrefs): on its metadata the checksum of
// the referenced data last seen, and on its Pod template the checksum the
// Pods were last rolled for. When the data changes, both are updated in
// one patch and the workload controller rolls the Pods once. No Helm
// release revision is made (the release's values did not change), and
// drift repair leaves the annotations alone: they are not in the
// release's manifest, and a Helm upgrade's three-way merge keeps fields
// the manifest does not set. A workload seen for the first time only gets
// its metadata annotation, so that a new or upgraded workload is not
// rolled twice.
//
// Cost: the sidecar watches Secrets and ConfigMaps as metadata only (no
// data in its cache) and reads the data of exactly the referenced objects
// from the API server, when one of them or the workload changes.
package rotation

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/acme/platform-operator/internal/operator/releaseidentity"
	"github.com/acme/platform-operator/internal/operator/workloadrefs"
)

// refIndex indexes workloads by the objects their Pods read
// (workloadrefs.Ref.ObjectKey).
const refIndex = "platform.acme.com/references"

// Helm's ownership annotations on every object of a release.
const (
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// workloadKind is one kind of workload the controller follows.
type workloadKind struct {
	name     string
	newObj   func() client.Object
	newList  func() client.ObjectList
	template func(client.Object) *corev1.PodTemplateSpec
	items    func(client.ObjectList) []client.Object
}

var kinds = []workloadKind{
	{
		name:     "deployment",
		newObj:   func() client.Object { return &appsv1.Deployment{} },
		newList:  func() client.ObjectList { return &appsv1.DeploymentList{} },
		template: func(o client.Object) *corev1.PodTemplateSpec { return &o.(*appsv1.Deployment).Spec.Template },
		items: func(l client.ObjectList) []client.Object {
			var out []client.Object
			for i := range l.(*appsv1.DeploymentList).Items {
				out = append(out, &l.(*appsv1.DeploymentList).Items[i])
			}
			return out
		},
	},
	{
		name:     "statefulset",
		newObj:   func() client.Object { return &appsv1.StatefulSet{} },
		newList:  func() client.ObjectList { return &appsv1.StatefulSetList{} },
		template: func(o client.Object) *corev1.PodTemplateSpec { return &o.(*appsv1.StatefulSet).Spec.Template },
		items: func(l client.ObjectList) []client.Object {
			var out []client.Object
			for i := range l.(*appsv1.StatefulSetList).Items {
				out = append(out, &l.(*appsv1.StatefulSetList).Items[i])
			}
			return out
		},
	},
}

// SetupWithManager adds one controller per workload kind. The workloads
// followed are those a resource of a kind in watchesFile owns.
func SetupWithManager(mgr ctrl.Manager, watchesFile string, writers *releaseidentity.Writers) error {
	ws, err := watches.Load(watchesFile)
	if err != nil {
		return fmt.Errorf("load watches file %q: %w", watchesFile, err)
	}
	owners := map[schema.GroupKind]bool{}
	for _, w := range ws {
		owners[w.GroupKind()] = true
	}
	for _, k := range kinds {
		r := &Reconciler{
			Client:   mgr.GetClient(),
			Reader:   mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorderFor("platform-operator-rotation"),
			Writers:  writers,
			kind:     k,
			owners:   owners,
		}
		if err := r.setup(mgr); err != nil {
			return err
		}
	}
	return nil
}

// Reconciler keeps one kind of workload's rotation annotations.
type Reconciler struct {
	Client   client.Client
	Reader   client.Reader // reads the referenced objects from the API server
	Recorder record.EventRecorder
	// Writers, when set, hands out the client that annotates a workload,
	// as its namespace's release identity; nil annotates with Client.
	Writers *releaseidentity.Writers
	kind    workloadKind
	owners  map[schema.GroupKind]bool
}

func (r *Reconciler) setup(mgr ctrl.Manager) error {
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, r.kind.newObj(), refIndex, func(o client.Object) []string {
		if !r.ours(o) {
			return nil
		}
		var keys []string
		for _, ref := range workloadrefs.FromPodSpec(&r.kind.template(o).Spec) {
			keys = append(keys, ref.ObjectKey())
		}
		return keys
	}); err != nil {
		return err
	}
	toWorkloads := func(kind string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			list := r.kind.newList()
			if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{refIndex: kind + "/" + o.GetName()}); err != nil {
				return nil
			}
			var reqs []reconcile.Request
			for _, w := range r.kind.items(list) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)})
			}
			return reqs
		})
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("rotation-"+r.kind.name).
		For(r.kind.newObj(), builder.WithPredicates(predicate.NewPredicateFuncs(r.ours))).
		WatchesMetadata(&corev1.Secret{}, toWorkloads(workloadrefs.Secret), builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WatchesMetadata(&corev1.ConfigMap{}, toWorkloads(workloadrefs.ConfigMap), builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Complete(r)
}

// ours reports whether o belongs to a release of the operator: a
// controller owner of a watched kind.
func (r *Reconciler) ours(o client.Object) bool {
	if o.GetAnnotations()[releaseNameAnnotation] == "" {
		return false
	}
	for _, ref := range o.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && r.owners[gv.WithKind(ref.Kind).GroupKind()] {
			return true
		}
	}
	return false
}

// Reconcile brings one workload's annotations up to date with the data
// its Pods read, rolling the Pods when that data changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	obj := r.kind.newObj()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil || !r.ours(obj) {
		return ctrl.Result{}, nil
	}
	tmpl := r.kind.template(obj)
	ann := obj.GetAnnotations()
	release, releaseNS := ann[releaseNameAnnotation], ann[releaseNamespaceAnnotation]
	// The release's own Secrets and ConfigMaps change with the release,
	// whose chart decides what rolls.
	own := func(o client.Object) bool {
		a := o.GetAnnotations()
		return a[releaseNameAnnotation] == release && a[releaseNamespaceAnnotation] == releaseNS
	}
	st, err := workloadrefs.Read(ctx, r.Reader, obj.GetNamespace(), workloadrefs.FromPodSpec(&tmpl.Spec), own)
	if err != nil {
		if apierrors.IsForbidden(err) {
			log.Error(err, "cannot read a referenced object")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	before := obj.DeepCopyObject().(client.Object)
	recorded := ann[workloadrefs.ChecksumAnnotation]
	set := func(m map[string]string, k, v string) map[string]string {
		if v == "" {
			delete(m, k)
			return m
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
		return m
	}
	checksum := ""
	if st.Followed > 0 {
		checksum = st.Checksum()
	}
	ann = set(ann, workloadrefs.ChecksumAnnotation, checksum)
	ann = set(ann, workloadrefs.MissingAnnotation, st.MissingText())
	obj.SetAnnotations(ann)
	roll := st.Followed > 0 && st.DataChanged(recorded)
	if roll {
		tmpl.Annotations = set(tmpl.Annotations, workloadrefs.ChecksumAnnotation, checksum)
	}
	if equalAnnotations(before.GetAnnotations(), obj.GetAnnotations()) && !roll {
		return ctrl.Result{}, nil
	}
	w := r.Client
	if r.Writers != nil {
		if w, _, err = r.Writers.For(ctx, obj.GetNamespace()); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := w.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, err
	}
	if roll {
		log.Info("Referenced data changed: rolling the Pods", "checksum", checksum)
		r.Recorder.Event(obj, corev1.EventTypeNormal, "ReferencesChanged",
			"a Secret or ConfigMap the Pods read changed: rolling them")
	}
	return ctrl.Result{}, nil
}

func equalAnnotations(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

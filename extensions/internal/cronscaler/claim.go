package cronscaler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
)

// Two owners of one replica count fight: each puts back what the other
// wrote. Before a CronScaler writes to its target it checks, in this
// order, that nobody else owns the count:
//
//  1. another CronScaler of the same target (the oldest one wins),
//  2. a HorizontalPodAutoscaler that scales the target,
//  3. the target exists,
//  4. the Helm release that created the target does not set the count in
//     its chart (its drift repair would put the chart's count back).
//
// The first three are cache lookups; the fourth reads the release's custom
// resource from the API server, and only for targets a release owns.

// How often a held CronScaler looks again when no watch tells it that the
// reason went away.
const (
	// recheckChart: the release's status (its manifest) is written after
	// the objects it renders, so a chart fixed by an upgrade is seen only
	// after the target's watch event.
	recheckChart = 30 * time.Second
	// recheckRelease: a release whose status has no manifest yet is being
	// installed.
	recheckRelease = 5 * time.Second
	// recheckUnwatched: a missing target of a kind the controller does not
	// watch.
	recheckUnwatched = time.Minute
)

// hold is why a CronScaler must not write to its target now.
type hold struct {
	reason, message string
	// alsoOn are objects that get the Warning Event too, with their own
	// message (the custom resource of a release whose chart sets the count).
	alsoOn []eventCall
	// quiet holds emit no Event: a short wait, not a problem.
	quiet bool
	// recheck is how soon to look again; 0 when a watch brings the
	// CronScaler back once the reason is gone.
	recheck time.Duration
}

// claim tells whether this CronScaler may write to its target: nil when it
// may, else why not.
func (r *Reconciler) claim(ctx context.Context, cs *autoscalingv1alpha1.CronScaler, t target) (*hold, error) {
	if h, err := r.rivalHold(ctx, cs, t); h != nil || err != nil {
		return h, err
	}
	if h, err := r.hpaHold(ctx, cs, t); h != nil || err != nil {
		return h, err
	}
	obj, h, err := r.targetMeta(ctx, t)
	if h != nil || err != nil || obj == nil {
		return h, err
	}
	return r.chartHold(ctx, cs, t, obj)
}

// rivalHold holds a CronScaler that is not the owner of its target among
// the CronScalers that name it.
func (r *Reconciler) rivalHold(ctx context.Context, cs *autoscalingv1alpha1.CronScaler, t target) (*hold, error) {
	gvk, name := t.ref()
	var list autoscalingv1alpha1.CronScalerList
	if err := r.List(ctx, &list, client.InNamespace(cs.Namespace),
		client.MatchingFields{targetIndex: targetKey(gvk.Group, gvk.Kind, name)}); err != nil {
		return nil, fmt.Errorf("listing the CronScalers of %s: %w", t.describe(), err)
	}
	owner := electOwner(cs, list.Items)
	if owner == cs.Name {
		return nil, nil
	}
	return &hold{
		reason: ReasonAmbiguousTarget,
		message: fmt.Sprintf("%s %s is already scaled by CronScaler %s/%s (the oldest CronScaler for it); this one does not touch it",
			gvk.Kind, name, cs.Namespace, owner),
	}, nil
}

// electOwner names the owner of a target among the CronScalers that scale
// it: the oldest by creationTimestamp, ties broken by the smaller name.
// self takes part whether or not rivals (read from a cache) has it yet;
// rivals being deleted take part too, since they may still restore.
func electOwner(self *autoscalingv1alpha1.CronScaler, rivals []autoscalingv1alpha1.CronScaler) string {
	owner, created := self.Name, self.CreationTimestamp.Time
	for i := range rivals {
		c := &rivals[i]
		t := c.CreationTimestamp.Time
		if t.Before(created) || (t.Equal(created) && c.Name < owner) {
			owner, created = c.Name, t
		}
	}
	return owner
}

// hpaHold holds a CronScaler whose target a HorizontalPodAutoscaler scales.
func (r *Reconciler) hpaHold(ctx context.Context, cs *autoscalingv1alpha1.CronScaler, t target) (*hold, error) {
	gvk, name := t.ref()
	if isHPA(gvk.GroupKind()) {
		return nil, nil
	}
	var list autoscalingv2.HorizontalPodAutoscalerList
	if err := r.List(ctx, &list, client.InNamespace(cs.Namespace),
		client.MatchingFields{hpaTargetIndex: targetKey(gvk.Group, gvk.Kind, name)}); err != nil {
		return nil, fmt.Errorf("listing the HorizontalPodAutoscalers of %s: %w", t.describe(), err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(list.Items))
	for _, h := range list.Items {
		names = append(names, h.Name)
	}
	slices.Sort(names)
	return &hold{
		reason: ReasonTargetManagedByHPA,
		message: fmt.Sprintf("%s %s is scaled by HorizontalPodAutoscaler %s/%s: point this CronScaler at the HPA instead "+
			"(scaleTargetRef apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, name: %s), its jobs then set the HPA's minReplicas; "+
			"this one does not touch the %s",
			gvk.Kind, name, cs.Namespace, strings.Join(names, ", "), names[0], gvk.Kind),
	}, nil
}

// targetMeta reads the target's metadata: from the cache for the kinds the
// controller watches (confirming a miss with the API server, which a cache
// just behind a new target would otherwise report), else from the API
// server. A missing target is a TargetNotFound hold. The metadata is nil,
// without error, when it cannot be read (unknown kind, no RBAC): the /scale
// request then says precisely what is wrong.
func (r *Reconciler) targetMeta(ctx context.Context, t target) (metav1.Object, *hold, error) {
	gvk, name := t.ref()
	key := client.ObjectKey{Namespace: t.namespace(), Name: name}
	var obj client.Object
	readers := []client.Reader{r.apiReader()}
	if isHPA(gvk.GroupKind()) {
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
		readers = []client.Reader{r.Client, r.apiReader()}
	} else {
		pom := &metav1.PartialObjectMetadata{}
		pom.SetGroupVersionKind(gvk)
		obj = pom
		if watchedKind(gvk.GroupKind()) {
			readers = []client.Reader{r.Client, r.apiReader()}
		}
	}
	var err error
	for _, rd := range readers {
		if err = rd.Get(ctx, key, obj); !apierrors.IsNotFound(err) {
			break
		}
	}
	switch {
	case err == nil:
		return obj, nil, nil
	case apierrors.IsNotFound(err):
		h := &hold{
			reason:  ReasonTargetNotFound,
			message: fmt.Sprintf("%s %s not found in namespace %s; it is scaled once it exists", gvk.Kind, name, key.Namespace),
		}
		if !watchedKind(gvk.GroupKind()) && !isHPA(gvk.GroupKind()) {
			h.recheck = recheckUnwatched
		}
		return nil, h, nil
	case meta.IsNoMatchError(err), apierrors.IsForbidden(err):
		return nil, nil, nil
	}
	return nil, nil, fmt.Errorf("reading %s: %w", t.describe(), err)
}

// chartHold holds a CronScaler whose target was created by a Helm release
// whose chart sets the count.
func (r *Reconciler) chartHold(ctx context.Context, cs *autoscalingv1alpha1.CronScaler, t target, obj metav1.Object) (*hold, error) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || !helmReleaseOwners[gv.WithKind(ref.Kind).GroupKind()] {
		return nil, nil
	}
	owner := &unstructured.Unstructured{}
	owner.SetAPIVersion(ref.APIVersion)
	owner.SetKind(ref.Kind)
	key := client.ObjectKey{Name: ref.Name}
	namespaced, err := r.IsObjectNamespaced(owner)
	if err != nil {
		return nil, fmt.Errorf("the owner %s %s of %s: %w", ref.Kind, ref.Name, t.describe(), err)
	}
	if namespaced {
		key.Namespace = t.namespace()
	}
	if err := r.apiReader().Get(ctx, key, owner); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil // being deleted: the target goes with it
		}
		return nil, fmt.Errorf("reading the owner %s %s of %s: %w", ref.Kind, ref.Name, t.describe(), err)
	}
	if owner.GetUID() != ref.UID {
		return nil, nil
	}
	ownerName := ref.Kind + " " + client.ObjectKeyFromObject(owner).String()
	manifest, found, _ := unstructured.NestedString(owner.Object, "status", "deployedRelease", "manifest")
	if !found {
		return &hold{
			reason: ReasonWaitingForRelease,
			message: fmt.Sprintf("%s belongs to %s, whose Helm release has no manifest in its status yet; "+
				"the CronScaler scales it once it can tell that the chart leaves the count alone", t.describe(), ownerName),
			quiet:   true,
			recheck: recheckRelease,
		}, nil
	}
	gvk, name := t.ref()
	field := countField(gvk.GroupKind())
	sets, err := manifestSetsField(manifest, gvk.GroupKind(), t.namespace(), name, field)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ownerName, err)
	}
	if !sets {
		return nil, nil
	}
	path := strings.Join(field, ".")
	return &hold{
		reason: ReasonReplicasSetByChart,
		message: fmt.Sprintf("%s %s belongs to %s, whose chart sets its %s: the release's drift repair would undo every scale. "+
			"Set externalReplicaControl: true on %s %s (or what its chart offers to leave the count to another controller); "+
			"this CronScaler does not touch it",
			gvk.Kind, name, ownerName, path, ref.Kind, ref.Name),
		alsoOn: []eventCall{{
			object: owner, eventType: corev1.EventTypeWarning, reason: ReasonReplicasSetByChart,
			message: fmt.Sprintf("CronScaler %s/%s cannot scale %s %s: this %s's chart sets its %s. "+
				"Set externalReplicaControl: true (or what the chart offers) to leave the count to the CronScaler",
				cs.Namespace, cs.Name, gvk.Kind, name, ref.Kind, path),
		}},
		recheck: recheckChart,
	}, nil
}

// holdOff reports a hold in the Ready condition and, when it is new (the
// condition said something else), in Warning Events.
func (r *Reconciler) holdOff(cs *autoscalingv1alpha1.CronScaler, ev record.EventRecorder, h *hold) {
	prev := meta.FindStatusCondition(cs.Status.Conditions, ConditionReady)
	r.setReady(cs, metav1.ConditionFalse, h.reason, h.message)
	if h.quiet || (prev != nil && prev.Status == metav1.ConditionFalse && prev.Reason == h.reason && prev.Message == h.message) {
		return
	}
	ev.Event(cs, corev1.EventTypeWarning, h.reason, h.message)
	emit(ev, h.alsoOn)
}

// apiReader reads from the API server, uncached.
func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader == nil {
		return r.Client
	}
	return r.APIReader
}

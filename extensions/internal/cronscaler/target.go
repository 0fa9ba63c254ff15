package cronscaler

import (
	"context"
	"errors"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
)

// errTargetNotFound and errTargetNotScalable classify target failures into
// condition reasons; they are wrapped with the details.
var (
	errTargetNotFound    = errors.New("target not found")
	errTargetNotScalable = errors.New("target not scalable")
)

// target is the replica count of one scale target, read and written the way
// its kind needs.
type target interface {
	// describe names the target for messages, e.g. "Deployment/web".
	describe() string
	// ref is the target's kind and name; namespace its namespace.
	ref() (schema.GroupVersionKind, string)
	namespace() string
	// replicas reads the current count.
	replicas(ctx context.Context) (int32, error)
	// setReplicas writes the count.
	setReplicas(ctx context.Context, n int32) error
	// swapReplicas writes to in one request if the count is from, and
	// reports whether it did: false (and no error) when the count is not
	// from, or when the kind cannot do it in one request.
	swapReplicas(ctx context.Context, from, to int32) (bool, error)
}

// hpaTarget is a HorizontalPodAutoscaler: the job sets minReplicas, raising
// maxReplicas when it would be below.
type hpaTarget struct {
	// c reads (the controller's cache); w writes, as the namespace's
	// release identity (Reconciler.Writers).
	c, w client.Client
	key  types.NamespacedName
}

// scaleTarget is anything with a /scale subresource.
type scaleTarget struct {
	// c reads; w writes, as hpaTarget's.
	c, w client.Client
	gvk  schema.GroupVersionKind
	key  types.NamespacedName
}

// isHPA tells whether a scaleTargetRef names a HorizontalPodAutoscaler.
func isHPA(gk schema.GroupKind) bool {
	return gk.Group == "autoscaling" && gk.Kind == "HorizontalPodAutoscaler"
}

// targetFor builds the target of a CronScaler, read with c and written
// with w.
func targetFor(c, w client.Client, cs *autoscalingv1alpha1.CronScaler) (target, error) {
	ref := cs.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: apiVersion %q: %w", errTargetNotScalable, ref.APIVersion, err)
	}
	key := types.NamespacedName{Namespace: cs.Namespace, Name: ref.Name}
	gvk := gv.WithKind(ref.Kind)
	if isHPA(gvk.GroupKind()) {
		return &hpaTarget{c: c, w: w, key: key}, nil
	}
	return &scaleTarget{c: c, w: w, gvk: gvk, key: key}, nil
}

func (t *scaleTarget) describe() string { return t.gvk.Kind + "/" + t.key.Name }

func (t *scaleTarget) ref() (schema.GroupVersionKind, string) { return t.gvk, t.key.Name }

func (t *scaleTarget) namespace() string { return t.key.Namespace }

// object is an empty unstructured object of the target's kind and name.
func (t *scaleTarget) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(t.gvk)
	u.SetNamespace(t.key.Namespace)
	u.SetName(t.key.Name)
	return u
}

func (t *scaleTarget) replicas(ctx context.Context) (int32, error) {
	scale := &unstructured.Unstructured{}
	scale.SetGroupVersionKind(schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"})
	err := t.c.SubResource("scale").Get(ctx, t.object(), scale)
	if err != nil {
		return 0, t.classify(ctx, err)
	}
	n, found, err := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	if err != nil {
		return 0, fmt.Errorf("%s: reading the scale: %w", t.describe(), err)
	}
	if !found {
		// Scale.spec.replicas is omitted when it is 0.
		n = 0
	}
	return int32(n), nil
}

func (t *scaleTarget) setReplicas(ctx context.Context, n int32) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n))
	if err := t.w.SubResource("scale").Patch(ctx, t.object(), patch); err != nil {
		return t.classify(ctx, err)
	}
	return nil
}

// swapReplicas is a JSON patch of the /scale subresource that tests the
// count before it replaces it: the API server applies both or neither.
func (t *scaleTarget) swapReplicas(ctx context.Context, from, to int32) (bool, error) {
	patch := client.RawPatch(types.JSONPatchType, fmt.Appendf(nil,
		`[{"op":"test","path":"/spec/replicas","value":%d},{"op":"replace","path":"/spec/replicas","value":%d}]`, from, to))
	err := t.w.SubResource("scale").Patch(ctx, t.object(), patch)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsInvalid(err):
		// The test failed (the count is not from, or unset because it is
		// 0); the caller reads the count and writes it the plain way,
		// which also reports any other invalid patch precisely.
		return false, nil
	}
	return false, t.classify(ctx, err)
}

// classify turns a failed /scale call into a precise error: unknown kind,
// missing object, or an object without a /scale subresource.
func (t *scaleTarget) classify(ctx context.Context, err error) error {
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("%w: the API server has no kind %s in %s", errTargetNotScalable, t.gvk.Kind, t.gvk.GroupVersion())
	}
	if apierrors.IsForbidden(err) {
		// RBAC is checked before existence: the roles grant /scale only
		// for the kinds known to be scalable.
		return fmt.Errorf("%w: %s %s: access to its /scale subresource is forbidden: the kind has no /scale subresource, or the namespace's release identity (or, without one, the operator's ClusterRole) lacks get and patch on its <resource>/scale: %s",
			errTargetNotScalable, t.gvk.Kind, t.key.Name, err.Error())
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s: %w", t.describe(), err)
	}
	// NotFound is either the object or its /scale subresource.
	if getErr := t.c.Get(ctx, t.key, t.object()); apierrors.IsNotFound(getErr) {
		return fmt.Errorf("%w: %s %s not found in namespace %s", errTargetNotFound, t.gvk.Kind, t.key.Name, t.key.Namespace)
	} else if getErr != nil {
		return fmt.Errorf("%s: %w", t.describe(), getErr)
	}
	return fmt.Errorf("%w: %s %s has no /scale subresource", errTargetNotScalable, t.gvk.GroupKind(), t.key.Name)
}

func (t *hpaTarget) describe() string { return "HorizontalPodAutoscaler/" + t.key.Name }

func (t *hpaTarget) ref() (schema.GroupVersionKind, string) {
	return autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), t.key.Name
}

func (t *hpaTarget) namespace() string { return t.key.Namespace }

func (t *hpaTarget) get(ctx context.Context) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := t.c.Get(ctx, t.key, hpa); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: HorizontalPodAutoscaler %s not found in namespace %s", errTargetNotFound, t.key.Name, t.key.Namespace)
		}
		return nil, fmt.Errorf("%s: %w", t.describe(), err)
	}
	return hpa, nil
}

// replicas is the HPA's minReplicas (1 when unset, the API default).
func (t *hpaTarget) replicas(ctx context.Context) (int32, error) {
	hpa, err := t.get(ctx)
	if err != nil {
		return 0, err
	}
	return minReplicas(hpa), nil
}

func minReplicas(hpa *autoscalingv2.HorizontalPodAutoscaler) int32 {
	if hpa.Spec.MinReplicas == nil {
		return 1
	}
	return *hpa.Spec.MinReplicas
}

// setReplicas sets minReplicas to n, raising maxReplicas to n if it is
// lower.
func (t *hpaTarget) setReplicas(ctx context.Context, n int32) error {
	_, err := t.setBounds(ctx, n, 0)
	return err
}

// swapReplicas is not done in one request for an HPA: raising maxReplicas
// needs the object.
func (t *hpaTarget) swapReplicas(context.Context, int32, int32) (bool, error) { return false, nil }

// setBounds sets minReplicas to min and maxReplicas to max when max > 0,
// else raises maxReplicas to min if needed. It returns the maxReplicas the
// HPA had before.
func (t *hpaTarget) setBounds(ctx context.Context, min, max int32) (int32, error) {
	hpa, err := t.get(ctx)
	if err != nil {
		return 0, err
	}
	before := hpa.DeepCopy()
	oldMax := hpa.Spec.MaxReplicas
	hpa.Spec.MinReplicas = &min
	switch {
	case max > 0:
		hpa.Spec.MaxReplicas = max
	case hpa.Spec.MaxReplicas < min:
		hpa.Spec.MaxReplicas = min
	}
	if err := t.w.Patch(ctx, hpa, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return 0, fmt.Errorf("%s: %w", t.describe(), err)
	}
	return oldMax, nil
}

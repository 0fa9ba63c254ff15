package cronscaler

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
)

// TargetClaims is the admission check of CronScalers: it refuses one whose
// target another CronScaler scales already, or that a
// HorizontalPodAutoscaler manages, the first two reasons the controller
// would hold it for (see claim). It reads the manager's cache, with the
// indexes SetupWithManager registers; the controller's hold stays the
// defence for what the cache had not seen yet.
type TargetClaims struct {
	Client client.Client
}

// Check returns what is wrong with cs; old is the stored CronScaler of an
// update, nil on create. An update that keeps the target passes: whoever
// scales it was settled when it was first set.
func (c TargetClaims) Check(ctx context.Context, cs, old *autoscalingv1alpha1.CronScaler) (field.ErrorList, error) {
	if old != nil && old.Spec.ScaleTargetRef == cs.Spec.ScaleTargetRef {
		return nil, nil
	}
	path := field.NewPath("spec", "scaleTargetRef")
	t, err := targetFor(c.Client, c.Client, cs) // only read
	if err != nil {
		return field.ErrorList{field.Invalid(path.Child("apiVersion"), cs.Spec.ScaleTargetRef.APIVersion, err.Error())}, nil
	}
	gvk, name := t.ref()
	var list autoscalingv1alpha1.CronScalerList
	if err := c.Client.List(ctx, &list, client.InNamespace(cs.Namespace),
		client.MatchingFields{targetIndex: targetKey(gvk.Group, gvk.Kind, name)}); err != nil {
		return nil, fmt.Errorf("listing the CronScalers of %s: %w", t.describe(), err)
	}
	var rivals []string
	for _, other := range list.Items {
		if other.Name != cs.Name {
			rivals = append(rivals, other.Name)
		}
	}
	if len(rivals) > 0 {
		slices.Sort(rivals)
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
			"%s %s is already scaled by CronScaler %s/%s; a target has one CronScaler: add these schedules to that one, or delete it first",
			gvk.Kind, name, cs.Namespace, strings.Join(rivals, ", ")))}, nil
	}
	r := &Reconciler{Client: c.Client}
	h, err := r.hpaHold(ctx, cs, t)
	if err != nil || h == nil {
		return nil, err
	}
	return field.ErrorList{field.Forbidden(path, h.message)}, nil
}

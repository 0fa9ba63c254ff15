// Package admission is the validating admission webhook of the sidecar:
// the third part of the operator's APIs, next to the CRD schemas and the
// controllers. The schemas refuse what is malformed; the webhook refuses,
// at `kubectl apply`, what depends on other objects or on the chart, and
// the annotations no schema covers:
//
//   - a resource of a kind the runtime reconciles from a chart whose
//     remediation annotations (platform.acme.com/ready-timeout,
//     platform.acme.com/remediation) do not parse, the rule the runtime
//     reads them by (watchconfig.Remediation.For);
//   - a release name another resource already owns or claims, or a
//     release installed by hand (admissioncheck.Checker);
//   - a spec.valuesFrom that names a Secret or ConfigMap the requesting
//     user may not get (ValuesFromAccess), or, not optional, one that does
//     not exist or lacks the key (admissioncheck.Checker);
//   - a chart version pinned (platform.acme.com/chart-version) that the
//     kind does not ship (admissioncheck.Checker, by the runtime's rule,
//     watchconfig.ChartVersions.CheckPin);
//   - a spec the kind's chart (the pinned version, else the default) does
//     not render with, rendered exactly as the runtime would, or renders
//     into a release whose record is larger than a Secret may hold
//     (admissioncheck.Checker);
//   - a rendered object that exists and belongs to another release, or to
//     none, and a rendered Ingress host another tenant serves (--unique-hosts;
//     admissioncheck.Checker asks package claims);
//   - a CronScaler whose target another CronScaler or an HPA scales
//     (cronscaler.TargetClaims);
//   - a NamespaceTenant whose namespace another tenant claims
//     (tenant.NamespaceClaims), or that exists and is not its own (the
//     chart's lookup, when it is rendered).
//
// The runtime and the controllers keep their own checks, for resources the
// webhook did not see (it was down, or they predate it).
//
// Only creates, spec changes and edits of those annotations are
// validated; an update that sets only remediation annotations is checked
// for them alone, without the chart's render; one that sets the chart
// version pin is checked whole, since the pinned chart must render with
// the spec. An update that keeps the spec and them
// (finalizers, labels, other annotations) or of a resource being deleted
// always passes, and the webhook configuration does not even send those
// (its matchConditions), so that a webhook that is down never blocks a
// delete.
package admission

import (
	"context"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/extensions/internal/cronscaler"
	"github.com/acme/platform-operator/extensions/internal/tenant"
	"github.com/acme/platform-operator/internal/operator/admissioncheck"
)

// Validator answers the admission requests of every kind of ours.
type Validator struct {
	Check   *admissioncheck.Checker
	Targets cronscaler.TargetClaims
	Tenants tenant.NamespaceClaims
	// Access refuses a spec.valuesFrom that names an object the
	// requesting user may not get.
	Access ValuesFromAccess
}

var _ admission.Handler = (*Validator)(nil)

// Handle validates one create or update.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(req.Object.Raw); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old *unstructured.Unstructured
	// render: the spec, or the chart version it renders with, changes.
	render := true
	if req.Operation == admissionv1.Update {
		old = &unstructured.Unstructured{}
		if err := old.UnmarshalJSON(req.OldObject.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if obj.GetDeletionTimestamp() != nil {
			return admission.Allowed("")
		}
		render = !equality.Semantic.DeepEqual(obj.Object["spec"], old.Object["spec"]) || pinSet(old, obj)
		if !render && !remediationSet(old, obj) {
			return admission.Allowed("")
		}
	}
	if v.Check.Reconciles(obj) {
		if errs := remediationErrors(obj); len(errs) > 0 {
			return refuse(obj, errs)
		}
	}
	if !render {
		return admission.Allowed("")
	}
	if v.Check.Reconciles(obj) {
		errs, err := v.Access.Check(ctx, req.UserInfo, obj)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if len(errs) > 0 {
			return refuse(obj, errs)
		}
	}
	errs, warnings, err := v.check(ctx, obj, old)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if len(errs) == 0 {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	return refuse(obj, errs)
}

// refuse is the answer that refuses obj for errs.
func refuse(obj *unstructured.Unstructured, errs field.ErrorList) admission.Response {
	status := apierrors.NewInvalid(obj.GroupVersionKind().GroupKind(), obj.GetName(), errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// check runs the checks of obj's kind: what refuses it, and warnings.
func (v *Validator) check(ctx context.Context, obj, old *unstructured.Unstructured) (field.ErrorList, []string, error) {
	switch obj.GroupVersionKind().GroupKind() {
	case autoscalingv1alpha1.GroupVersion.WithKind("CronScaler").GroupKind():
		cs, err := toCronScaler(obj)
		if err != nil {
			return nil, nil, err
		}
		var oldCS *autoscalingv1alpha1.CronScaler
		if old != nil {
			if oldCS, err = toCronScaler(old); err != nil {
				return nil, nil, err
			}
		}
		errs, err := v.Targets.Check(ctx, cs, oldCS)
		return errs, nil, err
	case tenant.GVK.GroupKind():
		errs, err := v.Tenants.Check(ctx, obj)
		if err != nil || len(errs) > 0 {
			return errs, nil, err
		}
	}
	return v.Check.Check(ctx, obj, old)
}

func toCronScaler(u *unstructured.Unstructured) (*autoscalingv1alpha1.CronScaler, error) {
	cs := &autoscalingv1alpha1.CronScaler{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cs); err != nil {
		return nil, err
	}
	return cs, nil
}

package admission

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/admissioncheck"
	"github.com/acme/platform-operator/internal/operator/release"
)

// ValuesFromAccess refuses a resource whose spec.valuesFrom names a
// Secret or ConfigMap the requesting user may not get: the operator reads
// them with its own identity, which may read more than the tenant, so the
// webhook is what keeps a tenant from reading, through a release, what it
// could not read itself. It asks the API server with a
// SubjectAccessReview for the request's user, groups and extra.
type ValuesFromAccess struct {
	// Client creates SubjectAccessReviews.
	Client client.Client
}

// Check returns the entries of obj's valuesFrom that user may not read
// (and a malformed valuesFrom, as the runtime would refuse it).
func (a ValuesFromAccess) Check(ctx context.Context, user authenticationv1.UserInfo, obj *unstructured.Unstructured) (field.ErrorList, error) {
	spec, _ := obj.Object["spec"].(map[string]interface{})
	refs, err := release.ParseValuesFrom(spec)
	if err != nil {
		if errs, _, ok := admissioncheck.ValuesFromAnswer(err); ok {
			return errs, nil
		}
		return nil, err
	}
	if len(refs) == 0 {
		return nil, nil
	}
	base := field.NewPath("spec", release.ValuesFromField)
	if obj.GetNamespace() == "" {
		return field.ErrorList{field.Forbidden(base, "a cluster-scoped object has no namespace to take values from")}, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	var errs field.ErrorList
	for i, ref := range refs {
		resource := "secrets"
		if ref.Kind == release.SourceConfigMap {
			resource = "configmaps"
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: obj.GetNamespace(), Verb: "get", Resource: resource, Name: ref.Name,
			},
		}}
		if err := a.Client.Create(ctx, sar); err != nil {
			return nil, fmt.Errorf("ask whether %s may get %s %s/%s: %w", user.Username, ref.Kind, obj.GetNamespace(), ref.Name, err)
		}
		if !sar.Status.Allowed {
			errs = append(errs, field.Forbidden(base.Index(i).Child("name"), fmt.Sprintf(
				"%s may not get %s %s in namespace %s: valuesFrom takes values only from objects the user who applies the resource can read",
				user.Username, ref.Kind, ref.Name, obj.GetNamespace())))
		}
	}
	return errs, nil
}

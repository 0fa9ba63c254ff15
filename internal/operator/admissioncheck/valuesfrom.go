package admissioncheck

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acme/platform-operator/internal/operator/release"
)

// valuesFrom is the reader of the Secrets and ConfigMaps obj's
// spec.valuesFrom names, as the runtime reads them (release.SourceReader),
// with the webhook's identity: the webhook has checked before that the
// requesting user may get each of them. A cluster-scoped kind has none.
func (p *Checker) valuesFrom(ctx context.Context, k *checkedKind, obj *unstructured.Unstructured) release.ReadSource {
	if k.clusterScoped {
		return nil
	}
	return release.SourceReader(ctx, p.reader, obj.GetNamespace())
}

// ValuesFromAnswer is the answer to a render that stopped at valuesFrom:
// a malformed entry, or a missing object or key that is not optional,
// refuses the resource at the entry's path; an object the webhook itself
// may not read leaves the values unchecked, with a warning (the runtime
// reads with the same identity and will say so in a condition).
func ValuesFromAnswer(err error) (field.ErrorList, []string, bool) {
	var vf *release.ValuesFromError
	if errors.As(err, &vf) {
		p := field.NewPath("spec", release.ValuesFromField)
		if vf.Index >= 0 {
			p = p.Index(vf.Index)
		}
		if vf.Field != "" {
			p = p.Child(vf.Field)
		}
		return field.ErrorList{{Type: field.ErrorTypeInvalid, Field: p.String(), BadValue: field.OmitValueType{}, Detail: vf.Msg}}, nil, true
	}
	if apierrors.IsForbidden(err) {
		return nil, []string{"the admission webhook may not read a Secret or ConfigMap that spec.valuesFrom names, " +
			"so the chart was not rendered with these values: " + err.Error()}, true
	}
	return nil, nil, false
}

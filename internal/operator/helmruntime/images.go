package helmruntime

import (
	"context"
	"errors"

	"github.com/operator-framework/helm-operator-plugins/pkg/values"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/acme/platform-operator/internal/operator/release"
)

// imageDefaultsTranslator is the values.Translator of a kind with image
// defaults (watches.yaml imageDefaults, from the operator's RELATED_IMAGE_*
// variables): the values of next (the spec when nil), with the default
// image set on every image block the spec leaves unset. The defaults are
// the operator's, not the resource's: an operator whose variables changed
// renders new manifests, and each release that runs a default is upgraded
// once; a resource that chose its image is not.
type imageDefaultsTranslator struct {
	next   values.Translator
	images []release.ImageDefault
}

func (t imageDefaultsTranslator) Translate(ctx context.Context, obj *unstructured.Unstructured) (chartutil.Values, error) {
	var vals chartutil.Values
	if t.next != nil {
		v, err := t.next.Translate(ctx, obj)
		if err != nil {
			return nil, err
		}
		vals = v
	} else {
		spec, ok := obj.Object["spec"].(map[string]interface{})
		if !ok && obj.Object["spec"] != nil {
			return nil, errors.New("spec must be a map")
		}
		// A copy: the object is written back to the API server later on.
		vals = runtime.DeepCopyJSON(spec)
		if vals == nil {
			vals = chartutil.Values{}
		}
	}
	if err := release.ApplyImageDefaults(vals, t.images); err != nil {
		return nil, err
	}
	return vals, nil
}

// describeImageDefaults renders image defaults for logs: "path=image".
func describeImageDefaults(ds []release.ImageDefault) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.Path+"="+d.Image.String())
	}
	return out
}

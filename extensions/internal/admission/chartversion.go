package admission

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/acme/platform-operator/internal/operator/rollout"
)

// pinAnnotations is the chart version pin (rollout.PinAnnotation), which
// admissioncheck.Checker checks against the versions the kind ships and
// renders the resource with. The matchConditions of
// config/webhook/manifests.yaml name it with the remediation annotations.
var pinAnnotations = []string{rollout.PinAnnotation}

// pinSet reports whether an update from old to obj adds the pin or
// changes it. Removing it needs no check of its own: the release goes
// back to the kind's default version, as a rollout moves it.
func pinSet(old, obj *unstructured.Unstructured) bool {
	return annotationsSet(old, obj, pinAnnotations)
}

package admission

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// remediationAnnotations are the annotations of a resource's remediation
// that can be wrong (watchconfig.Remediation.For); the retry annotation
// takes any value. The matchConditions of config/webhook/manifests.yaml
// name the same ones.
var remediationAnnotations = []string{watchconfig.ReadyTimeoutAnnotation, watchconfig.RemediationAnnotation, watchconfig.RetriesAnnotation, watchconfig.TestAnnotation, watchconfig.InstallRemediationAnnotation}

// remediationErrors refuses each remediation annotation of obj that does
// not parse, with the runtime's message.
func remediationErrors(obj *unstructured.Unstructured) field.ErrorList {
	annotations := obj.GetAnnotations()
	var errs field.ErrorList
	for _, name := range remediationAnnotations {
		value, ok := annotations[name]
		if !ok {
			continue
		}
		if _, err := watchconfig.DefaultRemediation().For(map[string]string{name: value}); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(name), value, err.Error()))
		}
	}
	return errs
}

// remediationSet reports whether an update from old to obj sets a
// remediation annotation to a value it did not have (adds or edits it),
// as the webhook configuration's matchConditions do. Removing one needs
// no check: the resource falls back to its kind's remediation.
func remediationSet(old, obj *unstructured.Unstructured) bool {
	return annotationsSet(old, obj, remediationAnnotations)
}

// annotationsSet reports whether an update from old to obj sets one of
// names to a value it did not have.
func annotationsSet(old, obj *unstructured.Unstructured, names []string) bool {
	before, after := old.GetAnnotations(), obj.GetAnnotations()
	for _, name := range names {
		value, ok := after[name]
		if !ok {
			continue
		}
		if was, had := before[name]; !had || was != value {
			return true
		}
	}
	return false
}

// Package v1alpha1 holds the autoscaling.acme.com/v1alpha1 API of the
// extensions sidecar: CronScaler, scheduled scaling of anything with a /scale
// subresource.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.acme.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "autoscaling.acme.com", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

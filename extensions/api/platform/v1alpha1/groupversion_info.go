// Package v1alpha1 holds the platform.acme.com/v1alpha1 API of the
// operator itself: ChartRollout, the progress of one chart version
// through the releases of one kind.
//
// +kubebuilder:object:generate=true
// +groupName=platform.acme.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "platform.acme.com", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

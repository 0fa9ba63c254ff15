package testkit

import "k8s.io/apimachinery/pkg/runtime/schema"

// The operator's kinds, as the suites read them (unstructured).
var (
	NginxGVK           = schema.GroupVersionKind{Group: "web.acme.com", Version: "v1alpha1", Kind: "Nginx"}
	WebAppGVK          = schema.GroupVersionKind{Group: "web.acme.com", Version: "v1alpha1", Kind: "WebApp"}
	NamespaceTenantGVK = schema.GroupVersionKind{Group: "tenancy.acme.com", Version: "v1alpha1", Kind: "NamespaceTenant"}
	CronScalerGVK      = schema.GroupVersionKind{Group: "autoscaling.acme.com", Version: "v1alpha1", Kind: "CronScaler"}
)

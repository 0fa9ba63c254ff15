// Package tenant holds the sidecar's work on NamespaceTenant objects that the
// namespace-tenant chart cannot express: a finalizer that keeps a tenant
// until its namespace is really gone, and lifecycle notifications (created,
// deleted) to an external system over a webhook.
//
// The Helm runtime owns the tenant's .status and rewrites it wholesale, so
// this package never writes it: it reports through Events and records what
// it has done in annotations.
package tenant

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GVK is the NamespaceTenant kind.
var GVK = schema.GroupVersionKind{Group: "tenancy.acme.com", Version: "v1alpha1", Kind: "NamespaceTenant"}

const (
	// Finalizer keeps a deleted NamespaceTenant until its namespace is gone
	// and the deleted event is delivered.
	Finalizer = "tenancy.acme.com/finalizer"
	// SkipFinalizerAnnotation set to "true" releases a tenant whose
	// finalizer cannot complete (a webhook that never answers, a namespace
	// stuck in Terminating): the finalizer is removed at once.
	SkipFinalizerAnnotation = "tenancy.acme.com/skip-finalizer"
	// CreatedEventAnnotation records when the created event was delivered
	// (RFC 3339), so that it is sent once per tenant.
	CreatedEventAnnotation = "tenancy.acme.com/created-event-delivered"
	// TenantLabel is the label the chart puts on the tenant's objects,
	// naming the tenant.
	TenantLabel = "tenancy.acme.com/tenant"
)

// Event reasons of the tenant finalizer, as they appear in
// `kubectl describe namespacetenant` and `kubectl get events`.
const (
	ReasonFinalizerAdded      = "FinalizerAdded"
	ReasonWaitingForNamespace = "WaitingForNamespace"
	ReasonNotified            = "WebhookDelivered"
	ReasonNotifyFailed        = "WebhookFailed"
	ReasonFinalizerSkipped    = "FinalizerSkipped"
	ReasonFinalized           = "Finalized"
)

// Tenant is the part of a NamespaceTenant the sidecar reads.
type Tenant struct {
	*unstructured.Unstructured
}

// NewObject returns an empty NamespaceTenant to read into.
func NewObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK)
	return u
}

// NamespaceName is spec.namespaceName.
func (t Tenant) NamespaceName() string {
	s, _, _ := unstructured.NestedString(t.Object, "spec", "namespaceName")
	return s
}

// Tier is spec.deploymentTier, "dev" when unset (the CRD's default).
func (t Tenant) Tier() string {
	s, _, _ := unstructured.NestedString(t.Object, "spec", "deploymentTier")
	if s == "" {
		return "dev"
	}
	return s
}

// AdminUsers are spec.adminUsername followed by
// spec.additionalAdmins.users, without duplicates.
func (t Tenant) AdminUsers() []string {
	first, _, _ := unstructured.NestedString(t.Object, "spec", "adminUsername")
	more, _, _ := unstructured.NestedStringSlice(t.Object, "spec", "additionalAdmins", "users")
	return uniq(append([]string{first}, more...))
}

// AdminGroups are spec.additionalAdmins.groups.
func (t Tenant) AdminGroups() []string {
	groups, _, _ := unstructured.NestedStringSlice(t.Object, "spec", "additionalAdmins", "groups")
	return uniq(groups)
}

// SkipFinalizer reports whether an admin asked to release the tenant.
func (t Tenant) SkipFinalizer() bool {
	return t.GetAnnotations()[SkipFinalizerAnnotation] == "true"
}

func uniq(in []string) []string {
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for _, s := range in {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

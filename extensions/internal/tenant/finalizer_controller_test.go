package tenant

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestOwnerTenant(t *testing.T) {
	tenantRef := metav1.OwnerReference{APIVersion: "tenancy.acme.com/v1alpha1", Kind: "NamespaceTenant", Name: "team-x", UID: "u1"}
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		want []reconcile.Request
	}{
		// The owner reference the Helm runtime sets maps to the tenant.
		{"tenant owner", []metav1.OwnerReference{tenantRef}, []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "team-x"}}}},
		// Namespaces without owners are ignored.
		{"no owner", nil, nil},
		// Another kind, or the same kind in another group, is ignored.
		{"other kind", []metav1.OwnerReference{{APIVersion: "web.acme.com/v1alpha1", Kind: "Nginx", Name: "team-x"}}, nil},
		{"other group", []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "NamespaceTenant", Name: "team-x"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app-y", OwnerReferences: tc.refs}}
			NewWithT(t).Expect(ownerTenant(context.Background(), ns)).To(Equal(tc.want))
		})
	}
}

package e2e

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// expectRefusedAtApply applies a resource of gvk named name in namespace ns
// with spec (YAML indented under "spec:") using kubectl, and expects the
// API server to refuse it with a message containing want, leaving no
// object behind.
func expectRefusedAtApply(t *testing.T, gvk schema.GroupVersionKind, ns, name, spec, want string) {
	t.Helper()
	g := NewWithT(t)
	manifest := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  %s\n",
		gvk.GroupVersion(), gvk.Kind, name, ns, spec)
	out, err := env.KubectlIn(manifest, "apply", "-f", "-")
	g.Expect(err).To(HaveOccurred(), "kubectl apply accepted an invalid spec: %s", out)
	g.Expect(out).To(ContainSubstring(want))
	_, getErr := env.Get(context.Background(), gvk, ns, name)
	g.Expect(apierrors.IsNotFound(getErr)).To(BeTrue(), "the invalid resource exists")
}

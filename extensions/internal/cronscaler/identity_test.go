package cronscaler

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/internal/operator/releaseidentity"
)

// TestReconcileScalesAsTheNamespaceIdentity: with a managed release
// identity, the controller scales a target as that ServiceAccount of the
// target's namespace, which it creates bound to the deployer role: while
// the role grants nothing, the scale is refused by the API server naming
// the ServiceAccount and the scale subresource; once the role grants
// deployments/scale, the target is scaled.
func TestReconcileScalesAsTheNamespaceIdentity(t *testing.T) {
	c := needAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	const ns, role = "identity", "identity-test-release-deployer"
	namespace(g, c, ns)
	g.Expect(c.Create(ctx, deployment(ns, "web", 2))).To(Succeed())
	cs := deploymentScaler(ns, "web", autoscalingv1alpha1.ScheduleJob{Name: "up", Schedule: "0 8 * * *", Replicas: 4})
	g.Expect(c.Create(ctx, cs)).To(Succeed())
	writers := &releaseidentity.Writers{
		Own: c, Namespaces: c, Config: suite.cfg, Options: client.Options{Scheme: suite.scheme},
		Managed: releaseidentity.Options{ServiceAccount: "platform-operator-release", DeployerRole: role}.Managed(),
	}
	r := &Reconciler{Client: c, Recorder: record.NewFakeRecorder(100), Writers: writers,
		Clock: clocktesting.NewFakePassiveClock(at("2026-11-23T09:00:00Z"))}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cs)}

	t.Log("the deployer role does not exist yet: refused, as the ServiceAccount")
	_, err := r.Reconcile(ctx, req)
	g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf(
		`User "system:serviceaccount:%s:platform-operator-release" cannot patch resource "deployments/scale"`, ns))))
	g.Expect(replicasOf(g, c, ns, "web")).To(Equal(int32(2)))
	binding := &rbacv1.RoleBinding{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "platform-operator-release"}, binding)).To(Succeed())
	g.Expect(binding.RoleRef.Name).To(Equal(role))

	t.Log("the role grants deployments/scale: scaled")
	g.Expect(c.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"get", "update", "patch"}}},
	})).To(Succeed())
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}})
	})
	g.Eventually(func(g Gomega) {
		_, err := r.Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(replicasOf(g, c, ns, "web")).To(Equal(int32(4)))
	}).Should(Succeed())
}

// replicasOf reads the spec.replicas of the Deployment ns/name.
func replicasOf(g Gomega, c client.Client, ns, name string) int32 {
	dep := &appsv1.Deployment{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
	return *dep.Spec.Replicas
}

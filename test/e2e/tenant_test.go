package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

const (
	tenantFinalizer  = "tenancy.acme.com/finalizer"
	runtimeFinalizer = "uninstall-helm-release"
	// The manager runs with POD_NAMESPACE set to the operator's namespace,
	// where releases of the cluster-scoped NamespaceTenant are stored.
	tenantReleaseNamespace = operatorNamespace
)

// applyTenant applies a NamespaceTenant manifest with kubectl.
func applyTenant(g Gomega, name, namespace, extraSpec string) {
	manifest := fmt.Sprintf(`apiVersion: tenancy.acme.com/v1alpha1
kind: NamespaceTenant
metadata:
  name: %s
spec:
  namespaceName: %s
  adminUsername: sam
%s`, name, namespace, extraSpec)
	env.ExpectApply(g, "", manifest)
}

// waitDeployed waits until the tenant's release is installed or upgraded.
func waitDeployed(g Gomega, ctx context.Context, name string) {
	g.EventuallyWithOffset(1, func(g Gomega) {
		cr, err := env.Get(ctx, testkit.NamespaceTenantGVK, "", name)
		g.Expect(err).NotTo(HaveOccurred())
		status, reason, msg := testkit.Condition(cr, "Deployed")
		g.Expect(status).To(Equal("True"), "reason %s: %s", reason, msg)
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// waitCreatedDelivered waits until the sidecar records on the tenant that
// its created event was delivered, and returns the tenant's UID.
func waitCreatedDelivered(g Gomega, ctx context.Context, name string) string {
	var uid string
	g.EventuallyWithOffset(1, func(g Gomega) {
		cr, err := env.Get(ctx, testkit.NamespaceTenantGVK, "", name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cr.GetAnnotations()).To(HaveKey("tenancy.acme.com/created-event-delivered"))
		uid = string(cr.GetUID())
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	return uid
}

// canCreateDeployments asks the API server whether user may create
// Deployments in namespace.
func canCreateDeployments(ctx context.Context, user, namespace string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "create", Group: "apps", Resource: "deployments",
		},
	}}
	if err := env.Client.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// deleteTenantAndWait deletes a tenant and checks, on every poll until the
// tenant is gone, that it outlives its namespace: when the tenant
// disappears, the namespace must already be gone.
func deleteTenantAndWait(t *testing.T, g Gomega, ctx context.Context, name, namespace string) {
	t.Helper()
	out, err := env.Kubectl("delete", "namespacetenant", name, "--wait=false")
	g.Expect(err).NotTo(HaveOccurred(), out)
	sawHeld := false
	g.Eventually(func(g Gomega) {
		_, err := env.Get(ctx, testkit.NamespaceTenantGVK, "", name)
		nsErr := env.Client.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{})
		if err == nil {
			if nsErr == nil {
				sawHeld = true
			}
			g.Expect(err).To(HaveOccurred(), "tenant still there")
			return
		}
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		// StopTrying: once the tenant is gone, a namespace still there is
		// a failure, not something to wait for.
		if !apierrors.IsNotFound(nsErr) {
			StopTrying(fmt.Sprintf("tenant %s is gone but namespace %s is still there (%v)", name, namespace, nsErr)).Now()
		}
	}).WithTimeout(90 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("tenant %s was held while namespace %s existed: %v", name, namespace, sawHeld)
}

// TestNamespaceTenantLifecycle walks the sample tenant through its
// life: every object created, the admin's rights, a tier change, deletion.
func TestNamespaceTenantLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name, ns = "team-x", "app-y"

	out, err := env.Kubectl("apply", "-f", "config/samples/tenancy_v1alpha1_namespacetenant.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("create: the release is installed, stored in the operator's namespace")
	waitDeployed(g, ctx, name)
	g.Expect(env.ReleaseRevisions(ctx, tenantReleaseNamespace, name)).To(ConsistOf("sh.helm.release.v1." + name + ".v1"))
	out, err = env.Kubectl("wait", "--for=condition=Ready", "nt/"+name, "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("get", "nt", name)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`team-x\s+app-y\s+sam\s+dev\s+\d+\.\d+\.\d+\S*\s+True\s+True`))

	t.Log("the sidecar adds its finalizer next to the runtime's")
	g.Eventually(func(g Gomega) {
		cr, err := env.Get(ctx, testkit.NamespaceTenantGVK, "", name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cr.GetFinalizers()).To(ContainElements(tenantFinalizer, runtimeFinalizer))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("the namespace and its standard objects exist")
	namespace := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, namespace)).To(Succeed())
	g.Expect(namespace.Labels).To(And(
		HaveKeyWithValue("tenancy.acme.com/tenant", name),
		HaveKeyWithValue("tenancy.acme.com/tier", "dev"),
		HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"),
	))
	quota := &corev1.ResourceQuota{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-quota"}, quota)).To(Succeed())
	g.Expect(quota.Spec.Hard).To(Equal(corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("5"), corev1.ResourceMemory: resource.MustParse("10Gi"), corev1.ResourcePods: resource.MustParse("10"),
	}))
	limits := &corev1.LimitRange{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-limits"}, limits)).To(Succeed())
	g.Expect(limits.Spec.Limits).To(HaveLen(1))
	g.Expect(limits.Spec.Limits[0].Default.Memory().String()).To(Equal("512Mi"))
	rb := &rbacv1.RoleBinding{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-admins"}, rb)).To(Succeed())
	g.Expect(rb.RoleRef.Name).To(Equal("admin"))
	var policies networkingv1.NetworkPolicyList
	g.Expect(env.Client.List(ctx, &policies, client.InNamespace(ns))).To(Succeed())
	g.Expect(policies.Items).To(HaveLen(2))

	t.Log("the admin user may create Deployments in the tenant namespace, and not elsewhere")
	env.CreateNamespace(t, "e2e-tenant-elsewhere")
	g.Expect(canCreateDeployments(ctx, "sam", ns)).To(BeTrue())
	g.Expect(canCreateDeployments(ctx, "sam", "e2e-tenant-elsewhere")).To(BeFalse())
	g.Expect(canCreateDeployments(ctx, "kim", ns)).To(BeFalse())

	t.Log("tier change to prod: quota and limits follow, Pod Security becomes restricted")
	out, err = env.Kubectl("patch", "nt", name, "--type=merge", "-p", `{"spec":{"deploymentTier":"prod"}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-quota"}, quota)).To(Succeed())
		g.Expect(quota.Spec.Hard.Cpu().String()).To(Equal("500"))
		g.Expect(quota.Spec.Hard.Memory().String()).To(Equal("200Gi"))
		g.Expect(quota.Spec.Hard.Pods().String()).To(Equal("100"))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-limits"}, limits)).To(Succeed())
		g.Expect(limits.Spec.Limits[0].Default.Memory().String()).To(Equal("2Gi"))
		g.Expect(limits.Spec.Limits[0].DefaultRequest.Cpu().String()).To(Equal("500m"))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, namespace)).To(Succeed())
		g.Expect(namespace.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("drift: a deleted RoleBinding is put back")
	g.Expect(env.Client.Delete(ctx, rb)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-admins"}, &rbacv1.RoleBinding{})
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("delete: the namespace goes first, then the tenant; the release is gone")
	deleteTenantAndWait(t, g, ctx, name, ns)
	g.Expect(env.ReleaseRevisions(ctx, tenantReleaseNamespace, name)).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		events, err := tenantEvents(ctx, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(ContainElement(HavePrefix("Normal/Finalized: Namespace app-y is gone")))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	t.Log("re-create right after `kubectl delete` returns: a clean install, no Terminating namespace in the way")
	out, err = env.Kubectl("apply", "-f", "config/samples/tenancy_v1alpha1_namespacetenant.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		cr, err := env.Get(ctx, testkit.NamespaceTenantGVK, "", name)
		g.Expect(err).NotTo(HaveOccurred())
		failed, _, msg := testkit.Condition(cr, "ReleaseFailed")
		g.Expect(failed).NotTo(Equal("True"), msg)
		status, reason, _ := testkit.Condition(cr, "Deployed")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("InstallSuccessful"))
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, namespace)).To(Succeed())
	g.Expect(namespace.DeletionTimestamp).To(BeNil())
	out, err = env.Kubectl("delete", "-f", "config/samples/tenancy_v1alpha1_namespacetenant.yaml", "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: ns}, namespace))).To(BeTrue(),
		"kubectl delete returns only once the namespace is gone")
}

// webhookRecorder is the external system of the tests: it records every
// delivery and answers with what respond says.
type webhookRecorder struct {
	mu         sync.Mutex
	deliveries []webhookDelivery
	respond    func(ev map[string]any, attempt int) int // status code; 0 never answers
	server     *httptest.Server
	stop       chan struct{}
}

type webhookDelivery struct {
	Event         map[string]any
	Authorization string
	Status        int
}

func newWebhookRecorder(respond func(ev map[string]any, attempt int) int) *webhookRecorder {
	w := &webhookRecorder{respond: respond, stop: make(chan struct{})}
	w.server = httptest.NewServer(http.HandlerFunc(w.serve))
	return w
}

func (w *webhookRecorder) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev map[string]any
	_ = json.Unmarshal(body, &ev)
	w.mu.Lock()
	attempt := 1
	for _, d := range w.deliveries {
		if d.Event["id"] == ev["id"] {
			attempt++
		}
	}
	status := w.respond(ev, attempt)
	w.deliveries = append(w.deliveries, webhookDelivery{Event: ev, Authorization: r.Header.Get("Authorization"), Status: status})
	w.mu.Unlock()
	if status == 0 {
		select {
		case <-w.stop:
		case <-r.Context().Done():
		}
		return
	}
	rw.WriteHeader(status)
}

// of returns the deliveries of one tenant's event type.
func (w *webhookRecorder) of(tenant, typ string) []webhookDelivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []webhookDelivery
	for _, d := range w.deliveries {
		if d.Event["tenant"] == tenant && d.Event["type"] == typ {
			out = append(out, d)
		}
	}
	return out
}

func (w *webhookRecorder) close() {
	close(w.stop)
	w.server.Close()
}

// restartExtensions restarts the sidecar with extra flags and restores
// the default sidecar when the test ends.
func restartExtensions(t *testing.T, args ...string) {
	t.Helper()
	saved := env.extensions.args
	if err := env.extensions.stop(); err != nil {
		t.Fatalf("stopping the extensions: %v", err)
	}
	env.extensions.args = append(append([]string{}, saved...), args...)
	if err := env.extensions.start(); err != nil {
		t.Fatalf("starting the extensions with %v: %v", args, err)
	}
	t.Cleanup(func() {
		_ = env.extensions.stop()
		env.extensions.args = saved
		if err := env.extensions.start(); err != nil {
			t.Errorf("restarting the default extensions: %v", err)
		}
	})
}

// TestNamespaceTenantWebhook runs the sidecar with a lifecycle webhook: the
// created event once, the deleted event retried until it is delivered, and
// the skip annotation for a webhook that never answers.
func TestNamespaceTenantWebhook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const retried, stuck = "hook-retried", "hook-stuck"

	hook := newWebhookRecorder(func(ev map[string]any, attempt int) int {
		switch {
		case ev["tenant"] == stuck && ev["type"] == "deleted":
			return 0 // never answers
		case ev["type"] == "deleted" && attempt == 1:
			return http.StatusInternalServerError
		default:
			return http.StatusOK
		}
	})
	defer hook.close()

	secret := &corev1.Secret{Data: map[string][]byte{"token": []byte("s3cret\n")}}
	secret.Name, secret.Namespace = "tenant-webhook", "default"
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	restartExtensions(t, "--tenant-webhook-url", hook.server.URL+"/tenants",
		"--tenant-webhook-token-secret", "default/tenant-webhook", "--tenant-webhook-timeout", "2s")

	t.Log("created: delivered once with the bearer token, and recorded on the tenant")
	applyTenant(g, retried, "hook-retried-ns", "  deploymentTier: stg\n  additionalAdmins: {users: [kim]}\n")
	applyTenant(g, stuck, "hook-stuck-ns", "")
	waitDeployed(g, ctx, retried)
	waitDeployed(g, ctx, stuck)
	uid := waitCreatedDelivered(g, ctx, retried)
	created := hook.of(retried, "created")
	g.Expect(created).To(HaveLen(1))
	g.Expect(created[0].Authorization).To(Equal("Bearer s3cret"))
	g.Expect(created[0].Event).To(And(
		HaveKeyWithValue("id", uid+"-created"),
		HaveKeyWithValue("namespace", "hook-retried-ns"),
		HaveKeyWithValue("tier", "stg"),
		HaveKeyWithValue("admins", []any{"sam", "kim"}),
		HaveKey("timestamp"),
	))

	t.Log("deleted: the first delivery gets a 500, a Warning Event, then a retry succeeds")
	deleteTenantAndWait(t, g, ctx, retried, "hook-retried-ns")
	deleted := hook.of(retried, "deleted")
	g.Expect(len(deleted)).To(BeNumerically(">=", 2))
	g.Expect(deleted[0].Status).To(Equal(http.StatusInternalServerError))
	g.Expect(deleted[len(deleted)-1].Status).To(Equal(http.StatusOK))
	for _, d := range deleted {
		g.Expect(d.Event["id"]).To(Equal(uid+"-deleted"), "every retry carries the same id")
	}
	// Events are recorded asynchronously: the last may land after the
	// tenant is gone.
	g.Eventually(func() ([]string, error) { return tenantEvents(ctx, retried) }).
		WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(ContainElements(
		MatchRegexp(`^Warning/WebhookFailed: Delivering the deleted event failed \(attempt 1\), retrying in 1s: .*500`),
		HavePrefix("Normal/WebhookDelivered: Delivered the deleted event"),
	))
	g.Expect(hook.of(retried, "created")).To(HaveLen(1), "created is never sent twice")

	t.Log("a webhook that never answers holds the tenant after its namespace is gone")
	out, err := env.Kubectl("delete", "namespacetenant", stuck, "--wait=false")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: "hook-stuck-ns"}, &corev1.Namespace{}))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(BeTrue())
	g.Eventually(func(g Gomega) {
		events, err := tenantEvents(ctx, stuck)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(ContainElement(HavePrefix("Warning/WebhookFailed: Delivering the deleted event failed")))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	cr, err := env.Get(ctx, testkit.NamespaceTenantGVK, "", stuck)
	g.Expect(err).NotTo(HaveOccurred(), "the tenant is held")
	g.Expect(cr.GetFinalizers()).To(Equal([]string{tenantFinalizer}))

	t.Log("the skip annotation releases it, and says so")
	out, err = env.Kubectl("annotate", "namespacetenant", stuck, "tenancy.acme.com/skip-finalizer=true")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() bool {
		_, err := env.Get(ctx, testkit.NamespaceTenantGVK, "", stuck)
		return apierrors.IsNotFound(err)
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(BeTrue())
	g.Eventually(func() ([]string, error) { return tenantEvents(ctx, stuck) }).
		WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(ContainElement(HavePrefix("Warning/FinalizerSkipped:")))
}

// TestNamespaceTenantConflicts claims namespaces that belong to someone
// else: the release fails with a clear message and the owner's objects are
// untouched.
func TestNamespaceTenantConflicts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	t.Log("a namespace that existed before, not created by a tenant")
	env.CreateNamespace(t, "e2e-legacy")
	cm := &corev1.ConfigMap{Data: map[string]string{"keep": "me"}}
	cm.Name, cm.Namespace = "legacy-config", "e2e-legacy"
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	legacyBefore := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "e2e-legacy"}, legacyBefore)).To(Succeed())

	applyTenant(g, "grab-legacy", "e2e-legacy", "")
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, testkit.NamespaceTenantGVK, "", "grab-legacy", "ReleaseFailed")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("InstallError"))
		g.Expect(msg).To(ContainSubstring(`namespace "e2e-legacy" already exists and was not created by a NamespaceTenant`))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	legacyAfter := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "e2e-legacy"}, legacyAfter)).To(Succeed())
	g.Expect(legacyAfter.ResourceVersion).To(Equal(legacyBefore.ResourceVersion), "the namespace is not modified")
	var quotas corev1.ResourceQuotaList
	g.Expect(env.Client.List(ctx, &quotas, client.InNamespace("e2e-legacy"))).To(Succeed())
	g.Expect(quotas.Items).To(BeEmpty())

	t.Log("a namespace owned by another tenant")
	applyTenant(g, "owner-a", "e2e-shared", "  deploymentTier: prod\n")
	waitDeployed(g, ctx, "owner-a")
	quotaBefore := &corev1.ResourceQuota{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "e2e-shared", Name: "tenant-quota"}, quotaBefore)).To(Succeed())
	rbBefore := &rbacv1.RoleBinding{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "e2e-shared", Name: "tenant-admins"}, rbBefore)).To(Succeed())

	out, err := env.KubectlIn(`apiVersion: tenancy.acme.com/v1alpha1
kind: NamespaceTenant
metadata:
  name: intruder-b
spec:
  namespaceName: e2e-shared
  adminUsername: mallory
`, "apply", "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		status, _, msg := env.ConditionOf(g, testkit.NamespaceTenantGVK, "", "intruder-b", "ReleaseFailed")
		g.Expect(status).To(Equal("True"))
		g.Expect(msg).To(ContainSubstring(`namespace "e2e-shared" already belongs to NamespaceTenant "owner-a"`))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	out, _ = env.Kubectl("get", "nt", "intruder-b", "-o", "jsonpath={.status.conditions[?(@.type==\"ReleaseFailed\")].message}")
	t.Logf("what the user sees: %s", out)

	quotaAfter := &corev1.ResourceQuota{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "e2e-shared", Name: "tenant-quota"}, quotaAfter)).To(Succeed())
	g.Expect(quotaAfter.ResourceVersion).To(Equal(quotaBefore.ResourceVersion))
	rbAfter := &rbacv1.RoleBinding{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "e2e-shared", Name: "tenant-admins"}, rbAfter)).To(Succeed())
	g.Expect(rbAfter.Subjects).To(Equal(rbBefore.Subjects))
	g.Expect(canCreateDeployments(ctx, "mallory", "e2e-shared")).To(BeFalse())

	t.Log("deleting the failed tenants neither waits for nor touches the other owners' namespaces")
	for _, name := range []string{"intruder-b", "grab-legacy"} {
		out, err := env.Kubectl("delete", "namespacetenant", name, "--timeout=60s")
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	shared := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "e2e-shared"}, shared)).To(Succeed())
	g.Expect(shared.DeletionTimestamp).To(BeNil())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "e2e-legacy", Name: "legacy-config"}, &corev1.ConfigMap{})).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "e2e-legacy"}, legacyAfter)).To(Succeed())
	g.Expect(legacyAfter.DeletionTimestamp).To(BeNil())
}

// TestNamespaceTenantInvalidSpecs checks that bad input is refused at apply
// time with the field path.
func TestNamespaceTenantInvalidSpecs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cases := []struct {
		name string
		spec string
		// every substring must appear in kubectl's error
		want []string
	}{
		// Not a namespace name.
		{"bad-name", "spec: {namespaceName: App_Y, adminUsername: sam}", []string{"spec.namespaceName", "should match"}},
		// Too long for a namespace.
		{"long-name", "spec: {namespaceName: " + strings.Repeat("a", 64) + ", adminUsername: sam}", []string{"spec.namespaceName", "63"}},
		// Reserved prefix.
		{"kube-name", "spec: {namespaceName: kube-mine, adminUsername: sam}", []string{"spec.namespaceName", "kube-"}},
		// Missing admin.
		{"no-admin", "spec: {namespaceName: app-z}", []string{"spec.adminUsername", "Required value"}},
		// Missing namespace.
		{"no-namespace", "spec: {adminUsername: sam}", []string{"spec.namespaceName", "Required value"}},
		// No spec at all.
		{"no-spec", "", []string{"spec", "Required value"}},
		// Unknown tier.
		{"bad-tier", "spec: {namespaceName: app-z, adminUsername: sam, deploymentTier: qa}", []string{"spec.deploymentTier", "Unsupported value", `"dev"`}},
		// Unknown field.
		{"typo", "spec: {namespaceName: app-z, adminUsername: sam, tier: prod}", []string{`unknown field "spec.tier"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := env.KubectlIn(fmt.Sprintf("apiVersion: tenancy.acme.com/v1alpha1\nkind: NamespaceTenant\nmetadata:\n  name: %s\n%s\n", tc.name, tc.spec),
				"apply", "--validate=strict", "-f", "-")
			g.Expect(err).To(HaveOccurred(), out)
			for _, w := range tc.want {
				g.Expect(out).To(ContainSubstring(w))
			}
			_, getErr := env.Get(ctx, testkit.NamespaceTenantGVK, "", tc.name)
			g.Expect(apierrors.IsNotFound(getErr)).To(BeTrue(), "nothing was created")
		})
	}

	t.Log("namespaceName cannot change after creation")
	applyTenant(g, "immutable", "e2e-immutable", "")
	out, err := env.Kubectl("patch", "nt", "immutable", "--type=merge", "-p", `{"spec":{"namespaceName":"e2e-other"}}`)
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("spec.namespaceName"))
	g.Expect(out).To(ContainSubstring("namespaceName is immutable"))
	waitDeployed(g, ctx, "immutable")
	deleteTenantAndWait(t, g, ctx, "immutable", "e2e-immutable")
}

// TestNamespaceTenantOperatorRBAC checks that the operator's shipped
// ClusterRole (config/rbac/role.yaml) is enough to create what a tenant
// needs, and that it can bind the admin ClusterRole and nothing more
// powerful: the API server's RBAC escalation check, not a fake.
func TestNamespaceTenantOperatorRBAC(t *testing.T) {
	g := NewWithT(t)
	const operator, ns = "e2e-tenant-operator", "e2e-tenant-rbac"
	out, err := env.Kubectl("apply", "-f", "config/rbac/role.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("create", "clusterrolebinding", operator, "--clusterrole=manager-role", "--user="+operator)
	g.Expect(err).NotTo(HaveOccurred(), out)

	as := func(args ...string) (string, error) { return env.Kubectl(append(args, "--as="+operator)...) }
	g.Eventually(func() (string, error) { return as("create", "namespace", ns) }).
		WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(ContainSubstring("created"))
	for _, res := range []string{"resourcequotas", "limitranges", "rolebindings.rbac.authorization.k8s.io", "networkpolicies.networking.k8s.io"} {
		out, err := as("auth", "can-i", "create", res, "-n", ns)
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", res, out)
	}
	for _, verb := range []string{"get", "watch", "update", "patch"} {
		out, err := as("auth", "can-i", verb, "namespacetenants.tenancy.acme.com")
		g.Expect(err).NotTo(HaveOccurred(), "%s namespacetenants: %s", verb, out)
	}
	// The releases of namespaced kinds are applied as a ServiceAccount of
	// their namespace: the operator itself writes no workload.
	for _, res := range []string{"deployments.apps", "services", "configmaps"} {
		out, err := as("auth", "can-i", "create", res, "-n", ns)
		g.Expect(err).To(HaveOccurred(), "the operator may create %s: %s", res, out)
	}
	// Deleting tenants is the users' business, not the operator's.
	out, err = as("auth", "can-i", "delete", "namespacetenants.tenancy.acme.com")
	g.Expect(err).To(HaveOccurred(), out)

	t.Log("binding admin is allowed through the bind verb")
	out, err = as("create", "rolebinding", "tenant-admins", "--clusterrole=admin", "--user=sam", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("binding any other role is refused: no wildcard, no escalation")
	for _, role := range []string{"cluster-admin", "edit"} {
		out, err := as("create", "rolebinding", "escalate-"+role, "--clusterrole="+role, "--user=sam", "-n", ns)
		g.Expect(err).To(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring("forbidden"))
	}
	out, err = as("auth", "can-i", "*", "*")
	g.Expect(err).To(HaveOccurred(), "the operator must not hold wildcard permissions: %s", out)
	out, err = as("auth", "can-i", "bind", "clusterroles/cluster-admin")
	g.Expect(err).To(HaveOccurred(), out)
}

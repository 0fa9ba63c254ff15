package tenant

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/acme/platform-operator/internal/devtools/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	env = testenv.Start(filepath.Join("..", "..", "..", "config", "crd", "bases", "tenancy.acme.com_namespacetenants.yaml"))
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// newTenant creates a NamespaceTenant for namespace ns and, when withNS,
// that namespace owned by it, as the chart would.
func newTenant(t *testing.T, c client.Client, name, ns string, withNS bool, annotations map[string]string) *unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	u := NewObject()
	u.SetName(name)
	u.SetAnnotations(annotations)
	g.Expect(unstructured.SetNestedField(u.Object, ns, "spec", "namespaceName")).To(Succeed())
	g.Expect(unstructured.SetNestedField(u.Object, "sam", "spec", "adminUsername")).To(Succeed())
	g.Expect(c.Create(t.Context(), u)).To(Succeed())
	if withNS {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: GVK.GroupVersion().String(), Kind: GVK.Kind, Name: name, UID: u.GetUID(),
		}}}}
		g.Expect(c.Create(t.Context(), n)).To(Succeed())
	}
	return u
}

// TestFinalizerReconciler runs the reconciler over a tenant on a real API
// server: one reconcile adds the finalizer, then the tenant is deleted and
// one reconcile of the deleting tenant decides whether it may go.
func TestFinalizerReconciler(t *testing.T) {
	cfg := env.Require(t)
	c, err := client.New(cfg, client.Options{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer failing.Close()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer ok.Close()

	cases := []struct {
		name string
		// withNS creates the tenant's namespace, owned by it, which the
		// test server never deletes (no namespace controller runs).
		withNS bool
		// annotations are set on the tenant.
		annotations map[string]string
		// webhook is the lifecycle webhook's URL; "" for none.
		webhook string
		// wantReasons are the Events of the reconcile of the deleting tenant.
		wantReasons []string
		// wantGone: the finalizer was removed and the tenant is gone.
		wantGone bool
		// wantRequeue: the deleting tenant is looked at again this soon.
		wantRequeue time.Duration
	}{
		// The namespace still exists: the tenant waits for it.
		{name: "namespace still there", withNS: true, wantReasons: []string{ReasonWaitingForNamespace}, wantRequeue: namespacePoll},
		// Without its namespace the finalizer goes at once.
		{name: "namespace gone", wantReasons: []string{ReasonFinalized}, wantGone: true},
		// An admin may release a tenant whose namespace hangs.
		{name: "skip annotation", withNS: true, annotations: map[string]string{SkipFinalizerAnnotation: "true"}, wantReasons: []string{ReasonFinalizerSkipped}, wantGone: true},
		// The deleted event must reach the webhook before the tenant goes.
		{name: "webhook down", webhook: failing.URL, wantReasons: []string{ReasonNotifyFailed}, wantRequeue: time.Second},
		{name: "webhook delivered", webhook: ok.URL, wantReasons: []string{ReasonNotified, ReasonFinalized}, wantGone: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			rec := record.NewFakeRecorder(20)
			r := &FinalizerReconciler{Client: c, Recorder: rec, Clock: clocktesting.NewFakePassiveClock(time.Now()), Backoff: Backoff{Base: time.Second, Max: time.Minute}}
			if tc.webhook != "" {
				r.Notifier = &Notifier{URL: tc.webhook, Client: http.DefaultClient}
			}
			name := fmt.Sprintf("tenant-%d", i)
			u := newTenant(t, c, name, fmt.Sprintf("ns-%d", i), tc.withNS, tc.annotations)
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(u)}

			t.Log("a new tenant gets the finalizer")
			_, err := r.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Get(ctx, req.NamespacedName, u)).To(Succeed())
			g.Expect(u.GetFinalizers()).To(ContainElement(Finalizer))
			g.Expect(<-rec.Events).To(HavePrefix("Normal " + ReasonFinalizerAdded))
			drain(rec) // a created event, when there is a webhook

			t.Log("deleted, it is kept until the finalizer's conditions hold")
			g.Expect(c.Delete(ctx, u)).To(Succeed())
			res, err := r.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			var reasons []string
			for _, e := range drain(rec) {
				var typ, reason string
				_, _ = fmt.Sscan(e, &typ, &reason)
				reasons = append(reasons, reason)
			}
			g.Expect(reasons).To(Equal(tc.wantReasons))
			err = c.Get(ctx, req.NamespacedName, u)
			if tc.wantGone {
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the API server deleted the tenant once its finalizer was removed")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(u.GetFinalizers()).To(ContainElement(Finalizer))
			g.Expect(res.RequeueAfter).To(Equal(tc.wantRequeue))

			t.Log("a finalizer removed by hand lets the tenant go; its reconcile finds nothing to do")
			g.Expect(c.Patch(ctx, u, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
			_, err = r.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

// drain returns the Events recorded so far.
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/acme/platform-operator/internal/devtools/process"
	"github.com/acme/platform-operator/test/testkit"
)

// extensionsLease is the sidecar's default leader election Lease, the one
// the suite's sidecar and the replicas of the failover test share.
const extensionsLease = "platform-operator-extensions.acme.com"

// startExtensionsReplica starts one more replica of the sidecar, with the
// suite's flags plus args. It is stopped at the end of the test unless the
// test stopped or killed it.
func startExtensionsReplica(t *testing.T, name string, args ...string) *operatorProcess {
	t.Helper()
	// Each replica serves its webhook on a port of its own: on one machine
	// a second replica could not bind the suite sidecar's port, and would
	// exit instead of standing by. (The CRDs' conversions keep calling the
	// suite's port, which no test of several replicas reads through.)
	fixed := slices.Clone(env.extensions.fixedArgs)
	if i := slices.Index(fixed, "--admission-port"); i >= 0 {
		addr, err := process.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		fixed[i+1] = port
	}
	p := &operatorProcess{
		name: "extensions-" + name, bin: env.extensions.bin,
		logPath:    filepath.Join(filepath.Dir(env.extensions.logPath), fmt.Sprintf("%s-extensions-%s.log", strings.ReplaceAll(t.Name(), "/", "-"), name)),
		kubeconfig: env.extensions.kubeconfig,
		fixedArgs:  fixed,
		args:       args,
	}
	if err := p.start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	t.Cleanup(func() { _ = p.stop() })
	return p
}

// TestReliabilityExtensionsFailover (issue scenario 3, extensions sidecar):
// two replicas of the sidecar share its Lease; the leader is killed with
// SIGKILL while it is delivering a tenant's deleted event to a webhook that
// does not answer, a few seconds before a CronScaler job fires. The
// standby takes the lease within 20 s, and then:
//   - applies the job that fired while no replica led, once;
//   - does not apply again what the dead leader applied (one Scaled Event
//     per fire, the status's lastScaleTime unchanged);
//   - delivers the deleted event again with the same event id, and the
//     tenant goes; the created event is not sent again.
//
// The CronScaler clock of both replicas is shifted (see the CronScaler
// tests) so the fire times come within a minute of real time.
func TestReliabilityExtensionsFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, tenant, tenantNS = "e2e-rel-ext-failover", "failover-tenant", "failover-tenant-ns"
	env.CreateNamespace(t, ns)

	// The first delivery of the deleted event never gets an answer, so the
	// leader is inside the delivery when it is killed; later ones succeed.
	hook := newWebhookRecorder(func(ev map[string]any, attempt int) int {
		if ev["type"] == "deleted" && attempt == 1 {
			return 0
		}
		return http.StatusOK
	})
	defer hook.close()

	// The suite's sidecar steps down (releasing the Lease) for the two
	// replicas of this test and comes back after it.
	if err := env.extensions.stop(); err != nil {
		t.Fatalf("stopping the suite's sidecar: %v", err)
	}
	t.Cleanup(func() {
		if err := env.extensions.start(); err != nil {
			t.Errorf("restarting the suite's sidecar: %v", err)
		}
	})

	// Both replicas read M-20s now. Jobs: base at M-1min, up at M (the
	// leader applies it), late at M+1min (fires while no replica leads).
	m := time.Now().Truncate(time.Minute).Add(5 * time.Minute)
	offset := time.Until(m.Add(-20 * time.Second))
	realM := time.Now().Add(time.Until(m) - offset)
	args := []string{
		"--cronscaler-clock-offset", offset.String(),
		"--tenant-webhook-url", hook.server.URL + "/tenants", "--tenant-webhook-timeout", "5m",
	}
	leader := startExtensionsReplica(t, "a", args...)
	leaderID := awaitLeader(g, extensionsLease)
	standby := startExtensionsReplica(t, "b", args...)
	t.Logf("replica a leads (%s); replica b is on standby", leaderID)

	for _, name := range []string{"steady", "late"} {
		g.Expect(env.Client.Create(ctx, newDeployment(ns, name, 1))).To(Succeed())
	}
	base := cronJob{"base", minuteCron(m.Add(-time.Minute)), 2}
	env.ExpectApply(g, ns, cronScalerManifest("steady", "apps/v1", "Deployment", "steady",
		[]cronJob{base, {"up", minuteCron(m), 4}}, ""))
	env.ExpectApply(g, ns, cronScalerManifest("late", "apps/v1", "Deployment", "late",
		[]cronJob{base, {"late", minuteCron(m.Add(time.Minute)), 6}}, ""))
	applyTenant(g, tenant, tenantNS, "")
	waitDeployed(g, ctx, tenant)
	uid := waitCreatedDelivered(g, ctx, tenant)

	t.Log("the leader applies the up job at M")
	steady := newDeployment(ns, "steady", 0)
	g.Eventually(func() (int32, error) { return specReplicas(ctx, steady) }).
		WithTimeout(time.Until(realM) + 5*time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(4)))
	var lastScale string
	g.Eventually(func(g Gomega) {
		cs, err := env.Get(ctx, testkit.CronScalerGVK, ns, "steady")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cs.Object["status"]).To(HaveKeyWithValue("activeJob", "up"))
		lastScale, _, _ = unstructured.NestedString(cs.Object, "status", "lastScaleTime")
	}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	// Events are recorded asynchronously, after the status is written.
	var steadyEvents map[string]int32
	g.Eventually(func(g Gomega) {
		var err error
		steadyEvents, err = scaledEvents(ctx, ns, "steady")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(steadyEvents).To(HaveLen(2), "base on create, up at M: %v", steadyEvents)
	}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	t.Log("delete the tenant: the leader is stuck delivering its deleted event")
	out, err := env.Kubectl("delete", "namespacetenant", tenant, "--wait=false")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() []webhookDelivery { return hook.of(tenant, "deleted") }).
		WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).ShouldNot(BeEmpty())

	// Kill the leader 8 s before late fires (M+1min): the fire passes
	// while the Lease still names the dead leader.
	killAt := realM.Add(time.Minute - 8*time.Second)
	if time.Now().After(killAt) {
		t.Fatalf("the deleted event was sent only %s after M; the kill must come before M+1min", time.Since(realM))
	}
	time.Sleep(time.Until(killAt))
	killLeaderExpectTakeover(t, g, leader, extensionsLease, leaderID)

	t.Log("the new leader applies the late job once, and nothing of steady again")
	late := newDeployment(ns, "late", 0)
	g.Eventually(func() (int32, error) { return specReplicas(ctx, late) }).
		WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(6)))
	g.Eventually(func() (map[string]int32, error) { return scaledEvents(ctx, ns, "late") }).
		WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(HaveLen(2))
	g.Consistently(func(g Gomega) {
		g.Expect(scaledEvents(ctx, ns, "steady")).To(Equal(steadyEvents))
		lateEvents, err := scaledEvents(ctx, ns, "late")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lateEvents).To(HaveLen(2), "base on create, late after the takeover: %v", lateEvents)
		for msg, n := range lateEvents {
			g.Expect(n).To(Equal(int32(1)), msg)
		}
		cs, err := env.Get(ctx, testkit.CronScalerGVK, ns, "steady")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cs.Object["status"]).To(HaveKeyWithValue("lastScaleTime", lastScale))
	}).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(standby.metric("cronscaler_scales_total", "result=success")).To(Equal(1.0),
		"the new leader scaled only late")

	t.Log("the new leader delivers the deleted event again, with the same id, and the tenant goes")
	g.Eventually(func() bool {
		_, err := env.Get(ctx, testkit.NamespaceTenantGVK, "", tenant)
		return apierrors.IsNotFound(err)
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(BeTrue())
	deleted := hook.of(tenant, "deleted")
	g.Expect(len(deleted)).To(BeNumerically(">=", 2))
	g.Expect(deleted[len(deleted)-1].Status).To(Equal(http.StatusOK))
	for _, d := range deleted {
		g.Expect(d.Event["id"]).To(Equal(uid+"-deleted"), "every delivery carries the same id")
	}
	g.Expect(hook.of(tenant, "created")).To(HaveLen(1), "created is never sent twice")
}

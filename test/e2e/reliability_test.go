package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// The reliability tests of the Helm runtime use a test-only kind, HoldHook
// (test/e2e/testdata/reliability), whose chart has a pre-install/pre-upgrade
// hook Pod when spec.hold is true. Helm waits for that Pod to succeed, and
// on kwok it runs until the test marks it Succeeded: that holds a Helm
// action, and its release in pending-install or pending-upgrade, for as
// long as a test needs. The tests run their own manager processes (same
// binary, same ServiceAccount, leader election on) with a watches file that
// has only this kind, so the suite's manager is not involved.

var holdHookGVK = schema.GroupVersionKind{Group: "reliability.test.acme.com", Version: "v1alpha1", Kind: "HoldHook"}

var setupHoldHookOnce sync.Once

// setupHoldHook installs the HoldHook CRD and the RBAC the operator's
// ServiceAccount needs for it, once per suite.
func setupHoldHook(t *testing.T) {
	t.Helper()
	var err error
	var out string
	setupHoldHookOnce.Do(func() {
		dir := filepath.Join("test", "e2e", "testdata", "reliability")
		if out, err = env.Kubectl("apply", "-f", filepath.Join(dir, "crd.yaml"), "-f", filepath.Join(dir, "rbac.yaml")); err != nil {
			return
		}
		out, err = env.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "crd/holdhooks.reliability.test.acme.com")
	})
	if err != nil {
		t.Fatalf("installing the HoldHook kind: %v\n%s", err, out)
	}
}

// startHoldHookManager starts a manager process that reconciles only
// HoldHook objects, leader-elected on lease. It is stopped at the end of
// the test unless the test stopped or killed it.
func startHoldHookManager(t *testing.T, name, lease string) *operatorProcess {
	t.Helper()
	p := &operatorProcess{
		name: "manager-" + name, bin: env.manager.bin,
		logPath:    filepath.Join(filepath.Dir(env.manager.logPath), fmt.Sprintf("%s-manager-%s.log", strings.ReplaceAll(t.Name(), "/", "-"), name)),
		kubeconfig: env.manager.kubeconfig,
		fixedArgs: []string{
			"--watches-file", filepath.Join("test", "e2e", "testdata", "reliability", "watches.yaml"),
			"--leader-elect", "--leader-election-namespace", operatorNamespace, "--leader-election-id", lease,
			"--max-concurrent-reconciles", "4", "--release-service-account", releaseServiceAccount,
		},
	}
	if err := p.start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	t.Cleanup(func() { _ = p.stop() })
	return p
}

// killProcess kills p with SIGKILL, as the OOM killer or a node loss
// would: no shutdown code runs and the leader lease is not released.
func killProcess(p *operatorProcess) {
	p.proc.Kill()
	p.proc = nil
}

// releaseHistory returns the status of every stored revision of a release,
// by revision, read from Helm's release Secrets.
func releaseHistory(ctx context.Context, ns, release string) (map[int]string, error) {
	var list corev1.SecretList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": release}); err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, s := range list.Items {
		v, err := strconv.Atoi(s.Labels["version"])
		if err != nil {
			return nil, fmt.Errorf("secret %s: version label: %w", s.Name, err)
		}
		out[v] = s.Labels["status"]
	}
	return out, nil
}

// latestRevision returns the highest revision of history and its status.
func latestRevision(history map[int]string) (int, string) {
	latest := 0
	for v := range history {
		latest = max(latest, v)
	}
	return latest, history[latest]
}

func describeHistory(history map[int]string) string {
	var vs []int
	for v := range history {
		vs = append(vs, v)
	}
	sort.Ints(vs)
	var parts []string
	for _, v := range vs {
		parts = append(parts, fmt.Sprintf("%d:%s", v, history[v]))
	}
	return strings.Join(parts, " ")
}

// completeHoldHooks marks the running hook Pods of ns Succeeded, as their
// container would when it finishes; Helm's wait for the hook then ends.
func completeHoldHooks(ctx context.Context, ns string) error {
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"reliability.acme.com/hold-hook": "true"}); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		p.Status.Phase = corev1.PodSucceeded
		if err := env.Client.Status().Update(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// holdHookMessage returns the message the release's ConfigMap serves.
func holdHookMessage(ctx context.Context, ns, name string) (string, error) {
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-holdhook"}, &cm); err != nil {
		return "", err
	}
	return cm.Data["message"], nil
}

// expectHoldHookConverged waits until the HoldHook's release is deployed
// with message, completing hook Pods meanwhile, and returns how long it
// took.
func expectHoldHookConverged(t *testing.T, ns, name, message string, timeout time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(completeHoldHooks(ctx, ns)).To(Succeed())
		status, _, msg := env.ConditionOf(g, holdHookGVK, ns, name, "Deployed")
		g.Expect(status).To(Equal("True"), msg)
		h, err := releaseHistory(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		_, latest := latestRevision(h)
		g.Expect(latest).To(Equal("deployed"), describeHistory(h))
		got, err := holdHookMessage(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(message))
	}).WithTimeout(timeout).WithPolling(500 * time.Millisecond).Should(Succeed())
	return time.Since(start)
}

// expectPending waits until the latest revision of a release is in status.
func expectPending(t *testing.T, ns, name, status string) {
	t.Helper()
	ctx := context.Background()
	NewWithT(t).Eventually(func(g Gomega) {
		h, err := releaseHistory(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		_, latest := latestRevision(h)
		g.Expect(latest).To(Equal(status), describeHistory(h))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// TestReliabilityKillMidAction (issue scenario 1): the runtime is killed
// with SIGKILL while one release is pending-install and another
// pending-upgrade. A new process takes the lease when it expires, unlocks
// both (they were started before it became the leader), says so in an
// Event and the Recovered condition, and converges both to their spec
// within 60 s of the restart, with no manual step.
func TestReliabilityKillMidAction(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	setupHoldHook(t)
	const ns, lease = "e2e-rel-kill", "reliability-kill.acme.com"
	env.CreateNamespace(t, ns)
	first := startHoldHookManager(t, "first", lease)

	t.Log("a release is installed at v1")
	applyCR(g, holdHookGVK, ns, "upgraded", "message: v1")
	expectHoldHookConverged(t, ns, "upgraded", "v1", 60*time.Second)

	t.Log("an upgrade to v2 and an install are held by their hooks: pending-upgrade and pending-install")
	applyCR(g, holdHookGVK, ns, "upgraded", "message: v2\nhold: true")
	applyCR(g, holdHookGVK, ns, "installed", "message: fresh\nhold: true")
	expectPending(t, ns, "upgraded", "pending-upgrade")
	expectPending(t, ns, "installed", "pending-install")

	t.Log("kill -9 the runtime; the releases stay pending")
	killProcess(first)
	for _, name := range []string{"upgraded", "installed"} {
		h, err := releaseHistory(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		_, latest := latestRevision(h)
		g.Expect(latest).To(HavePrefix("pending-"), describeHistory(h))
	}

	t.Log("restart: both converge to their spec within 60 s")
	restart := time.Now()
	startHoldHookManager(t, "second", lease)
	var wg sync.WaitGroup
	took := map[string]time.Duration{}
	var mu sync.Mutex
	for name, msg := range map[string]string{"upgraded": "v2", "installed": "fresh"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := expectHoldHookConverged(t, ns, name, msg, 60*time.Second)
			mu.Lock()
			took[name] = d
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("converged after restart: pending-upgrade in %s, pending-install in %s (restart at %s)",
		took["upgraded"].Round(100*time.Millisecond), took["installed"].Round(100*time.Millisecond), restart.Format(time.RFC3339))

	t.Log("the Recovered condition and a Warning Event say what happened; the stale revision is kept as failed")
	for name, state := range map[string]string{"upgraded": "pending-upgrade", "installed": "pending-install"} {
		status, reason, msg := env.ConditionOf(g, holdHookGVK, ns, name, "Recovered")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("PendingReleaseUnlocked"))
		g.Expect(msg).To(ContainSubstring("left " + state))
		g.Expect(msg).To(ContainSubstring("before this process became the leader"))
		t.Logf("%s Recovered: %s", name, msg)
		g.Eventually(func() ([]string, error) { return env.EventsWithReason(ctx, ns, name, "PendingReleaseUnlocked") }).
			WithTimeout(10 * time.Second).Should(ContainElement(HavePrefix("Warning: Unlocked: ")))
		h, err := releaseHistory(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		t.Logf("%s history: %s", name, describeHistory(h))
		g.Expect(h).NotTo(ContainElement(HavePrefix("pending-")), describeHistory(h))
	}
	// The unlocked upgrade stays failed; the unlocked install was the
	// release's current revision, so the upgrade that followed superseded it.
	h, err := releaseHistory(ctx, ns, "upgraded")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(Equal(map[int]string{1: "superseded", 2: "failed", 3: "deployed"}))
	h, err = releaseHistory(ctx, ns, "installed")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(Equal(map[int]string{1: "superseded", 2: "deployed"}))
}

// TestReliabilityGracefulShutdown (issue scenario 2): SIGTERM while Helm
// waits for a hook ends the action at once: the release ends failed (the
// upgrade is then rolled back, the install uninstalled), never pending,
// and the process exits well within the Pod's 30 s termination grace
// period. The next process converges both.
func TestReliabilityGracefulShutdown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	setupHoldHook(t)
	const ns, lease = "e2e-rel-sigterm", "reliability-sigterm.acme.com"
	env.CreateNamespace(t, ns)
	first := startHoldHookManager(t, "first", lease)

	applyCR(g, holdHookGVK, ns, "upgraded", "message: v1")
	expectHoldHookConverged(t, ns, "upgraded", "v1", 60*time.Second)
	applyCR(g, holdHookGVK, ns, "upgraded", "message: v2\nhold: true")
	applyCR(g, holdHookGVK, ns, "installed", "message: fresh\nhold: true")
	expectPending(t, ns, "upgraded", "pending-upgrade")
	expectPending(t, ns, "installed", "pending-install")

	t.Log("SIGTERM during both actions: the process exits within the grace period")
	start := time.Now()
	g.Expect(first.stop()).To(Succeed())
	stopped := time.Since(start)
	t.Logf("stopped %s after SIGTERM", stopped.Round(100*time.Millisecond))
	g.Expect(stopped).To(BeNumerically("<", 30*time.Second))

	t.Log("no release is left pending; the upgrade was rolled back and v1 keeps serving")
	h, err := releaseHistory(ctx, ns, "upgraded")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("upgraded: %s", describeHistory(h))
	g.Expect(h).NotTo(ContainElement(HavePrefix("pending-")), describeHistory(h))
	g.Expect(h[2]).To(Equal("failed"), describeHistory(h))
	_, latest := latestRevision(h)
	g.Expect(latest).To(Equal("deployed"), describeHistory(h))
	g.Expect(holdHookMessage(ctx, ns, "upgraded")).To(Equal("v1"))
	h, err = releaseHistory(ctx, ns, "installed")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("installed: %s", describeHistory(h))
	g.Expect(h).NotTo(ContainElement(HavePrefix("pending-")), describeHistory(h))

	t.Log("the next process converges both")
	startHoldHookManager(t, "second", lease)
	expectHoldHookConverged(t, ns, "upgraded", "v2", 60*time.Second)
	expectHoldHookConverged(t, ns, "installed", "fresh", 60*time.Second)
}

// processAlive reports whether p runs (it has not exited or crashed). A
// child that exited stays a zombie until it is waited for, and a zombie
// still takes signals, so its state is read from /proc.
func processAlive(p *operatorProcess) bool {
	if p.proc == nil || p.proc.Cmd.ProcessState != nil || p.proc.Cmd.Process.Signal(syscall.Signal(0)) != nil {
		return false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.proc.Pid()))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if state, ok := strings.CutPrefix(line, "State:"); ok {
			return !strings.HasPrefix(strings.TrimSpace(state), "Z")
		}
	}
	return false
}

// retryWindow is how long TestReliabilityChartRejectsValues counts
// retries: 1 minute in make test, the 10 minutes when
// RELIABILITY_LONG is set (make test-reliability).
func retryWindow() time.Duration {
	if os.Getenv("RELIABILITY_LONG") != "" {
		return 10 * time.Minute
	}
	return time.Minute
}

// maxRetries bounds the attempts the controller's exponential backoff
// (5 ms doubling per failure) allows in window: about log2(window/5ms),
// plus a few for the reconciles that status changes trigger. A retry loop
// without backoff would make hundreds.
func maxRetries(window time.Duration) int32 {
	n := int32(1)
	for d := 5 * time.Millisecond; d < window; d *= 2 {
		n++
	}
	return n + 4
}

// TestReliabilityChartRejectsValues (issue scenario 5): values the schema
// accepts but the chart's templates reject (containerPort equal to
// statusPort). The apply succeeds; the runtime reports ReleaseFailed with
// the chart's message and a Warning Event, keeps running, retries with
// exponential backoff only, and deploys at once when the spec is fixed.
func TestReliabilityChartRejectsValues(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-rel-bad-values", "clash"
	env.CreateNamespace(t, ns)

	t.Log("the schema accepts the spec; the chart refuses it")
	applyCR(g, testkit.NginxGVK, ns, name, "containerPort: 8080\nstatusPort: 8080")
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "ReleaseFailed")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("InstallError"))
		g.Expect(msg).To(ContainSubstring("containerPort and statusPort must differ"))
		msgs, _, err := env.WarningEvents(ctx, ns, name, "InstallFailed")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(msgs).To(ContainElement(ContainSubstring("containerPort and statusPort must differ")))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(BeEmpty())

	window := retryWindow()
	t.Logf("retries are counted for %s", window)
	start := time.Now()
	_, before, err := env.WarningEvents(ctx, ns, name, "InstallFailed")
	g.Expect(err).NotTo(HaveOccurred())
	time.Sleep(window)
	_, after, err := env.WarningEvents(ctx, ns, name, "InstallFailed")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("failed attempts: %d before the window, %d in total after %s (bound for this window: %d)",
		before, after, time.Since(start).Round(time.Second), maxRetries(window+30*time.Second))
	g.Expect(after).To(BeNumerically("<=", maxRetries(window+30*time.Second)))
	g.Expect(after).To(BeNumerically(">", before), "the runtime stopped retrying")
	g.Expect(processAlive(env.manager)).To(BeTrue(), "the manager exited")

	t.Log("fixing the spec deploys the release in the reconcile the edit triggers")
	fixed := time.Now()
	applyCR(g, testkit.NginxGVK, ns, name, "containerPort: 8080\nstatusPort: 8081")
	g.Eventually(func(g Gomega) {
		u, err := env.Get(ctx, testkit.NginxGVK, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		status, reason, _ := testkit.Condition(u, "Deployed")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("InstallSuccessful"))
		status, _, _ = testkit.Condition(u, "ReleaseFailed")
		g.Expect(status).To(Equal("False"))
	}).WithTimeout(15 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("Deployed %s after the fix", time.Since(fixed).Round(100*time.Millisecond))
}

// TestReliabilityFailedUpgradeRollsBack (issue scenario 6): an upgrade the
// API server refuses half-way (a pod label value that is not a valid
// label) is recorded failed and rolled back to the last deployed revision;
// the condition and a Warning Event say so, and the Deployment keeps
// serving the previous pods. Fixing the spec upgrades normally.
func TestReliabilityFailedUpgradeRollsBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-rel-rollback", "nginx-web" // names with "nginx" name the Deployment alike
	env.CreateNamespace(t, ns)
	applyCR(g, testkit.NginxGVK, ns, name, "replicaCount: 1")
	dep := &appsv1.Deployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		g.Expect(testkit.DeploymentAvailable(dep)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	servingPods := podNames(g, ns, name)

	t.Log("an upgrade the API server refuses is rolled back")
	applyCR(g, testkit.NginxGVK, ns, name, "replicaCount: 1\npodLabels:\n  team: \"not a valid label value!\"")
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "ReleaseFailed")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("UpgradeError"))
		g.Expect(msg).To(ContainSubstring("rolled back to the last deployed revision"))
		t.Logf("ReleaseFailed: %s", msg)
		msgs, _, err := env.WarningEvents(ctx, ns, name, "UpgradeFailed")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(msgs).To(ContainElement(ContainSubstring("rolled back")))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	// The rollback is revision 3. The failed upgrade is retried after its
	// backoff, and each retry fails and is rolled back again: a failed
	// revision, then a rollback that supersedes the one before it. What
	// matters is that every failed upgrade ends in a deployed rollback,
	// which the latest revision is between two retries.
	g.Eventually(func(g Gomega) {
		h, err := releaseHistory(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h[2]).To(Equal("failed"), describeHistory(h))
		latest, status := latestRevision(h)
		g.Expect(latest).To(BeNumerically(">=", 3), describeHistory(h))
		g.Expect(status).To(Equal("deployed"), "the latest rollback: %s", describeHistory(h))
		t.Logf("history: %s", describeHistory(h))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	t.Log("the same upgrade waits for its backoff (10 s after the first failure)")
	// The reconcile after the rollback says so; until it has run, the
	// condition still carries the rollback's message.
	g.Eventually(func(g Gomega) {
		_, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "ReleaseFailed")
		g.Expect(msg).To(ContainSubstring("or at once when the spec changes"))
	}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	h, err := releaseHistory(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	latest, _ := latestRevision(h)
	g.Consistently(func(g Gomega) {
		h, err := releaseHistory(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		now, _ := latestRevision(h)
		g.Expect(now).To(Equal(latest), describeHistory(h))
		_, _, msg := env.ConditionOf(g, testkit.NginxGVK, ns, name, "ReleaseFailed")
		g.Expect(msg).To(ContainSubstring("or at once when the spec changes"))
	}).WithTimeout(4 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("the previous Deployment keeps serving, unchanged")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
	g.Expect(testkit.DeploymentAvailable(dep)).To(BeTrue())
	g.Expect(dep.Spec.Template.Labels).NotTo(HaveKey("team"))
	g.Expect(podNames(g, ns, name)).To(Equal(servingPods), "the pods were replaced")

	t.Log("fixing the spec upgrades the release")
	applyCR(g, testkit.NginxGVK, ns, name, "replicaCount: 1\npodLabels:\n  team: web")
	g.Eventually(func(g Gomega) {
		u, err := env.Get(ctx, testkit.NginxGVK, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		status, reason, _ := testkit.Condition(u, "Deployed")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("UpgradeSuccessful"))
		status, _, _ = testkit.Condition(u, "ReleaseFailed")
		g.Expect(status).To(Equal("False"))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Labels).To(HaveKeyWithValue("team", "web"))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// TestReliabilityRapidEdits (issue scenario 7): 50 spec edits in quick
// succession end with the release matching the last spec, and the stored
// history within --max-release-history (10).
func TestReliabilityRapidEdits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name, edits = "e2e-rel-rapid", "nginx-rapid", 50
	env.CreateNamespace(t, ns)
	applyCR(g, testkit.NginxGVK, ns, name, "replicaCount: 1")
	g.Eventually(func(g Gomega) {
		status, _, _ := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
		g.Expect(status).To(Equal("True"))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	start := time.Now()
	for i := 1; i <= edits; i++ {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(testkit.NginxGVK)
		u.SetNamespace(ns)
		u.SetName(name)
		patch := fmt.Sprintf(`{"spec":{"podAnnotations":{"edit":"%d"}}}`, i)
		g.Expect(env.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
	}
	t.Logf("%d edits applied in %s", edits, time.Since(start).Round(time.Millisecond))

	want := strconv.Itoa(edits)
	g.Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Annotations).To(HaveKeyWithValue("edit", want))
		h, err := releaseHistory(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		_, latest := latestRevision(h)
		g.Expect(latest).To(Equal("deployed"))
		status, _, _ := env.ConditionOf(g, testkit.NginxGVK, ns, name, "Deployed")
		g.Expect(status).To(Equal("True"))
	}).WithTimeout(120 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	h, err := releaseHistory(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	latest, _ := latestRevision(h)
	t.Logf("converged %s after the first edit: %d revisions made, %d stored", time.Since(start).Round(100*time.Millisecond), latest, len(h))
	g.Expect(len(h)).To(BeNumerically("<=", 10))
	secrets, err := env.ReleaseRevisions(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(secrets)).To(BeNumerically("<=", 10))

}

// podNames returns the names of the running pods of an Nginx release.
func podNames(g Gomega, ns, release string) []string {
	var pods corev1.PodList
	g.Expect(env.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": release})).To(Succeed())
	var names []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	return names
}

// TestReliabilityInvalidInputCorpus (issue scenario 8): a table of invalid
// specs across every kind, including strings that look like shell, template
// or config injection in names, hostnames and images. The API server
// refuses each at apply and names the field; none reaches the runtime: no
// object, no release Secret, no Event.
func TestReliabilityInvalidInputCorpus(t *testing.T) {
	ctx := context.Background()
	const ns = "e2e-rel-corpus"
	env.CreateNamespace(t, ns)
	const (
		nginx    = "apiVersion: web.acme.com/v1alpha1\nkind: Nginx"
		webapp   = "apiVersion: web.acme.com/v1alpha1\nkind: WebApp"
		tenant   = "apiVersion: tenancy.acme.com/v1alpha1\nkind: NamespaceTenant"
		scaler   = "apiVersion: autoscaling.acme.com/v1alpha1\nkind: CronScaler"
		app      = "deploymentTier: dev, webAppImage: registry.acme.com/app/app:v1.4"
		appHost  = app + ", webAppHostname: app.acme.com"
		target   = "scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}"
		dailyJob = "jobs: [{name: up, schedule: '0 8 * * *', replicas: 2}]"
	)
	cases := []struct {
		kind string // apiVersion and kind lines
		name string // metadata.name
		spec string // the spec, as a YAML flow mapping without braces
		want string // the field path the error must name
	}{
		// Nginx: types, enums, bounds, unknown fields.
		{nginx, "n-replicas-string", `replicaCount: "3"`, "spec.replicaCount"},
		{nginx, "n-replicas-fraction", `replicaCount: 1.5`, "spec.replicaCount"},
		{nginx, "n-replicas-negative", `replicaCount: -1`, "spec.replicaCount"},
		{nginx, "n-pull-policy", `image: {pullPolicy: Sometimes}`, "spec.image.pullPolicy"},
		{nginx, "n-port-zero", `containerPort: 0`, "spec.containerPort"},
		{nginx, "n-port-too-high", `containerPort: 65536`, "spec.containerPort"},
		{nginx, "n-unknown", `replicas: 2`, `unknown field "spec.replicas"`},
		{nginx, "n-unknown-nested", `ingress: {host: web.acme.com}`, `unknown field "spec.ingress.host"`},
		{nginx, "n-label-type", `podLabels: {team: 5}`, "spec.podLabels.team"},
		{nginx, "n-path-relative", `ingress: {path: "api"}`, "spec.ingress.path"},
		// Nginx: injection-looking strings.
		{nginx, "n-host-shell", `ingress: {enabled: true, hostname: "web.acme.com; rm -rf /"}`, "spec.ingress.hostname"},
		{nginx, "n-host-template", `ingress: {enabled: true, hostname: "{{ .Release.Name }}.acme.com"}`, "spec.ingress.hostname"},
		{nginx, "n-host-newline", `ingress: {enabled: true, hostname: "web.acme.com\n    server_name evil.example"}`, "spec.ingress.hostname"},
		{nginx, "n-tag-subshell", `image: {tag: "1.27$(id)"}`, "spec.image.tag"},
		{nginx, "n-repo-shell", `image: {repository: "nginx && curl evil.example"}`, "spec.image.repository"},
		{nginx, "n-fullname-shell", `fullnameOverride: "web;drop"`, "spec.fullnameOverride"},
		{nginx, "n-cron-shell", `cronScaling: {enabled: true, jobs: [{name: up, schedule: "* * * * *; rm -rf /", replicas: 1}]}`, "spec.cronScaling.jobs[0].schedule"},
		{nginx, "web;rm -rf", `replicaCount: 1`, "metadata.name"},
		// WebApp: required fields, enums, types, unknown and forbidden fields.
		{webapp, "w-no-image", `deploymentTier: dev, webAppHostname: app.acme.com`, "spec.webAppImage"},
		{webapp, "w-tier", `deploymentTier: production, webAppImage: registry.acme.com/app/app:v1.4, webAppHostname: app.acme.com`, "spec.deploymentTier"},
		{webapp, "w-replicas-string", appHost + `, webAppReplicas: "two"`, "spec.webAppReplicas"},
		{webapp, "w-unknown", appHost + `, replicas: 3`, `unknown field "spec.replicas"`},
		{webapp, "w-password", appHost + `, database: {auth: {password: hunter2}}`, "spec.database.auth.password"},
		{webapp, "w-db-port", appHost + `, database: {port: 70000}`, "spec.database.port"},
		// WebApp: injection-looking hostnames, images and identifiers.
		{webapp, "w-host-shell", app + `, webAppHostname: "app.acme.com;rm -rf /"`, "spec.webAppHostname"},
		{webapp, "w-host-subshell", app + `, webAppHostname: "$(reboot).acme.com"`, "spec.webAppHostname"},
		{webapp, "w-host-quote", app + `, webAppHostname: "app.acme.com\" ; curl evil.example"`, "spec.webAppHostname"},
		{webapp, "w-host-newline", app + `, webAppHostname: "app.acme.com\nevil.example"`, "spec.webAppHostname"},
		{webapp, "w-host-wildcard", app + `, webAppHostname: "*.acme.com"`, "spec.webAppHostname"},
		{webapp, "w-host-too-long", app + `, webAppHostname: "` + strings.Repeat("a", 250) + `.com"`, "spec.webAppHostname"},
		{webapp, "w-image-shell", `deploymentTier: dev, webAppImage: "registry.acme.com/app:v1;curl evil.example", webAppHostname: app.acme.com`, "spec.webAppImage"},
		{webapp, "w-db-name-sql", appHost + `, database: {name: "app; DROP TABLE users"}`, "spec.database.name"},
		{webapp, "app$(id)", appHost, "metadata.name"},
		// NamespaceTenant.
		{tenant, "t-ns-shell", `namespaceName: "team;rm", adminUsername: sam`, "spec.namespaceName"},
		{tenant, "t-ns-upper", `namespaceName: Team-A, adminUsername: sam`, "spec.namespaceName"},
		{tenant, "t-ns-kube", `namespaceName: kube-system, adminUsername: sam`, "spec.namespaceName"},
		{tenant, "t-tier", `namespaceName: team-a, adminUsername: sam, deploymentTier: qa`, "spec.deploymentTier"},
		{tenant, "t-unknown", `namespaceName: team-a, adminUsername: sam, tier: prod`, `unknown field "spec.tier"`},
		{tenant, "t-admin-type", `namespaceName: team-a, adminUsername: 42`, "spec.adminUsername"},
		{tenant, "tenant;drop", `namespaceName: team-a, adminUsername: sam`, "metadata.name"},
		// CronScaler.
		{scaler, "c-schedule-shell", target + `, jobs: [{name: up, schedule: "* * * * *; rm -rf /", replicas: 1}]`, "spec.jobs[0].schedule"},
		{scaler, "c-zone-traversal", target + ", " + dailyJob + `, timeZone: ../../etc/passwd`, "spec.timeZone"},
		{scaler, "c-kind-shell", `scaleTargetRef: {apiVersion: apps/v1, kind: "Deployment;rm", name: web}, ` + dailyJob, "spec.scaleTargetRef.kind"},
		{scaler, "c-target-subshell", `scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: "web$(id)"}, ` + dailyJob, "spec.scaleTargetRef.name"},
		{scaler, "c-replicas-negative", target + `, jobs: [{name: up, schedule: '0 8 * * *', replicas: -2}]`, "spec.jobs[0].replicas"},
		{scaler, "c-job-name-shell", target + `, jobs: [{name: "up;down", schedule: '0 8 * * *', replicas: 1}]`, "spec.jobs[0].name"},
		{scaler, "c-unknown", target + ", " + dailyJob + `, pauseAll: true`, `unknown field "spec.pauseAll"`},
	}
	t.Logf("%d invalid specs", len(cases))
	for _, tc := range cases {
		t.Run(strings.NewReplacer(";", "_", "$", "_", "(", "_", ")", "_", " ", "_").Replace(tc.name), func(t *testing.T) {
			g := NewWithT(t)
			manifest := fmt.Sprintf("%s\nmetadata: {name: %q, namespace: %s}\nspec: {%s}\n", tc.kind, tc.name, ns, tc.spec)
			if tc.kind == tenant {
				manifest = fmt.Sprintf("%s\nmetadata: {name: %q}\nspec: {%s}\n", tc.kind, tc.name, tc.spec)
			}
			out, err := env.KubectlIn(manifest, "apply", "-f", "-")
			g.Expect(err).To(HaveOccurred(), "kubectl apply accepted an invalid spec: %s", out)
			g.Expect(out).To(ContainSubstring(tc.want))
			g.Expect(out).NotTo(ContainSubstring("created"))
		})
	}

	t.Log("an immutable field cannot change; the release stays as it was")
	g := NewWithT(t)
	applyTenant(g, "t-immutable", "e2e-rel-immutable", "")
	waitDeployed(g, ctx, "t-immutable")
	h, err := releaseHistory(ctx, operatorNamespace, "t-immutable")
	g.Expect(err).NotTo(HaveOccurred())
	out, err := env.Kubectl("patch", "nt", "t-immutable", "--type=merge", "-p", `{"spec":{"namespaceName":"e2e-rel-other"}}`)
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("spec.namespaceName"))
	g.Consistently(func() (map[int]string, error) { return releaseHistory(ctx, operatorNamespace, "t-immutable") }).
		WithTimeout(3 * time.Second).Should(Equal(h))
	deleteTenantAndWait(t, g, ctx, "t-immutable", "e2e-rel-immutable")

	t.Log("nothing reached the runtime: no objects, no release Secrets, no Events")
	names := map[string]bool{}
	for _, tc := range cases {
		names[tc.name] = true
	}
	for _, gvk := range []schema.GroupVersionKind{testkit.NginxGVK,
		{Group: "web.acme.com", Version: "v1alpha1", Kind: "WebApp"},
		{Group: "tenancy.acme.com", Version: "v1alpha1", Kind: "NamespaceTenant"},
		{Group: "autoscaling.acme.com", Version: "v1alpha1", Kind: "CronScaler"}} {
		items, err := env.List(ctx, gvk, "")
		g.Expect(err).To(Succeed())
		for _, item := range items {
			g.Expect(names).NotTo(HaveKey(item.GetName()), "%s %s exists", gvk.Kind, item.GetName())
		}
	}
	var secrets corev1.SecretList
	g.Expect(env.Client.List(ctx, &secrets, client.MatchingLabels{"owner": "helm"})).To(Succeed())
	for _, s := range secrets.Items {
		g.Expect(names).NotTo(HaveKey(s.Labels["name"]), "release Secret %s/%s", s.Namespace, s.Name)
	}
	var events corev1.EventList
	g.Expect(env.Client.List(ctx, &events)).To(Succeed())
	for _, e := range events.Items {
		g.Expect(names).NotTo(HaveKey(e.InvolvedObject.Name), "Event %s: %s", e.Reason, e.Message)
	}
}

// leaseHolder returns the holder identity of a leader election Lease in
// the operator's namespace, "" when there is none.
func leaseHolder(ctx context.Context, name string) (string, error) {
	var l coordinationv1.Lease
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, &l); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// awaitLeader waits until a replica holds the Lease and returns its
// identity.
func awaitLeader(g Gomega, lease string) string {
	var id string
	g.EventuallyWithOffset(1, func() (string, error) {
		var err error
		id, err = leaseHolder(context.Background(), lease)
		return id, err
	}).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
	return id
}

// killLeaderExpectTakeover kills the leader with SIGKILL and expects
// another replica to hold the Lease within 20 s.
func killLeaderExpectTakeover(t *testing.T, g Gomega, leader *operatorProcess, lease, leaderID string) {
	t.Helper()
	t.Log("kill -9 the leader: the standby takes over within 20 s")
	killProcess(leader)
	killed := time.Now()
	g.Eventually(func() (string, error) { return leaseHolder(context.Background(), lease) }).
		WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).ShouldNot(Equal(leaderID))
	takeover := time.Since(killed)
	t.Logf("standby took the lease %s after the kill", takeover.Round(100*time.Millisecond))
	g.Expect(takeover).To(BeNumerically("<=", 20*time.Second))
}

// TestReliabilityManagerFailover (issue scenario 3, Helm runtime): two
// replicas of the runtime; the leader is killed with SIGKILL while a
// release is pending-upgrade. The standby takes the lease within 20 s,
// unlocks the release the dead leader left pending and converges it. The
// upgrade runs once on the new leader: the history shows exactly one
// failed (unlocked) revision and one deployed revision after it.
func TestReliabilityManagerFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	setupHoldHook(t)
	const ns, lease = "e2e-rel-failover", "reliability-failover.acme.com"
	env.CreateNamespace(t, ns)

	leader := startHoldHookManager(t, "a", lease)
	leaderID := awaitLeader(g, lease)
	startHoldHookManager(t, "b", lease)
	t.Logf("replica a leads (%s); replica b is on standby", leaderID)

	applyCR(g, holdHookGVK, ns, "web", "message: v1")
	expectHoldHookConverged(t, ns, "web", "v1", 60*time.Second)
	applyCR(g, holdHookGVK, ns, "web", "message: v2\nhold: true")
	expectPending(t, ns, "web", "pending-upgrade")

	killLeaderExpectTakeover(t, g, leader, lease, leaderID)

	converged := expectHoldHookConverged(t, ns, "web", "v2", 60*time.Second)
	t.Logf("the pending upgrade converged %s after the takeover", converged.Round(100*time.Millisecond))
	h, err := releaseHistory(ctx, ns, "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(Equal(map[int]string{1: "superseded", 2: "failed", 3: "deployed"}), describeHistory(h))
}

// TestReliabilityOutage (issue scenario 4): the API server, and then etcd,
// stop for 30 s right after a burst of changes. The Helm runtime keeps
// running (it replaces its manager after the lost lease instead of
// exiting, see package supervisor), reconnects, and converges every
// change; no release is left
// pending. The suite's runtime and extensions sidecar keep running too.
// Runs with RELIABILITY_LONG (make test-reliability) only.
func TestReliabilityOutage(t *testing.T) {
	if os.Getenv("RELIABILITY_LONG") == "" {
		t.Skip("RELIABILITY_LONG is not set (make test-reliability)")
	}
	ctx := context.Background()
	setupHoldHook(t)
	t.Cleanup(func() {
		// Should the extensions sidecar have exited, give the tests after
		// this one a live one.
		if !processAlive(env.extensions) {
			_ = env.extensions.stop()
			if err := env.extensions.start(); err != nil {
				t.Errorf("restarting the extensions sidecar: %v", err)
			}
		}
	})
	for _, component := range []string{"kube-apiserver", "etcd"} {
		t.Run(component, func(t *testing.T) {
			g := NewWithT(t)
			ns := "e2e-rel-outage-" + component
			env.CreateNamespace(t, ns)
			runtime := startHoldHookManager(t, "outage", "reliability-outage-"+component+".acme.com")
			applyCR(g, holdHookGVK, ns, "steady", "message: v1")
			expectHoldHookConverged(t, ns, "steady", "v1", 60*time.Second)

			t.Log("a burst of changes, then the outage")
			applyCR(g, holdHookGVK, ns, "steady", "message: v2")
			for i := range 5 {
				applyCR(g, holdHookGVK, ns, fmt.Sprintf("burst-%d", i), fmt.Sprintf("message: m%d", i))
			}
			g.Expect(env.cluster.StopProcess(component)).To(Succeed())
			stopped := time.Now()
			time.Sleep(30*time.Second - time.Since(stopped))
			g.Expect(processAlive(runtime)).To(BeTrue(), "the runtime exited during the outage")
			g.Expect(env.cluster.StartProcess(component)).To(Succeed())
			back := time.Now()
			t.Logf("%s was down for %s", component, back.Sub(stopped).Round(100*time.Millisecond))
			if component == "etcd" {
				g.Eventually(func() error { _, err := env.Kubectl("get", "--raw", "/readyz"); return err }).
					WithTimeout(60 * time.Second).Should(Succeed())
			}

			expectHoldHookConverged(t, ns, "steady", "v2", 120*time.Second)
			for i := range 5 {
				expectHoldHookConverged(t, ns, fmt.Sprintf("burst-%d", i), fmt.Sprintf("m%d", i), 60*time.Second)
			}
			t.Logf("everything converged %s after %s came back", time.Since(back).Round(100*time.Millisecond), component)
			g.Expect(processAlive(runtime)).To(BeTrue(), "the runtime exited")
			g.Expect(processAlive(env.manager)).To(BeTrue(), "the suite's manager exited")
			for _, name := range []string{"steady", "burst-0", "burst-1", "burst-2", "burst-3", "burst-4"} {
				h, err := releaseHistory(ctx, ns, name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(h).NotTo(ContainElement(HavePrefix("pending-")), "%s: %s", name, describeHistory(h))
			}
			g.Expect(processAlive(env.extensions)).To(BeTrue(), "the extensions sidecar exited")
		})
	}
}

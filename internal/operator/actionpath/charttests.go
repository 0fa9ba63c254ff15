package actionpath

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
	"github.com/acme/platform-operator/internal/operator/workloadrefs"
)

// The chart's tests (helm test) as a gate of each revision.
//
// A kind with remediation.test (or a resource with platform.acme.com/test:
// "true") has its chart's test hooks run on each revision once every
// object of it is ready. The readiness controller holds Ready at False,
// reason Testing, and wakes the kind's reconciler; this layer runs the
// tests in that reconcile, where no other action on the release runs,
// before the library's dry-run upgrade. Helm records each test hook's
// outcome on the revision, so they run once per revision, a restart
// included. The test Pods' last lines of log go into the Event, then the
// Pods are deleted. A failed test makes Ready False (TestFailed), which
// the remediation acts on at once, without waiting for the deadline.

// Reasons of the readiness and Events of chart tests.
const (
	// ReasonTesting: every object is ready and the chart's tests run.
	ReasonTesting = "Testing"
	// ReasonTestFailed: a test hook of the revision failed.
	ReasonTestFailed = "TestFailed"
	// ReasonTestPassed: every test hook of the revision passed.
	ReasonTestPassed = "TestPassed"
)

// testLogLines is how many last lines of each test Pod's log an Event
// and the Ready message carry; testLogBytes bounds them.
const (
	testLogLines = 5
	testLogBytes = 600
)

// TestResult is the outcome of the tests of one revision.
type TestResult struct {
	Revision int
	Passed   bool
	// Message says which tests failed and what their Pods logged last.
	Message string
}

// TestResults hands the outcomes of the chart tests this process ran to
// the readiness controller, which judges them; OnResult, when set, is
// called with the resource after each run. The readiness controller is
// another controller, with reconciles of its own, so the outcomes are kept
// by release, not in the record of the reconcile that ran the tests.
type TestResults struct {
	mu       sync.Mutex
	results  map[string]TestResult
	OnResult func(obj client.Object)
}

// NewTestResults returns an empty registry.
func NewTestResults() *TestResults {
	return &TestResults{results: map[string]TestResult{}}
}

// Get returns the result of the tests of revision of the release key.
func (r *TestResults) Get(key string, revision int) (TestResult, bool) {
	if r == nil {
		return TestResult{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[key]
	return res, ok && res.Revision == revision
}

func (r *TestResults) set(key string, obj client.Object, res TestResult) {
	r.mu.Lock()
	r.results[key] = res
	notify := r.OnResult
	r.mu.Unlock()
	if notify != nil {
		notify(obj)
	}
}

// TestHooks counts the test hooks of rel and reads Helm's record of their
// last run: ran when every one ran, failed naming those that failed.
func TestHooks(rel *hrelease.Release) (n int, ran bool, failed []string) {
	ran = true
	for _, h := range rel.Hooks {
		if !isTestHook(h) {
			continue
		}
		n++
		switch h.LastRun.Phase {
		case hrelease.HookPhaseSucceeded:
		case hrelease.HookPhaseFailed:
			failed = append(failed, h.Name)
		default:
			ran = false
		}
	}
	return n, ran && n > 0, failed
}

func isTestHook(h *hrelease.Hook) bool {
	for _, e := range h.Events {
		if e == hrelease.HookTest {
			return true
		}
	}
	return false
}

// TestsRequested reports whether the readiness controller asks for obj's
// tests: its Ready condition reads Testing for obj's generation.
func TestsRequested(obj client.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		return m["reason"] == ReasonTesting && gen == obj.GetGeneration()
	}
	return false
}

// chartTests is the layer.
func chartTests(rem watchconfig.Remediation, recorder record.EventRecorder, results *TestResults, log logr.Logger) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, t target, below actionClient) actionClient {
		policy, _ := rem.For(t.obj.GetAnnotations())
		if !policy.Test || results == nil || !TestsRequested(t.obj) {
			return below
		}
		return &testingClient{actionClient: below, t: t, timeout: policy.ReadyTimeout, recorder: recorder, results: results, log: log}
	}
}

type testingClient struct {
	actionClient
	t        target
	timeout  time.Duration
	recorder record.EventRecorder
	results  *TestResults
	log      logr.Logger
}

// DryRunUpgrade first runs the tests of the current revision when they
// have not run yet.
func (c *testingClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	if cur, err := c.Get(name); err == nil {
		if n, ran, _ := TestHooks(cur); n > 0 && !ran {
			c.run(cur)
		}
	}
	return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
}

// run runs the test hooks of cur, reports the outcome and deletes the
// test Pods.
func (c *testingClient) run(cur *hrelease.Release) {
	cfg := c.Config()
	rt := action.NewReleaseTesting(cfg)
	rt.Namespace = cur.Namespace
	rt.Timeout = c.timeout
	start := time.Now()
	rel, runErr := rt.Run(cur.Name)
	if rel == nil {
		rel = cur
	}
	n, _, failed := TestHooks(rel)
	res := TestResult{Revision: cur.Version, Passed: runErr == nil}
	if runErr == nil {
		res.Message = fmt.Sprintf("%d test(s) of revision %d passed in %s", n, cur.Version, time.Since(start).Round(time.Second))
		c.recorder.Event(c.t.obj, corev1.EventTypeNormal, ReasonTestPassed, res.Message)
	} else {
		what := "a test"
		if len(failed) > 0 {
			what = "test " + strings.Join(failed, ", ")
		}
		// Helm's error spans lines ("1 error occurred:\n\t* pod x failed").
		res.Message = fmt.Sprintf("%s of revision %d failed: %s", what, cur.Version, strings.Join(strings.Fields(runErr.Error()), " "))
		if logs := c.lastLines(rt, rel, failed); logs != "" {
			res.Message += "; " + manifest.RedactText(logs, c.secretValues(cfg, rel))
		}
		c.recorder.Event(c.t.obj, corev1.EventTypeWarning, ReasonTestFailed, res.Message)
	}
	c.deletePods(cfg, rel)
	c.results.set(c.t.key(), c.t.obj, res)
}

// lastLines returns the last lines of the logs of the failed test Pods,
// bounded.
func (c *testingClient) lastLines(rt *action.ReleaseTesting, rel *hrelease.Release, failed []string) string {
	if len(failed) > 0 {
		rt.Filters = map[string][]string{action.IncludeNameFilter: failed}
		only := *rel
		only.Hooks = nil
		for _, h := range rel.Hooks {
			for _, f := range failed {
				if h.Name == f {
					only.Hooks = append(only.Hooks, h)
				}
			}
		}
		rel = &only
	}
	var buf bytes.Buffer
	if err := rt.GetPodLogs(&buf, rel); err != nil {
		return "its log could not be read: " + err.Error()
	}
	var parts []string
	for _, pod := range strings.Split(buf.String(), "POD LOGS: ") {
		name, log, ok := strings.Cut(strings.TrimSpace(pod), "\n")
		if !ok || strings.TrimSpace(log) == "" {
			continue
		}
		lines := strings.Split(strings.TrimSpace(log), "\n")
		if len(lines) > testLogLines {
			lines = lines[len(lines)-testLogLines:]
		}
		text := strings.Join(lines, " | ")
		if len(text) > testLogBytes {
			text = "…" + text[len(text)-testLogBytes:]
		}
		parts = append(parts, fmt.Sprintf("Pod %s logged: %s", name, text))
	}
	return strings.Join(parts, "; ")
}

// secretValues lists the values a test Pod's log must not carry into an
// Event: those of the Secrets the release renders, and those of the
// Secrets its test Pods read (environment, envFrom, volumes). A Secret
// that cannot be read is skipped; its name is logged.
func (c *testingClient) secretValues(cfg *action.Configuration, rel *hrelease.Release) []string {
	all := rel.Manifest
	var reads []workloadrefs.Ref
	for _, h := range rel.Hooks {
		all += "\n---\n" + h.Manifest
		if !isTestHook(h) || h.Kind != "Pod" {
			continue
		}
		var pod corev1.Pod
		if err := yaml.Unmarshal([]byte(h.Manifest), &pod); err == nil {
			reads = append(reads, workloadrefs.FromPodSpec(&pod.Spec)...)
		}
	}
	values := manifest.SecretValues(all)
	if len(reads) == 0 {
		return values
	}
	cs, err := cfg.KubernetesClientSet()
	if err != nil {
		return values
	}
	for _, ref := range reads {
		if ref.Kind != workloadrefs.Secret {
			continue
		}
		sec, err := cs.CoreV1().Secrets(rel.Namespace).Get(context.Background(), ref.Name, metav1.GetOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				c.log.Error(err, "Cannot read a Secret a test Pod reads, to keep its values out of the Event", "release", c.t.key(), "secret", ref.Name)
			}
			continue
		}
		values = append(values, manifest.DataValues(sec.Data)...)
	}
	return values
}

// deletePods deletes the test Pods of rel: the outcome is recorded, and
// Pods left behind count against the namespace's quota.
func (c *testingClient) deletePods(cfg *action.Configuration, rel *hrelease.Release) {
	cs, err := cfg.KubernetesClientSet()
	if err != nil {
		c.log.Error(err, "Cannot delete the test Pods", "release", c.t.key())
		return
	}
	for _, h := range rel.Hooks {
		if !isTestHook(h) || h.Kind != "Pod" {
			continue
		}
		err := cs.CoreV1().Pods(rel.Namespace).Delete(context.Background(), h.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			c.log.Error(err, "Cannot delete a test Pod", "release", c.t.key(), "pod", h.Name)
		}
	}
}

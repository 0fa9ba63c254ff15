package real

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/acme/platform-operator/test/realnode"
	"github.com/acme/platform-operator/test/testkit"
)

// probe is one request of probeService: when it was sent, how long the
// name lookup and the HTTP exchange took, and what came back.
type probe struct {
	at         time.Time
	lookup     time.Duration
	lookupErr  bool
	exchange   time.Duration
	statusLine string
}

func (p probe) answered() bool {
	return strings.HasPrefix(p.statusLine, "HTTP/1.1 200") || strings.HasPrefix(p.statusLine, "HTTP/1.0 200")
}

func (p probe) String() string {
	if p.lookupErr {
		return fmt.Sprintf("%s: name lookup failed after %s", p.at.Format("15:04:05.000"), p.lookup.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: lookup %s, %q after %s", p.at.Format("15:04:05.000"), p.lookup.Round(time.Millisecond), p.statusLine, p.exchange.Round(time.Millisecond))
}

// probeService sends a GET to host every 200 ms from the client Pod of
// ns, n times. Each request looks the name up first (cluster DNS) and then
// connects to the address it got (the Service's virtual IP), and the two
// are timed apart, so a lost DNS packet is told from a Service that did
// not answer.
func probeService(ns, host string, n int) ([]probe, error) {
	script := fmt.Sprintf(`ms() { date +%%s%%3N; }
for i in $(seq %d); do
  t0=$(ms)
  ip=$(timeout 5 getent hosts %s | awk '{print $1; exit}')
  t1=$(ms)
  if [ -z "$ip" ]; then echo "probe: $t0 $t1 $t1 lookup-failed"; sleep 0.2; continue; fi
  line=$(timeout 5 bash -c "exec 3<>/dev/tcp/$ip/80 && printf 'GET / HTTP/1.0\r\nHost: %s\r\n\r\n' >&3 && head -1 <&3" 2>&1 | tr -d '\r')
  echo "probe: $t0 $t1 $(ms) ${line:-no answer}"
  sleep 0.2
done`, n, host, host)
	out, err := cluster.ExecIn(ns, "client", "", "bash", "-c", script)
	var probes []probe
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "probe: ")
		if !ok {
			continue
		}
		f := strings.SplitN(rest, " ", 4)
		if len(f) < 4 {
			continue
		}
		var ms [3]int64
		for i := range ms {
			ms[i], _ = strconv.ParseInt(f[i], 10, 64) // 0 (1970) for a line cut short
		}
		probes = append(probes, probe{
			at:         time.UnixMilli(ms[0]),
			lookup:     time.Duration(ms[1]-ms[0]) * time.Millisecond,
			lookupErr:  f[3] == "lookup-failed",
			exchange:   time.Duration(ms[2]-ms[1]) * time.Millisecond,
			statusLine: f[3],
		})
	}
	return probes, err
}

// TestBrokenUpgradeRollsBackOnRealPods: a Ready WebApp upgraded to an
// image that does not exist names the Pod's ErrImagePull or
// ImagePullBackOff in Ready within 30 s of the edit, is rolled back by
// itself once its deadline passes, and its Service answers every request
// sent every 200 ms through the whole episode: the old ReplicaSet keeps
// serving while the new Pod cannot start.
func TestBrokenUpgradeRollsBackOnRealPods(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "real-remediation", "till"
	const missing = "localhost:5000/webapp-test-app:does-not-exist"
	cluster.CreateNamespace(t, ns)
	cluster.ClientPod(t, ns, realnode.NginxImage)

	withDeadline := func(manifest string) string {
		return strings.Replace(manifest, "  name: "+name+"\n", "  name: "+name+"\n  annotations: {platform.acme.com/ready-timeout: 45s}\n", 1)
	}
	good := withDeadline(realnode.WebAppManifest(name, 1))
	cluster.Apply(t, ns, good)
	out, err := cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "webapp/"+name, "--timeout=240s")
	g.Expect(err).NotTo(HaveOccurred(), out)

	host := name + "." + ns + ".svc.cluster.local"
	type probed struct {
		probes []probe
		err    error
	}
	done := make(chan probed, 1)
	go func() {
		p, err := probeService(ns, host, 600) // two minutes and more
		done <- probed{p, err}
	}()
	time.Sleep(3 * time.Second)

	bad := strings.Replace(good, "webAppImage: "+realnode.AppImage, "webAppImage: "+missing, 1)
	g.Expect(bad).To(ContainSubstring(missing))
	edited := time.Now()
	cluster.Apply(t, ns, bad)
	g.Eventually(func(g Gomega) {
		status, _, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("False"))
		g.Expect(msg).To(MatchRegexp(`Pod ` + name + `-[a-z0-9-]+: (ImagePullBackOff|ErrImagePull) \(` + missing + `\)`))
	}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	_, _, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
	t.Logf("Ready=False %s after the edit: %s", time.Since(edited).Round(100*time.Millisecond), msg)

	g.Eventually(func() ([]string, error) { return cluster.ReleaseRevisions(ctx, ns, name) }).
		WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(HaveLen(3))
	t.Logf("rolled back %s after the edit (deadline 45s)", time.Since(edited).Round(100*time.Millisecond))
	out, err = cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "webapp/"+name, "--timeout=120s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("Ready again %s after the edit", time.Since(edited).Round(100*time.Millisecond))
	status, reason, msg := cluster.ConditionOf(g, testkit.WebAppGVK, ns, name, "Stalled")
	g.Expect([]string{status, reason}).To(Equal([]string{"True", "RolledBack"}), msg)
	g.Expect(msg).To(ContainSubstring("revision 2 did not become Ready within 45s"))
	g.Eventually(func() ([]string, error) { return cluster.EventReasons(ctx, ns, name) }).
		WithTimeout(10 * time.Second).Should(ContainElement("RolledBack"))

	p := <-done
	g.Expect(p.err).NotTo(HaveOccurred())
	var answered int
	var lookupFailed, unanswered, slow []string
	for _, pr := range p.probes {
		if pr.lookup > time.Second || pr.exchange > time.Second {
			slow = append(slow, fmt.Sprintf("%s (edit%+.1fs)", pr, pr.at.Sub(edited).Seconds()))
		}
		switch {
		case pr.answered():
			answered++
		case pr.lookupErr:
			lookupFailed = append(lookupFailed, fmt.Sprintf("%s (edit%+.1fs)", pr, pr.at.Sub(edited).Seconds()))
		default:
			unanswered = append(unanswered, fmt.Sprintf("%s (edit%+.1fs)", pr, pr.at.Sub(edited).Seconds()))
		}
	}
	t.Logf("the Service answered %d of %d requests through the episode; %d name lookups failed", answered, len(p.probes), len(lookupFailed))
	for _, l := range slow {
		t.Logf("  slow: %s", l)
	}
	for _, l := range append(lookupFailed, unanswered...) {
		t.Logf("  failed: %s", l)
	}
	g.Expect(unanswered).To(BeEmpty(), "requests unanswered while the new Pod could not start")
	g.Expect(answered).To(BeNumerically(">=", 400))
}

// TestFailingChartTestRollsBack: an Nginx whose chart test runs
// (platform.acme.com/test: "true") is Ready once the test passed; an
// edit whose Pods are ready but whose page answers 500 fails the test and
// is rolled back at once, the test's output in the Event.
func TestFailingChartTestRollsBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "real-chart-test", "checked-nginx"
	cluster.CreateNamespace(t, ns)
	cluster.ClientPod(t, ns, realnode.NginxImage)
	annotate := func(manifest string) string {
		return strings.Replace(manifest, "  name: "+name+"\n", "  name: "+name+"\n  annotations: {platform.acme.com/test: \"true\"}\n", 1)
	}
	good := annotate(nginxManifest(name, "v1"))
	cluster.Apply(t, ns, good)
	out, err := cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx/"+name, "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() ([]string, error) { return cluster.EventsWithReason(ctx, ns, name, "TestPassed") }).
		WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
	cr, err := cluster.Get(ctx, testkit.NginxGVK, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	history, _, _ := unstructured.NestedSlice(cr.Object, "status", "history")
	g.Expect(history).NotTo(BeEmpty())
	g.Expect(history[0].(map[string]any)["test"]).To(Equal("passed"))

	t.Log("an edit whose health check passes and whose page is broken")
	broken := strings.Replace(good, `location / { default_type text/plain; return 200 "v1\n"; }`, `location / { return 500; }`, 1)
	g.Expect(broken).NotTo(Equal(good))
	edited := time.Now()
	cluster.Apply(t, ns, broken)
	g.Eventually(func() ([]string, error) { return cluster.ReleaseRevisions(ctx, ns, name) }).
		WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(HaveLen(3))
	t.Logf("rolled back %s after the edit", time.Since(edited).Round(100*time.Millisecond))
	var failed []string
	g.Eventually(func() ([]string, error) {
		var err error
		failed, err = cluster.EventsWithReason(ctx, ns, name, "TestFailed")
		return failed, err
	}).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
	t.Logf("TestFailed Event: %s", failed[0])
	g.Expect(failed[0]).To(ContainSubstring("500"), "the test Pod's output is in the Event")
	out, err = cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx/"+name, "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	status, reason, msg := cluster.ConditionOf(g, testkit.NginxGVK, ns, name, "Stalled")
	g.Expect([]string{status, reason}).To(Equal([]string{"True", "RolledBack"}), msg)
	g.Expect(msg).To(ContainSubstring("revision 2 failed its tests"))
	// The rollback replaces the Pods; until kube-proxy has dropped the old
	// Pod's endpoint a connection can still be sent to it.
	g.Eventually(func() (string, error) { return cluster.HTTPGet(ns, name+"."+ns+".svc.cluster.local", 80, "/") }).
		WithTimeout(time.Minute).WithPolling(2*time.Second).Should(ContainSubstring("v1"), "the rolled-back page")
	pods, err := cluster.Kubectl("get", "pods", "-n", ns, "-l", "app.kubernetes.io/component=test", "-o", "name")
	g.Expect(err).NotTo(HaveOccurred(), pods)
	g.Expect(strings.TrimSpace(pods)).To(BeEmpty(), "test Pods are deleted")
}

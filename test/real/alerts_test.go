package real

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/test/realnode"
)

// notReadyFor is how long the test's rules wait before
// PlatformOperatorReleaseNotReady fires: the chart's 15m, shortened.
const notReadyFor = "20s"

// TestNotReadyAlertFiresAndResolves: a real Prometheus (Debian's package)
// scrapes the operator's Pods as the chart's ServiceMonitor describes
// (both metrics ports of each Pod, a metrics-reader ServiceAccount's
// token) and evaluates the chart's own alert rules. An Nginx whose image
// cannot be pulled makes PlatformOperatorReleaseNotReady fire; fixing the
// image resolves it.
func TestNotReadyAlertFiresAndResolves(t *testing.T) {
	g := NewWithT(t)
	const ns, name = "real-alerts", "broken"
	prom := startPrometheus(t)

	const alert = "PlatformOperatorReleaseNotReady"
	g.Eventually(func(g Gomega) {
		g.Expect(prom.targetsUp(g)).To(BeNumerically(">=", 4), "two Pods, two endpoints each")
	}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
	g.Expect(prom.alertState(g, alert, "Nginx")).To(BeEmpty(), "no Nginx is not Ready before the test breaks one")

	cluster.CreateNamespace(t, ns)
	manifest := func(tag string) string {
		return fmt.Sprintf("apiVersion: web.acme.com/v1alpha1\nkind: Nginx\nmetadata:\n  name: %s\nspec:\n  replicaCount: 1\n  image: {repository: %s, tag: %q}\n",
			name, realnode.NginxRepo, tag)
	}
	broken := time.Now()
	cluster.Apply(t, ns, manifest("does-not-exist"))
	g.Eventually(func(g Gomega) {
		g.Expect(prom.alertState(g, alert, "Nginx")).To(Equal("firing"))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("%s firing %s after the broken Nginx was applied (for: %s)", alert, time.Since(broken).Round(time.Second), notReadyFor)

	fixed := time.Now()
	cluster.Apply(t, ns, manifest(realnode.NginxTag))
	out, err := cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx/"+name, "--timeout=180s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	ready := time.Since(fixed)
	g.Eventually(func(g Gomega) {
		g.Expect(prom.alertState(g, alert, "Nginx")).To(BeEmpty())
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("%s resolved %s after the fix (Ready after %s)", alert, time.Since(fixed).Round(time.Second), ready.Round(time.Second))
}

// prometheus is a Prometheus server this test started on loopback.
type prometheus struct{ url string }

// startPrometheus starts Prometheus with the chart's rules (rendered by
// helm template, the not-Ready alert's `for` shortened) scraping the
// operator, and stops it when the test ends.
func startPrometheus(t *testing.T) *prometheus {
	t.Helper()
	g := NewWithT(t)
	bin, err := exec.LookPath("prometheus")
	g.Expect(err).NotTo(HaveOccurred(), "Debian's prometheus package (make test-real installs it)")
	dir := t.TempDir()

	// The chart's PrometheusRule, as helm install would create it.
	out, err := helm("template", "platform-operator", "dist/chart", "--namespace", operatorNamespace,
		"--set", "prometheusRule.enabled=true", "--show-only", "templates/config/prometheusrule.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	var rule struct {
		Spec struct {
			Groups []map[string]any `json:"groups"`
		} `json:"spec"`
	}
	g.Expect(yaml.Unmarshal([]byte(out), &rule)).To(Succeed())
	shortened := false
	for _, group := range rule.Spec.Groups {
		for _, r := range group["rules"].([]any) {
			r := r.(map[string]any)
			if r["alert"] == "PlatformOperatorReleaseNotReady" {
				r["for"] = notReadyFor
				shortened = true
			}
		}
	}
	g.Expect(shortened).To(BeTrue(), "the chart's rules have PlatformOperatorReleaseNotReady")
	rules, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600)).To(Succeed())

	// A scraper's identity: bound to the metrics-reader ClusterRole, as
	// docs/monitoring.md says.
	cluster.CreateNamespace(t, "real-prometheus")
	cluster.Apply(t, "real-prometheus", `apiVersion: v1
kind: ServiceAccount
metadata:
  name: prometheus
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: real-prometheus-metrics-reader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: platform-operator-metrics-reader
subjects:
- kind: ServiceAccount
  name: prometheus
  namespace: real-prometheus
`)
	t.Cleanup(func() {
		_, _ = cluster.Kubectl("delete", "clusterrolebinding", "real-prometheus-metrics-reader", "--ignore-not-found")
	})
	token, err := cluster.Kubectl("create", "token", "prometheus", "-n", "real-prometheus", "--duration=1h")
	g.Expect(err).NotTo(HaveOccurred(), token)
	g.Expect(os.WriteFile(filepath.Join(dir, "token"), []byte(strings.TrimSpace(token)), 0o600)).To(Succeed())

	// What the ServiceMonitor makes of the metrics Service: a target per
	// Pod and port, job named after the Service, the namespace and pod
	// labels. Debian's Prometheus is built without Kubernetes service
	// discovery, so the targets are listed here in a file.
	const job = "platform-operator-controller-manager-metrics-service"
	var targets strings.Builder
	for _, pod := range operatorPods(g) {
		g.Expect(pod.Status.PodIP).NotTo(BeEmpty())
		fmt.Fprintf(&targets, "- targets: ['%[1]s:8443', '%[1]s:8444']\n  labels: {namespace: %[2]s, pod: %[3]s}\n", pod.Status.PodIP, operatorNamespace, pod.Name)
	}
	g.Expect(os.WriteFile(filepath.Join(dir, "targets.yaml"), []byte(targets.String()), 0o600)).To(Succeed())
	config := fmt.Sprintf(`global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files: [%[1]s/rules.yaml]
scrape_configs:
- job_name: %[2]s
  scheme: https
  authorization: {credentials_file: %[1]s/token}
  tls_config: {insecure_skip_verify: true}
  file_sd_configs:
  - files: [%[1]s/targets.yaml]
`, dir, job)
	g.Expect(os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600)).To(Succeed())
	if out, err := exec.Command("promtool", "check", "config", filepath.Join(dir, "prometheus.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}

	addr := freeLoopbackAddr(t)
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = log, log
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("prometheus log:\n%s", lastLines(string(data), 40))
		}
		log.Close()
	})
	p := &prometheus{url: "http://" + addr}
	g.Eventually(func() error {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	return p
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// get decodes the data of a Prometheus API response.
func (p *prometheus) get(g Gomega, path string, into any) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	var envelope struct {
		Data json.RawMessage `json:"data"`
	}
	g.Expect(json.Unmarshal(body, &envelope)).To(Succeed())
	g.Expect(json.Unmarshal(envelope.Data, into)).To(Succeed())
}

// targetsUp counts the active targets whose last scrape succeeded.
func (p *prometheus) targetsUp(g Gomega) int {
	var data struct {
		ActiveTargets []struct {
			Health    string `json:"health"`
			LastError string `json:"lastError"`
		} `json:"activeTargets"`
	}
	p.get(g, "/api/v1/targets", &data)
	up := 0
	for _, target := range data.ActiveTargets {
		if target.Health == "up" {
			up++
		}
	}
	return up
}

// alertState is the state (pending or firing) of the alert for kind, or
// empty when it is neither.
func (p *prometheus) alertState(g Gomega, name, kind string) string {
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	p.get(g, "/api/v1/alerts", &data)
	for _, a := range data.Alerts {
		if a.Labels["alertname"] == name && a.Labels["kind"] == kind {
			return a.State
		}
	}
	return ""
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/test/testkit"
)

// prometheusOwnMetrics are series Prometheus writes itself, not scraped
// from a target.
var prometheusOwnMetrics = map[string]bool{"up": true}

// TestMonitoringMetricsExported: every metric that an alert of
// config/prometheus/alerts.yaml or a panel or variable of
// config/prometheus/dashboard.json reads is exported by the manager or
// the sidecar, once they have done what the metrics count: releases
// installed, upgraded, not Ready and rolled back; a CronScaler's scale;
// admission requests allowed and refused (the API server calls the
// sidecar's webhook for this test's namespace only).
func TestMonitoringMetricsExported(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-monitoring", "mon-nginx"
	env.CreateNamespace(t, ns)

	queries := monitoringQueries(t)

	t.Log("the API server calls the sidecar's webhook for the Nginxes of this namespace")
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-monitoring"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "vnginx.e2e-monitoring.acme.com",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             kptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           kptr.To(admissionregistrationv1.Fail),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL:      kptr.To("https://" + env.conversion.address + "/validate"),
				CABundle: env.conversion.caPEM,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{testkit.NginxGVK.Group}, APIVersions: []string{testkit.NginxGVK.Version},
					Resources: []string{"nginxes"}, Scope: kptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
		}},
	}
	g.Expect(env.Client.Create(ctx, vwc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), vwc) })

	t.Log("a refusal: an unreadable ready-timeout, created as a server-side dry run until the webhook answers")
	refused := fmt.Sprintf("apiVersion: %s\nkind: Nginx\nmetadata:\n  name: mon-refused\n  namespace: %s\n  annotations:\n    platform.acme.com/ready-timeout: soon\nspec:\n  replicaCount: 1\n",
		testkit.NginxGVK.GroupVersion(), ns)
	g.Eventually(func() (string, error) {
		out, err := env.KubectlIn(refused, "create", "--dry-run=server", "-f", "-")
		if err == nil {
			return out, fmt.Errorf("accepted (the webhook configuration is not in use yet): %s", out)
		}
		return out, nil
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(ContainSubstring("ready-timeout"))

	t.Log("an install through the webhook, Ready; then an upgrade that never becomes Ready and is rolled back")
	applyCR(g, testkit.NginxGVK, ns, name, `replicaCount: 1`)
	out, err := env.Kubectl("annotate", "-n", ns, "nginx/"+name, "platform.acme.com/ready-timeout=15s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx/"+name, "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"nodeSelector":{"platform.acme.com/no-such-node":"true"}}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("a CronScaler whose job has always fired scales its Deployment at once")
	dep := newDeployment(ns, "mon-web", 1)
	g.Expect(env.Client.Create(ctx, dep)).To(Succeed())
	env.ExpectApply(g, ns, cronScalerManifest("mon-web", "apps/v1", "Deployment", "mon-web",
		[]cronJob{{"every-minute", "* * * * *", 2}}, ""))
	g.Eventually(func() (int32, error) { return specReplicas(ctx, dep) }).
		WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(int32(2)))

	g.Eventually(func() (float64, error) {
		return env.manager.metric("platform_operator_remediations_total", "kind=Nginx", "action=rollback")
	}).WithTimeout(90*time.Second).WithPolling(time.Second).Should(BeNumerically(">=", 1), "the broken upgrade is rolled back")

	exported := map[string]bool{}
	for _, p := range []*operatorProcess{env.manager, env.extensions} {
		names, err := exportedMetricNames(p)
		g.Expect(err).NotTo(HaveOccurred())
		for n := range names {
			exported[n] = true
		}
	}
	var missing []string
	for _, q := range queries {
		names := promqlMetricNames(q.expr)
		g.Expect(names).NotTo(BeEmpty(), "%s reads no metric: %s", q.where, q.expr)
		for _, n := range names {
			if !exported[n] && !prometheusOwnMetrics[n] {
				missing = append(missing, fmt.Sprintf("%s: %s", q.where, n))
			}
		}
	}
	g.Expect(missing).To(BeEmpty(), "metrics read by alerts or the dashboard that neither process exports")
	t.Logf("%d queries read metrics both processes export", len(queries))
}

// monitoringQuery is one PromQL expression of the monitoring files, and
// where it is.
type monitoringQuery struct{ where, expr string }

// monitoringQueries reads the expressions of the alerts and of the
// dashboard's panels and variables.
func monitoringQueries(t *testing.T) []monitoringQuery {
	t.Helper()
	g := NewWithT(t)
	dir := filepath.Join(env.Root, "config", "prometheus")
	var queries []monitoringQuery

	data, err := os.ReadFile(filepath.Join(dir, "alerts.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct{ Alert, Record, Expr string }
			}
		}
	}
	g.Expect(yaml.Unmarshal(data, &rule)).To(Succeed())
	for _, grp := range rule.Spec.Groups {
		for _, r := range grp.Rules {
			queries = append(queries, monitoringQuery{"alert " + r.Alert + r.Record, r.Expr})
		}
	}
	g.Expect(queries).NotTo(BeEmpty(), "alerts.yaml has no rules")
	alerts := len(queries)

	data, err = os.ReadFile(filepath.Join(dir, "dashboard.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var dashboard struct {
		Panels     []dashboardPanel
		Templating struct {
			List []struct {
				Name       string
				Type       string
				Definition string
			}
		}
	}
	g.Expect(json.Unmarshal(data, &dashboard)).To(Succeed())
	var panels func([]dashboardPanel)
	panels = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				queries = append(queries, monitoringQuery{"panel " + p.Title, tg.Expr})
			}
			panels(p.Panels)
		}
	}
	panels(dashboard.Panels)
	// label_values(metric{...}, label): the metric is the first argument.
	labelValues := regexp.MustCompile(`^label_values\(\s*([^,]+),\s*\w+\s*\)$`)
	for _, v := range dashboard.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(strings.TrimSpace(v.Definition))
		g.Expect(m).NotTo(BeNil(), "variable %s: a query this test does not read: %q", v.Name, v.Definition)
		queries = append(queries, monitoringQuery{"variable " + v.Name, m[1]})
	}
	g.Expect(len(queries)).To(BeNumerically(">", alerts), "dashboard.json has no queries")
	return queries
}

// dashboardPanel is what the test reads of a Grafana panel; rows hold
// panels of their own.
type dashboardPanel struct {
	Title   string
	Targets []struct{ Expr string }
	Panels  []dashboardPanel
}

// exportedMetricNames are the names of the series p exports: each family's
// name, and a histogram's _bucket, _sum and _count series, a summary's
// _sum and _count.
func exportedMetricNames(p *operatorProcess) (map[string]bool, error) {
	if p.proc == nil {
		return nil, fmt.Errorf("%s is not running", p.name)
	}
	families, err := p.proc.Metrics()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for name, f := range families {
		names[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name+"_sum"], names[name+"_count"] = true, true
		}
	}
	return names, nil
}

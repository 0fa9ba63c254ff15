package chartgen_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/gen/chartgen"
)

var root = filepath.Join("..", "..", "..")

// render renders dist/chart as helm install does into namespace
// platform-operator-system, and returns its objects by kind/name.
func render(t *testing.T, values map[string]any) map[string]map[string]any {
	t.Helper()
	g := NewWithT(t)
	chrt, err := loader.Load(filepath.Join(root, "dist", "chart"))
	g.Expect(err).NotTo(HaveOccurred())
	top, err := chartutil.ToRenderValues(chrt, values,
		chartutil.ReleaseOptions{Name: "platform-operator", Namespace: chartgen.Namespace, Revision: 1, IsInstall: true},
		chartutil.DefaultCapabilities)
	g.Expect(err).NotTo(HaveOccurred())
	files, err := engine.Render(chrt, top)
	g.Expect(err).NotTo(HaveOccurred())
	objs := map[string]map[string]any{}
	for name, text := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(text, "\n---\n") {
			o := map[string]any{}
			g.Expect(yaml.Unmarshal([]byte(doc), &o)).To(Succeed(), "%s:\n%s", name, doc)
			if len(o) == 0 {
				continue
			}
			objs[key(o)] = o
		}
	}
	return objs
}

func key(o map[string]any) string {
	return o["kind"].(string) + "/" + o["metadata"].(map[string]any)["name"].(string)
}

// TestChartInstallsWhatMakeDeployDoes: with its default values the chart
// renders exactly config/default's objects (but the Namespace, which helm
// install --create-namespace makes), labelled as Helm's.
func TestChartInstallsWhatMakeDeployDoes(t *testing.T) {
	g := NewWithT(t)
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "default"))
	g.Expect(err).NotTo(HaveOccurred())
	want := map[string]map[string]any{}
	for _, r := range res.Resources() {
		if r.GetKind() == "Namespace" {
			continue
		}
		o, err := r.Map()
		g.Expect(err).NotTo(HaveOccurred())
		labels := o["metadata"].(map[string]any)["labels"].(map[string]any)
		labels["app.kubernetes.io/managed-by"] = "Helm"
		labels["app.kubernetes.io/instance"] = "platform-operator"
		if r.GetKind() == "CustomResourceDefinition" {
			meta := o["metadata"].(map[string]any)
			ann, _ := meta["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
				meta["annotations"] = ann
			}
			ann["helm.sh/resource-policy"] = "keep"
		}
		want[key(o)] = o
	}
	// The make deploy target sets the image it deploys; the chart's default
	// is the released one.
	var image string
	for _, c := range want["Deployment/platform-operator-controller-manager"]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any) {
		image = c.(map[string]any)["image"].(string)
	}
	repo, tag, _ := strings.Cut(image, ":")
	got := render(t, map[string]any{"image": map[string]any{"repository": repo, "tag": tag}})
	for k, o := range got {
		if ann, _ := o["metadata"].(map[string]any)["annotations"].(map[string]any); ann["helm.sh/hook"] != nil {
			delete(got, k) // helm uninstall's check, TestChartUninstallHook
		}
	}
	g.Expect(got).To(HaveLen(len(want)))
	for k, w := range want {
		wy, _ := yaml.Marshal(w)
		gy, _ := yaml.Marshal(got[k])
		g.Expect(string(gy)).To(Equal(string(wy)), k)
	}
}

// TestChartAlertsAreConfigs: the chart's PrometheusRule holds
// config/prometheus/alerts.yaml's rules as they are, Prometheus' own
// template braces included.
func TestChartAlertsAreConfigs(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "alerts.yaml"))
	if os.IsNotExist(err) {
		t.Skip("no alerts")
	}
	g.Expect(err).NotTo(HaveOccurred())
	want := map[string]any{}
	g.Expect(yaml.Unmarshal(data, &want)).To(Succeed())
	got := render(t, map[string]any{"prometheusRule": map[string]any{"enabled": true}})
	rule := got["PrometheusRule/platform-operator-alerts"]
	g.Expect(rule).NotTo(BeNil())
	g.Expect(rule["spec"]).To(Equal(want["spec"]))
	g.Expect(fmt.Sprint(rule["spec"])).To(ContainSubstring("{{ $labels.kind }}"))
}

// TestChartUninstallHook: helm uninstall first runs the operator image's
// uninstall check, allowed to read and delete every kind's resources; it
// refuses by default and deletes them when told to.
func TestChartUninstallHook(t *testing.T) {
	g := NewWithT(t)
	got := render(t, map[string]any{"image": map[string]any{"repository": "localhost:5000/po", "tag": "dev"}})
	job, _ := yaml.Marshal(got["Job/platform-operator-uninstall"])
	g.Expect(string(job)).To(ContainSubstring("helm.sh/hook: pre-delete"))
	g.Expect(string(job)).To(ContainSubstring("image: localhost:5000/po:dev"))
	g.Expect(string(job)).To(ContainSubstring("- --timeout=4m"))
	g.Expect(string(job)).NotTo(ContainSubstring("--delete-resources"))
	role, _ := yaml.Marshal(got["ClusterRole/platform-operator-uninstall"])
	for _, plural := range []string{"nginxes", "webapps", "namespacetenants", "cronscalers", "chartrollouts", "customresourcedefinitions"} {
		g.Expect(string(role)).To(ContainSubstring(plural))
	}

	got = render(t, map[string]any{"uninstall": map[string]any{"deleteResources": true}})
	job, _ = yaml.Marshal(got["Job/platform-operator-uninstall"])
	g.Expect(string(job)).To(ContainSubstring("--delete-resources"))
	got = render(t, map[string]any{"uninstall": map[string]any{"check": false}})
	g.Expect(got).NotTo(HaveKey("Job/platform-operator-uninstall"))
}

// TestChartValues: each install-time value reaches the object it sets.
func TestChartValues(t *testing.T) {
	g := NewWithT(t)
	got := render(t, map[string]any{
		"image":          map[string]any{"repository": "localhost:5000/po", "tag": "dev", "pullPolicy": "Always"},
		"replicas":       1,
		"manager":        map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "2Gi"}}},
		"watchNamespace": "a,b",
		"shardSelector":  "shard=b",
		"uniqueHosts":    "namespace",
		"crds":           map[string]any{"keep": false},
		"networkPolicy":  map[string]any{"enabled": false},
		"serviceMonitor": map[string]any{"enabled": true},
		"dashboard":      map[string]any{"enabled": true, "namespace": "grafana"},
	})
	dep, _ := yaml.Marshal(got["Deployment/platform-operator-controller-manager"])
	for _, s := range []string{
		"replicas: 1", "image: localhost:5000/po:dev", "imagePullPolicy: Always", "memory: 2Gi",
		"--shard-selector=shard=b", "--unique-hosts=namespace", "value: a,b", "value: localhost:5000/po:dev",
	} {
		g.Expect(string(dep)).To(ContainSubstring(s))
	}
	g.Expect(bytes.Count(dep, []byte("--shard-selector"))).To(Equal(2), "both containers")
	crd, _ := yaml.Marshal(got["CustomResourceDefinition/nginxes.web.acme.com"])
	g.Expect(string(crd)).NotTo(ContainSubstring("resource-policy"))
	g.Expect(got).NotTo(HaveKey("NetworkPolicy/platform-operator-allow-webhook-traffic"))
	g.Expect(got).To(HaveKey("ServiceMonitor/platform-operator-controller-manager-metrics-monitor"))
	cm := got["ConfigMap/platform-operator-dashboard"]
	if _, err := os.Stat(filepath.Join(root, "config", "prometheus", "dashboard.json")); err == nil {
		g.Expect(cm["metadata"].(map[string]any)["namespace"]).To(Equal("grafana"))
	}

	off := render(t, map[string]any{"crds": map[string]any{"install": false}})
	g.Expect(off).NotTo(HaveKey("ServiceMonitor/platform-operator-controller-manager-metrics-monitor"), "off by default")
	g.Expect(off).NotTo(HaveKey("CustomResourceDefinition/nginxes.web.acme.com"))
}

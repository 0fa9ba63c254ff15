package helmcharts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/gen/chartrender"
)

const (
	nginxChartDir = "nginx"
	// The operator names the release after the custom resource.
	nginxRelease   = "nginx-sample"
	nginxNamespace = "web"
)

// renderNginx renders the nginx chart for the sample custom resource with the
// given spec (YAML).
func renderNginx(spec string) (*chartrender.Result, error) {
	vals, err := chartrender.ValuesFromYAML(spec)
	if err != nil {
		return nil, fmt.Errorf("test values: %w", err)
	}
	return chartrender.Render(nginxChartDir, chartrender.Options{ReleaseName: nginxRelease, Namespace: nginxNamespace, Values: vals})
}

// allFeatures turns on every optional part of the chart.
const allFeatures = `
ingress: {enabled: true, className: nginx, tls: {enabled: true}}
podDisruptionBudget: {enabled: true}
autoscaling: {enabled: true}
networkPolicy: {enabled: true, allowedNamespaces: [ingress-nginx], metricsNamespaces: [monitoring]}
metrics: {enabled: true}
`

// field reads a nested field of an object, failing the test when absent.
func field(g Gomega, o *unstructured.Unstructured, path ...string) interface{} {
	v, found, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	g.ExpectWithOffset(1, found).To(BeTrue(), "%s/%s has no %s", o.GetKind(), o.GetName(), strings.Join(path, "."))
	return v
}

// hasField tells whether a nested field is present.
func hasField(o *unstructured.Unstructured, path ...string) bool {
	_, found, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	return found
}

// container returns a container of a Deployment's pod template by name.
func container(g Gomega, d *unstructured.Unstructured, name string) map[string]interface{} {
	cs := field(g, d, "spec", "template", "spec", "containers").([]interface{})
	for _, c := range cs {
		if m := c.(map[string]interface{}); m["name"] == name {
			return m
		}
	}
	g.ExpectWithOffset(1, false).To(BeTrue(), "no container %q in %s", name, d.GetName())
	return nil
}

// containerNames lists a Deployment's container names.
func containerNames(g Gomega, d *unstructured.Unstructured) []string {
	var names []string
	for _, c := range field(g, d, "spec", "template", "spec", "containers").([]interface{}) {
		names = append(names, c.(map[string]interface{})["name"].(string))
	}
	return names
}

// servicePorts maps a Service's port names to their port numbers.
func servicePorts(g Gomega, s *unstructured.Unstructured) map[string]interface{} {
	out := map[string]interface{}{}
	for _, p := range field(g, s, "spec", "ports").([]interface{}) {
		m := p.(map[string]interface{})
		out[m["name"].(string)] = m["port"]
	}
	return out
}

func kindsNamed(name string, kinds ...string) []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k+"/"+name)
	}
	sort.Strings(out)
	return out
}

func TestNginxDefaults(t *testing.T) {
	g := NewWithT(t)
	r, err := renderNginx("")
	g.Expect(err).NotTo(HaveOccurred())

	// Only the always-on objects, all named after the custom resource.
	g.Expect(r.Kinds()).To(Equal(kindsNamed(nginxRelease, "ConfigMap", "Deployment", "Service", "ServiceAccount")))
	for _, o := range r.Objects {
		g.Expect(o.GetNamespace()).To(Equal(nginxNamespace), "%s namespace", o.GetKind())
		g.Expect(o.GetLabels()).To(And(
			HaveKeyWithValue("app.kubernetes.io/name", "nginx"),
			HaveKeyWithValue("app.kubernetes.io/instance", nginxRelease),
			HaveKeyWithValue("app.kubernetes.io/version", "1.27.3-alpine"),
			HaveKeyWithValue("app.kubernetes.io/component", "web-server"),
			HaveKeyWithValue("app.kubernetes.io/part-of", "nginx"),
			HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"),
			HaveKeyWithValue("helm.sh/chart", "nginx-0.1.0"),
		), "%s labels", o.GetKind())
	}
	selector := map[string]interface{}{
		"app.kubernetes.io/name":     "nginx",
		"app.kubernetes.io/instance": nginxRelease,
	}

	d := r.Get("Deployment", nginxRelease)
	g.Expect(field(g, d, "spec", "replicas")).To(BeEquivalentTo(1))
	g.Expect(field(g, d, "spec", "selector", "matchLabels")).To(Equal(selector))
	tmpl := field(g, d, "spec", "template", "metadata").(map[string]interface{})
	g.Expect(tmpl["labels"]).To(HaveKeyWithValue("app.kubernetes.io/instance", nginxRelease))
	// No policy of its own: a tenant's allowances select it as before.
	g.Expect(tmpl["labels"]).NotTo(HaveKey(ownIngressPolicyLabel))
	g.Expect(tmpl["annotations"]).To(HaveKeyWithValue("checksum/config", MatchRegexp(`^[0-9a-f]{64}$`)))

	pod := field(g, d, "spec", "template", "spec").(map[string]interface{})
	g.Expect(pod["serviceAccountName"]).To(Equal(nginxRelease))
	g.Expect(pod["automountServiceAccountToken"]).To(BeFalse())
	g.Expect(pod["securityContext"]).To(Equal(map[string]interface{}{
		"runAsNonRoot":   true,
		"runAsUser":      int64(101),
		"runAsGroup":     int64(101),
		"fsGroup":        int64(101),
		"seccompProfile": map[string]interface{}{"type": "RuntimeDefault"},
	}))
	g.Expect(containerNames(g, d)).To(Equal([]string{"nginx"}))

	c := container(g, d, "nginx")
	g.Expect(c["image"]).To(Equal("nginxinc/nginx-unprivileged:1.27.3-alpine"))
	g.Expect(c["imagePullPolicy"]).To(Equal("IfNotPresent"))
	g.Expect(c["ports"]).To(Equal([]interface{}{
		map[string]interface{}{"name": "http", "containerPort": int64(8080), "protocol": "TCP"},
	}))
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		g.Expect(c[probe]).To(HaveKeyWithValue("httpGet", map[string]interface{}{"path": "/healthz", "port": "http"}), probe)
	}
	g.Expect(c["livenessProbe"]).To(HaveKeyWithValue("periodSeconds", int64(10)))
	g.Expect(c["readinessProbe"]).To(HaveKeyWithValue("periodSeconds", int64(5)))
	g.Expect(c["resources"]).To(Equal(map[string]interface{}{
		"requests": map[string]interface{}{"cpu": "50m", "memory": "32Mi"},
		"limits":   map[string]interface{}{"cpu": "200m", "memory": "128Mi"},
	}))
	g.Expect(c["securityContext"]).To(Equal(map[string]interface{}{
		"runAsNonRoot":             true,
		"runAsUser":                int64(101),
		"runAsGroup":               int64(101),
		"allowPrivilegeEscalation": false,
		"readOnlyRootFilesystem":   true,
		"capabilities":             map[string]interface{}{"drop": []interface{}{"ALL"}},
		"seccompProfile":           map[string]interface{}{"type": "RuntimeDefault"},
	}))
	// Writable scratch space for a read-only root filesystem: /tmp holds
	// the pid file and temp paths of the unprivileged image.
	mounts := map[string]string{}
	for _, m := range c["volumeMounts"].([]interface{}) {
		mm := m.(map[string]interface{})
		mounts[mm["mountPath"].(string)] = mm["name"].(string)
	}
	g.Expect(mounts).To(Equal(map[string]string{"/etc/nginx/conf.d": "config", "/tmp": "tmp", "/var/cache/nginx": "cache"}))
	g.Expect(pod["volumes"]).To(ContainElements(
		map[string]interface{}{"name": "tmp", "emptyDir": map[string]interface{}{}},
		map[string]interface{}{"name": "cache", "emptyDir": map[string]interface{}{}},
		map[string]interface{}{"name": "config", "configMap": map[string]interface{}{"name": nginxRelease}},
	))

	s := r.Get("Service", nginxRelease)
	g.Expect(field(g, s, "spec", "type")).To(Equal("ClusterIP"))
	g.Expect(field(g, s, "spec", "selector")).To(Equal(selector))
	g.Expect(field(g, s, "spec", "ports")).To(Equal([]interface{}{
		map[string]interface{}{"name": "http", "port": int64(80), "targetPort": "http", "protocol": "TCP"},
	}))
	g.Expect(hasField(s, "metadata", "annotations")).To(BeFalse())

	cm := r.Get("ConfigMap", nginxRelease)
	conf := field(g, cm, "data", "default.conf").(string)
	g.Expect(conf).To(ContainSubstring("listen       8080;"))
	g.Expect(conf).To(ContainSubstring("location = /healthz"))
	g.Expect(conf).To(ContainSubstring("root   /usr/share/nginx/html;"))
	status := field(g, cm, "data", "status.conf").(string)
	g.Expect(status).To(ContainSubstring("listen       127.0.0.1:8081;"))
	g.Expect(status).To(ContainSubstring("stub_status;"))

	sa := r.Get("ServiceAccount", nginxRelease)
	g.Expect(field(g, sa, "automountServiceAccountToken")).To(BeFalse())

	g.Expect(r.Notes).To(ContainSubstring("port-forward svc/" + nginxRelease))
}

func TestNginxRender(t *testing.T) {
	cases := []struct {
		name  string
		spec  string
		check func(g Gomega, r *chartrender.Result)
	}{
		{
			// A replica count the chart owns lands in the Deployment.
			name: "replicaCount",
			spec: "replicaCount: 3",
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(field(g, r.Get("Deployment", nginxRelease), "spec", "replicas")).To(BeEquivalentTo(3))
			},
		},
		{
			// Zero replicas is a valid, chart-owned count (parked site).
			name: "replicaCount zero",
			spec: "replicaCount: 0",
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(field(g, r.Get("Deployment", nginxRelease), "spec", "replicas")).To(BeEquivalentTo(0))
			},
		},
		{
			// A user serverBlock replaces the default server verbatim, keeps
			// the exporter's status server, and rolls the pods through a new
			// config checksum.
			name: "custom serverBlock",
			spec: `serverBlock: |
  server {
      listen 8080;
      location = /healthz { return 200; }
      location / { return 302 https://example.org$request_uri; }
  }
`,
			check: func(g Gomega, r *chartrender.Result) {
				cm := r.Get("ConfigMap", nginxRelease)
				conf := field(g, cm, "data", "default.conf").(string)
				g.Expect(conf).To(ContainSubstring("return 302 https://example.org$request_uri;"))
				g.Expect(conf).NotTo(ContainSubstring("/usr/share/nginx/html"))
				g.Expect(field(g, cm, "data", "status.conf")).To(ContainSubstring("stub_status;"))

				def, err := renderNginx("")
				g.Expect(err).NotTo(HaveOccurred())
				sum := func(r *chartrender.Result) interface{} {
					return field(g, r.Get("Deployment", nginxRelease), "spec", "template", "metadata", "annotations", "checksum/config")
				}
				g.Expect(sum(r)).NotTo(Equal(sum(def)))
			},
		},
		{
			// Ingress without TLS routes the host to the Service's http port
			// and has no tls section; an empty className is left out.
			name: "ingress without TLS",
			spec: `ingress: {enabled: true, hostname: www.example.org, path: /app, pathType: Exact, annotations: {nginx.ingress.kubernetes.io/ssl-redirect: "false"}}`,
			check: func(g Gomega, r *chartrender.Result) {
				in := r.Get("Ingress", nginxRelease)
				g.Expect(in).NotTo(BeNil())
				g.Expect(in.GetAPIVersion()).To(Equal("networking.k8s.io/v1"))
				g.Expect(in.GetAnnotations()).To(HaveKeyWithValue("nginx.ingress.kubernetes.io/ssl-redirect", "false"))
				g.Expect(hasField(in, "spec", "tls")).To(BeFalse())
				g.Expect(hasField(in, "spec", "ingressClassName")).To(BeFalse())
				g.Expect(field(g, in, "spec", "rules")).To(Equal([]interface{}{map[string]interface{}{
					"host": "www.example.org",
					"http": map[string]interface{}{"paths": []interface{}{map[string]interface{}{
						"path":     "/app",
						"pathType": "Exact",
						"backend": map[string]interface{}{"service": map[string]interface{}{
							"name": nginxRelease,
							"port": map[string]interface{}{"name": "http"},
						}},
					}}},
				}}))
				g.Expect(r.Notes).To(ContainSubstring("http://www.example.org/app"))
			},
		},
		{
			// Ingress with TLS and no secretName uses "<fullname>-tls".
			name: "ingress with TLS default secret",
			spec: `ingress: {enabled: true, className: nginx, tls: {enabled: true}}`,
			check: func(g Gomega, r *chartrender.Result) {
				in := r.Get("Ingress", nginxRelease)
				g.Expect(field(g, in, "spec", "ingressClassName")).To(Equal("nginx"))
				g.Expect(field(g, in, "spec", "tls")).To(Equal([]interface{}{map[string]interface{}{
					"hosts":      []interface{}{"nginx.example.com"},
					"secretName": nginxRelease + "-tls",
				}}))
				g.Expect(r.Notes).To(ContainSubstring("https://nginx.example.com/"))
			},
		},
		{
			// Ingress with TLS and an explicit certificate Secret.
			name: "ingress with TLS secretName",
			spec: `ingress: {enabled: true, tls: {enabled: true, secretName: wildcard-cert}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(field(g, r.Get("Ingress", nginxRelease), "spec", "tls")).To(ConsistOf(
					HaveKeyWithValue("secretName", "wildcard-cert")))
			},
		},
		{
			// PDB with the default minAvailable, selecting the pods.
			name: "pdb minAvailable",
			spec: `{replicaCount: 2, podDisruptionBudget: {enabled: true}}`,
			check: func(g Gomega, r *chartrender.Result) {
				p := r.Get("PodDisruptionBudget", nginxRelease)
				g.Expect(p.GetAPIVersion()).To(Equal("policy/v1"))
				g.Expect(field(g, p, "spec", "minAvailable")).To(BeEquivalentTo(1))
				g.Expect(hasField(p, "spec", "maxUnavailable")).To(BeFalse())
				g.Expect(field(g, p, "spec", "selector", "matchLabels")).To(HaveLen(2))
				g.Expect(r.Notes).NotTo(ContainSubstring("WARNING"))
			},
		},
		{
			// Setting maxUnavailable replaces minAvailable; percentages stay strings.
			name: "pdb maxUnavailable",
			spec: `podDisruptionBudget: {enabled: true, maxUnavailable: "25%"}`,
			check: func(g Gomega, r *chartrender.Result) {
				p := r.Get("PodDisruptionBudget", nginxRelease)
				g.Expect(field(g, p, "spec", "maxUnavailable")).To(Equal("25%"))
				g.Expect(hasField(p, "spec", "minAvailable")).To(BeFalse())
			},
		},
		{
			// HPA on: the HPA targets the Deployment, and the Deployment has
			// no replicas so the HPA alone owns the count.
			name: "autoscaling",
			spec: `{replicaCount: 4, autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 10, targetCPUUtilizationPercentage: 60}}`,
			check: func(g Gomega, r *chartrender.Result) {
				h := r.Get("HorizontalPodAutoscaler", nginxRelease)
				g.Expect(h).NotTo(BeNil())
				g.Expect(h.GetAPIVersion()).To(Equal("autoscaling/v2"))
				g.Expect(field(g, h, "spec", "scaleTargetRef")).To(Equal(map[string]interface{}{
					"apiVersion": "apps/v1", "kind": "Deployment", "name": nginxRelease,
				}))
				g.Expect(field(g, h, "spec", "minReplicas")).To(BeEquivalentTo(2))
				g.Expect(field(g, h, "spec", "maxReplicas")).To(BeEquivalentTo(10))
				g.Expect(field(g, h, "spec", "metrics")).To(Equal([]interface{}{map[string]interface{}{
					"type": "Resource",
					"resource": map[string]interface{}{
						"name":   "cpu",
						"target": map[string]interface{}{"type": "Utilization", "averageUtilization": int64(60)},
					},
				}}))
				g.Expect(hasField(r.Get("Deployment", nginxRelease), "spec", "replicas")).To(BeFalse())
			},
		},
		{
			// externalReplicaControl: no replicas and no HPA; an outside
			// controller owns the count.
			name: "externalReplicaControl",
			spec: `{replicaCount: 4, externalReplicaControl: true}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(hasField(r.Get("Deployment", nginxRelease), "spec", "replicas")).To(BeFalse())
				g.Expect(r.OfKind("HorizontalPodAutoscaler")).To(BeEmpty())
				g.Expect(r.Notes).To(ContainSubstring("externalReplicaControl"))
			},
		},
		{
			// cronScaling on: a CronScaler named like the release targets the
			// chart's Deployment with the jobs and zone as given, and the
			// Deployment has no replicas, so Helm never resets the count the
			// CronScaler set.
			name: "cronScaling",
			spec: `{replicaCount: 4, cronScaling: {enabled: true, timeZone: Europe/Berlin, jobs: [{name: workday-up, schedule: "0 8 * * 1-5", replicas: 5}, {name: night-down, schedule: "0 20 * * *", replicas: 0}]}}`,
			check: func(g Gomega, r *chartrender.Result) {
				cs := r.Get("CronScaler", nginxRelease)
				g.Expect(cs).NotTo(BeNil())
				g.Expect(cs.GetAPIVersion()).To(Equal("autoscaling.acme.com/v1alpha1"))
				g.Expect(cs.GetNamespace()).To(Equal(nginxNamespace))
				g.Expect(cs.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/instance", nginxRelease))
				g.Expect(field(g, cs, "spec")).To(Equal(map[string]interface{}{
					"scaleTargetRef": map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment", "name": nginxRelease},
					"timeZone":       "Europe/Berlin",
					"jobs": []interface{}{
						map[string]interface{}{"name": "workday-up", "schedule": "0 8 * * 1-5", "replicas": int64(5)},
						map[string]interface{}{"name": "night-down", "schedule": "0 20 * * *", "replicas": int64(0)},
					},
				}))
				g.Expect(hasField(r.Get("Deployment", nginxRelease), "spec", "replicas")).To(BeFalse())
				g.Expect(r.OfKind("HorizontalPodAutoscaler")).To(BeEmpty())
				g.Expect(r.Notes).To(ContainSubstring("owned by the CronScaler " + nginxRelease))
			},
		},
		{
			// cronScaling off (the default) renders no CronScaler even with
			// jobs listed, and the chart keeps the count.
			name: "cronScaling disabled",
			spec: `cronScaling: {jobs: [{name: a, schedule: "@daily", replicas: 2}]}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.OfKind("CronScaler")).To(BeEmpty())
				g.Expect(field(g, r.Get("Deployment", nginxRelease), "spec", "replicas")).To(BeEquivalentTo(1))
			},
		},
		{
			// Server configuration and content from existing ConfigMaps:
			// the chart keeps only its status server and projects the
			// user's ConfigMap next to it.
			name: "existing ConfigMaps",
			spec: `{existingServerConfigMap: site-conf, existingContentConfigMap: site-html}`,
			check: func(g Gomega, r *chartrender.Result) {
				data := field(g, r.Get("ConfigMap", nginxRelease), "data").(map[string]interface{})
				g.Expect(data).To(HaveKey("status.conf"))
				g.Expect(data).NotTo(HaveKey("default.conf"))
				vols := field(g, r.Get("Deployment", nginxRelease), "spec", "template", "spec", "volumes").([]interface{})
				g.Expect(vols).To(ContainElement(map[string]interface{}{"name": "config", "projected": map[string]interface{}{"sources": []interface{}{
					map[string]interface{}{"configMap": map[string]interface{}{"name": nginxRelease}},
					map[string]interface{}{"configMap": map[string]interface{}{"name": "site-conf"}},
				}}}))
				g.Expect(vols).To(ContainElement(map[string]interface{}{"name": "content", "configMap": map[string]interface{}{"name": "site-html"}}))
				g.Expect(container(g, r.Get("Deployment", nginxRelease), "nginx")["volumeMounts"]).To(ContainElement(
					map[string]interface{}{"name": "content", "mountPath": "/usr/share/nginx/html", "readOnly": true}))
			},
		},
		{
			// NetworkPolicy: http port open to the own namespace, the listed
			// namespaces and labelled pods anywhere; nothing else.
			name: "networkPolicy",
			spec: `networkPolicy: {enabled: true, allowedNamespaces: [ingress-nginx], allowedPodSelectors: [{app.kubernetes.io/name: traefik}]}`,
			check: func(g Gomega, r *chartrender.Result) {
				np := r.Get("NetworkPolicy", nginxRelease)
				g.Expect(np).NotTo(BeNil())
				g.Expect(field(g, np, "spec", "podSelector", "matchLabels")).To(HaveKeyWithValue("app.kubernetes.io/instance", nginxRelease))
				// Its Pods are taken out of a tenant's namespace-wide
				// allowances (TestNetworkPoliciesCompose).
				g.Expect(field(g, r.Get("Deployment", nginxRelease), "spec", "template", "metadata", "labels")).To(HaveKeyWithValue(ownIngressPolicyLabel, "true"))
				g.Expect(field(g, np, "spec", "policyTypes")).To(Equal([]interface{}{"Ingress"}))
				g.Expect(field(g, np, "spec", "ingress")).To(Equal([]interface{}{map[string]interface{}{
					"ports": []interface{}{map[string]interface{}{"port": "http", "protocol": "TCP"}},
					"from": []interface{}{
						map[string]interface{}{"podSelector": map[string]interface{}{}},
						map[string]interface{}{"namespaceSelector": map[string]interface{}{
							"matchLabels": map[string]interface{}{"kubernetes.io/metadata.name": "ingress-nginx"}}},
						map[string]interface{}{
							"namespaceSelector": map[string]interface{}{},
							"podSelector": map[string]interface{}{
								"matchLabels": map[string]interface{}{"app.kubernetes.io/name": "traefik"}},
						},
					},
				}}))
			},
		},
		{
			// NetworkPolicy with metrics: a second rule opens the metrics
			// port to the own namespace and the monitoring namespaces.
			name: "networkPolicy with metrics",
			spec: `{metrics: {enabled: true}, networkPolicy: {enabled: true, metricsNamespaces: [monitoring]}}`,
			check: func(g Gomega, r *chartrender.Result) {
				rules := field(g, r.Get("NetworkPolicy", nginxRelease), "spec", "ingress").([]interface{})
				g.Expect(rules).To(HaveLen(2))
				g.Expect(rules[1]).To(Equal(map[string]interface{}{
					"ports": []interface{}{map[string]interface{}{"port": "metrics", "protocol": "TCP"}},
					"from": []interface{}{
						map[string]interface{}{"podSelector": map[string]interface{}{}},
						map[string]interface{}{"namespaceSelector": map[string]interface{}{
							"matchLabels": map[string]interface{}{"kubernetes.io/metadata.name": "monitoring"}}},
					},
				}))
			},
		},
		{
			// Metrics: exporter sidecar scraping the loopback stub_status,
			// restricted like nginx, and a metrics port plus scrape
			// annotations on the Service.
			name: "metrics exporter",
			spec: `metrics: {enabled: true}`,
			check: func(g Gomega, r *chartrender.Result) {
				d := r.Get("Deployment", nginxRelease)
				g.Expect(containerNames(g, d)).To(Equal([]string{"nginx", "metrics"}))
				m := container(g, d, "metrics")
				g.Expect(m["image"]).To(Equal("nginx/nginx-prometheus-exporter:1.4.1"))
				g.Expect(m["args"]).To(ContainElement("--nginx.scrape-uri=http://127.0.0.1:8081/stub_status"))
				g.Expect(m["ports"]).To(Equal([]interface{}{
					map[string]interface{}{"name": "metrics", "containerPort": int64(9113), "protocol": "TCP"},
				}))
				g.Expect(m["resources"]).To(HaveKey("requests"))
				g.Expect(m["securityContext"]).To(HaveKeyWithValue("readOnlyRootFilesystem", true))

				s := r.Get("Service", nginxRelease)
				g.Expect(servicePorts(g, s)).To(Equal(map[string]interface{}{"http": int64(80), "metrics": int64(9113)}))
				g.Expect(s.GetAnnotations()).To(Equal(map[string]string{
					"prometheus.io/scrape": "true",
					"prometheus.io/port":   "9113",
					"prometheus.io/path":   "/metrics",
				}))
			},
		},
		{
			// Metrics without scrape annotations: the port stays, the
			// annotations go, user Service annotations are kept.
			name: "metrics without scrape annotations",
			spec: `{metrics: {enabled: true, scrapeAnnotations: false}, service: {annotations: {team: web}}}`,
			check: func(g Gomega, r *chartrender.Result) {
				s := r.Get("Service", nginxRelease)
				g.Expect(servicePorts(g, s)).To(HaveKey("metrics"))
				g.Expect(s.GetAnnotations()).To(Equal(map[string]string{"team": "web"}))
			},
		},
		{
			// serviceAccount.create=false: no ServiceAccount object, pods use
			// the namespace default.
			name: "serviceAccount create false",
			spec: `serviceAccount: {create: false}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.OfKind("ServiceAccount")).To(BeEmpty())
				g.Expect(field(g, r.Get("Deployment", nginxRelease), "spec", "template", "spec", "serviceAccountName")).To(Equal("default"))
			},
		},
		{
			// serviceAccount.create=false with a name: pods use that account.
			name: "serviceAccount existing name",
			spec: `serviceAccount: {create: false, name: shared-web}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.OfKind("ServiceAccount")).To(BeEmpty())
				g.Expect(field(g, r.Get("Deployment", nginxRelease), "spec", "template", "spec", "serviceAccountName")).To(Equal("shared-web"))
			},
		},
		{
			// A created ServiceAccount with a name override and annotations.
			name: "serviceAccount name and annotations",
			spec: `serviceAccount: {name: web-sa, annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::1:role/web"}}`,
			check: func(g Gomega, r *chartrender.Result) {
				sa := r.Get("ServiceAccount", "web-sa")
				g.Expect(sa).NotTo(BeNil())
				g.Expect(sa.GetAnnotations()).To(HaveKeyWithValue("eks.amazonaws.com/role-arn", "arn:aws:iam::1:role/web"))
				g.Expect(field(g, r.Get("Deployment", nginxRelease), "spec", "template", "spec", "serviceAccountName")).To(Equal("web-sa"))
			},
		},
		{
			// Scheduling and pod metadata pass-through; podLabels cannot
			// override the chart's selector labels.
			name: "pod scheduling and metadata",
			spec: `
podAnnotations: {backup: "nightly"}
podLabels: {team: web, app.kubernetes.io/name: other}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: web, effect: NoSchedule}]
affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}]}}
imagePullSecrets: [{name: regcred}]
`,
			check: func(g Gomega, r *chartrender.Result) {
				d := r.Get("Deployment", nginxRelease)
				meta := field(g, d, "spec", "template", "metadata").(map[string]interface{})
				g.Expect(meta["annotations"]).To(HaveKeyWithValue("backup", "nightly"))
				g.Expect(meta["labels"]).To(And(HaveKeyWithValue("team", "web"), HaveKeyWithValue("app.kubernetes.io/name", "nginx")))
				pod := field(g, d, "spec", "template", "spec").(map[string]interface{})
				g.Expect(pod["nodeSelector"]).To(Equal(map[string]interface{}{"kubernetes.io/os": "linux"}))
				g.Expect(pod["tolerations"]).To(HaveLen(1))
				g.Expect(pod["affinity"]).To(HaveKey("podAntiAffinity"))
				g.Expect(pod["imagePullSecrets"]).To(Equal([]interface{}{map[string]interface{}{"name": "regcred"}}))
			},
		},
		{
			// Service type, ports and nodePort.
			name: "service NodePort",
			spec: `service: {type: NodePort, port: 8080, targetPort: 8080, nodePort: 30080}`,
			check: func(g Gomega, r *chartrender.Result) {
				s := r.Get("Service", nginxRelease)
				g.Expect(field(g, s, "spec", "type")).To(Equal("NodePort"))
				g.Expect(field(g, s, "spec", "ports")).To(Equal([]interface{}{map[string]interface{}{
					"name": "http", "port": int64(8080), "targetPort": int64(8080), "nodePort": int64(30080), "protocol": "TCP",
				}}))
			},
		},
		{
			// Name overrides: fullnameOverride names every object.
			name: "fullnameOverride",
			spec: `fullnameOverride: site`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.Kinds()).To(Equal(kindsNamed("site", "ConfigMap", "Deployment", "Service", "ServiceAccount")))
			},
		},
		{
			// Large ids print as integers, not in float notation.
			name: "large user id",
			spec: `podSecurityContext: {runAsUser: 1000680000, runAsGroup: 1000680000, fsGroup: 1000680000}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(field(g, r.Get("Deployment", nginxRelease), "spec", "template", "spec", "securityContext", "runAsUser")).To(Equal(int64(1000680000)))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := renderNginx(tc.spec)
			g.Expect(err).NotTo(HaveOccurred())
			tc.check(g, r)
		})
	}
}

func TestNginxReleaseNameWithoutChartName(t *testing.T) {
	g := NewWithT(t)
	// A custom resource whose name lacks "nginx" gets "<name>-nginx".
	r, err := chartrender.Render(nginxChartDir, chartrender.Options{ReleaseName: "blog", Namespace: nginxNamespace})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Kinds()).To(Equal(kindsNamed("blog-nginx", "ConfigMap", "Deployment", "Service", "ServiceAccount")))
}

func TestNginxRefusedValues(t *testing.T) {
	cases := []struct {
		name string
		spec string
		// every substring must appear in the error
		want []string
	}{
		// Wrong type: replicaCount must be an integer.
		{"wrong type", `replicaCount: "three"`, []string{"/replicaCount", "want integer"}},
		// Wrong type deeper down.
		{"wrong nested type", `ingress: {enabled: "yes"}`, []string{"/ingress/enabled", "want boolean"}},
		// Bad enum: only ClusterIP, NodePort, LoadBalancer.
		{"bad service type", `service: {type: ExternalName}`, []string{"/service/type", "ClusterIP"}},
		// Bad enum: image pull policy.
		{"bad pullPolicy", `image: {pullPolicy: Sometimes}`, []string{"/image/pullPolicy"}},
		// Unknown top-level key (a typo) is refused, not ignored.
		{"unknown top-level key", `replicas: 2`, []string{"replicas", "not allowed"}},
		// Unknown nested key.
		{"unknown nested key", `ingress: {host: www.example.org}`, []string{"/ingress", "host", "not allowed"}},
		// Negative replicas.
		{"negative replicas", `replicaCount: -1`, []string{"/replicaCount", "minimum"}},
		// replicaCount null: Helm drops null keys, and the Deployment template
		// refuses the missing count, pointing at externalReplicaControl.
		{"null replicas", `replicaCount: null`, []string{"replicaCount", "externalReplicaControl"}},
		// Hostname that is not a hostname.
		{"bad hostname", `ingress: {enabled: true, hostname: "not a host!"}`, []string{"/ingress/hostname", "hostname"}},
		// Ports are 1-65535.
		{"port out of range", `service: {port: 70000}`, []string{"/service/port", "maximum"}},
		// CPU target is a percentage.
		{"cpu percent out of range", `autoscaling: {targetCPUUtilizationPercentage: 150}`, []string{"/autoscaling/targetCPUUtilizationPercentage"}},
		// Autoscaler needs at least one replica.
		{"minReplicas zero", `autoscaling: {minReplicas: 0}`, []string{"/autoscaling/minReplicas"}},
		// Quantities are integers or strings, not booleans.
		{"bad quantity", `resources: {limits: {memory: true}}`, []string{"/resources/limits/memory"}},
		// Annotation values must be strings.
		{"non-string annotation", `podAnnotations: {replicas: 3}`, []string{"/podAnnotations/replicas", "want string"}},
		// Running as root is refused.
		{"root user", `podSecurityContext: {runAsUser: 0}`, []string{"/podSecurityContext/runAsUser"}},
		// Ingress paths are absolute.
		{"relative path", `ingress: {path: app}`, []string{"/ingress/path"}},
		// Cross-field checks done by the templates.
		{"max below min", `autoscaling: {enabled: true, minReplicas: 5, maxReplicas: 2}`, []string{"maxReplicas"}},
		{"port clash", `{metrics: {enabled: true, port: 8080}}`, []string{"metrics.port"}},
		{"empty pod selector", `networkPolicy: {enabled: true, allowedPodSelectors: [{}]}`, []string{"allowedPodSelectors"}},
		{"two server configurations", `{serverBlock: "server {}", existingServerConfigMap: site-conf}`, []string{"serverBlock and existingServerConfigMap"}},
		// cronScaling: both it and the HPA would own the count.
		{"cronScaling with autoscaling", `{autoscaling: {enabled: true}, cronScaling: {enabled: true, jobs: [{name: a, schedule: "@daily", replicas: 2}]}}`, []string{"cronScaling and autoscaling"}},
		// cronScaling without jobs has nothing to do.
		{"cronScaling without jobs", `cronScaling: {enabled: true}`, []string{"cronScaling.jobs"}},
		// A job needs all three fields.
		{"cronScaling job without replicas", `cronScaling: {enabled: true, jobs: [{name: a, schedule: "@daily"}]}`, []string{"/cronScaling/jobs/0", "replicas"}},
		// Cron syntax is checked by pattern: words are not a schedule.
		{"cronScaling bad schedule", `cronScaling: {enabled: true, jobs: [{name: a, schedule: "every day", replicas: 2}]}`, []string{"/cronScaling/jobs/0/schedule"}},
		// Negative replica counts are refused.
		{"cronScaling negative replicas", `cronScaling: {enabled: true, jobs: [{name: a, schedule: "@daily", replicas: -1}]}`, []string{"/cronScaling/jobs/0/replicas", "minimum"}},
		// Zone names are IANA-shaped.
		{"cronScaling bad zone", `cronScaling: {enabled: true, timeZone: "UTC+2 hours", jobs: [{name: a, schedule: "@daily", replicas: 2}]}`, []string{"/cronScaling/timeZone"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := renderNginx(tc.spec)
			g.Expect(err).To(HaveOccurred(), "rendered:\n%v", r)
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

func TestNginxKubeVersionConstraint(t *testing.T) {
	g := NewWithT(t)
	// Chart.yaml asks for Kubernetes >= 1.26.
	_, err := chartrender.Render(nginxChartDir, chartrender.Options{ReleaseName: nginxRelease, KubeVersion: "v1.25.0"})
	g.Expect(err).To(MatchError(ContainSubstring("kubeVersion")))
}

func TestNginxLint(t *testing.T) {
	for name, spec := range map[string]string{"defaults": "", "all features": allFeatures} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			vals, err := chartrender.ValuesFromYAML(spec)
			g.Expect(err).NotTo(HaveOccurred())
			msgs, err := chartrender.Lint(nginxChartDir, chartrender.LintOptions{Values: vals, Namespace: nginxNamespace})
			g.Expect(err).NotTo(HaveOccurred())
			// No errors or warnings, and no info messages either.
			g.Expect(chartrender.AtLeast(msgs, support.WarningSev)).To(BeEmpty())
			g.Expect(msgs).To(BeEmpty())
		})
	}
}

func TestLintReportsBrokenChart(t *testing.T) {
	g := NewWithT(t)
	// The lint wrapper surfaces Helm's errors, e.g. for a missing Chart.yaml.
	msgs, err := chartrender.Lint(t.TempDir(), chartrender.LintOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chartrender.AtLeast(msgs, support.ErrorSev)).NotTo(BeEmpty())
}

func TestNginxDeterministic(t *testing.T) {
	for name, spec := range map[string]string{"defaults": "", "all features": allFeatures} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			first, err := renderNginx(spec)
			g.Expect(err).NotTo(HaveOccurred())
			for i := 0; i < 5; i++ {
				again, err := renderNginx(spec)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(again.Manifest).To(Equal(first.Manifest))
				g.Expect(again.Notes).To(Equal(first.Notes))
			}
		})
	}
}

func TestNginxAllFeatures(t *testing.T) {
	g := NewWithT(t)
	r, err := renderNginx(allFeatures)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Kinds()).To(Equal(kindsNamed(nginxRelease, "ConfigMap", "Deployment", "HorizontalPodAutoscaler",
		"Ingress", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount")))
	// The one hook is the chart's test (helm test), run only when asked.
	g.Expect(r.Hooks).To(HaveLen(1))
	g.Expect(r.Hooks[0].GetKind()).To(Equal("Pod"))
	g.Expect(r.Hooks[0].GetAnnotations()).To(HaveKeyWithValue("helm.sh/hook", "test"))
}

// loadJSONish reads a YAML or JSON file into generic values (numbers as
// float64 on both sides, so defaults compare with reflect.DeepEqual).
func loadJSONish(t *testing.T, path string) map[string]interface{} {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// TestNginxSchemaContract: the schema's own shape (the contract shared by
// every chart is in TestChartSchemas).
func TestNginxSchemaContract(t *testing.T) {
	g := NewWithT(t)
	schema := loadJSONish(t, filepath.Join(nginxChartDir, "values.schema.json"))
	g.Expect(schema["$schema"]).To(Equal("http://json-schema.org/draft-07/schema#"))
	g.Expect(schema["type"]).To(Equal("object"))
	g.Expect(schema).NotTo(HaveKey("required"), "every Nginx field is optional")
}

func TestNginxChartMetadata(t *testing.T) {
	g := NewWithT(t)
	ch, err := chartrender.LoadChart(nginxChartDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Metadata.APIVersion).To(Equal("v2"))
	g.Expect(ch.Metadata.Name).To(Equal("nginx"))
	g.Expect(ch.Metadata.Version).To(Equal("0.1.0"))
	g.Expect(ch.Metadata.KubeVersion).To(Equal(">=1.26.0-0"))
	// appVersion follows the pinned image tag.
	g.Expect(ch.Values).To(HaveKeyWithValue("image", HaveKeyWithValue("tag", ch.Metadata.AppVersion)))
	g.Expect(ch.Schema).NotTo(BeEmpty())
}

package helmcharts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/acme/platform-operator/internal/gen/chartrender"
	"github.com/acme/platform-operator/internal/operator/manifest"
)

const (
	webAppChartDir = "webapp"
	// The operator names the release after the custom resource.
	webAppRelease   = "webapp-sample"
	webAppNamespace = "shop"
	webAppDB        = webAppRelease + "-db"
	// testPassword stands in for the password the operator generates.
	testPassword = "s3cretPassw0rdFromTheOperator123"
)

// webAppMinimal is the minimal spec of the issue, plus the password the
// runtime fills in before Helm sees the values.
const webAppMinimal = `
webAppReplicas: 2
webAppImage: registry.acme.com/app/app:v1.4
webAppHostname: app.acme.com
deploymentTier: dev
database: {auth: {password: ` + testPassword + `}}
`

// renderWebApp renders the webapp chart for the minimal spec with extra
// (YAML) merged over it.
func renderWebApp(extra string) (*chartrender.Result, error) {
	vals, err := webAppValues(extra)
	if err != nil {
		return nil, err
	}
	return chartrender.Render(webAppChartDir, chartrender.Options{ReleaseName: webAppRelease, Namespace: webAppNamespace, Values: vals})
}

// webAppValues is the minimal spec with extra (YAML) merged over it.
func webAppValues(extra string) (map[string]interface{}, error) {
	base, err := chartrender.ValuesFromYAML(webAppMinimal)
	if err != nil {
		return nil, err
	}
	over, err := chartrender.ValuesFromYAML(extra)
	if err != nil {
		return nil, err
	}
	return chartutil.CoalesceTables(over, base), nil
}

// appContainer returns the app container of the rendered Deployment.
func appContainer(g Gomega, r *chartrender.Result) map[string]interface{} {
	d := r.Get("Deployment", webAppRelease)
	g.ExpectWithOffset(1, d).NotTo(BeNil())
	return container(g, d, "app")
}

// resourcesOf returns a container's resources as strings.
func resourcesOf(c map[string]interface{}) map[string]interface{} {
	return c["resources"].(map[string]interface{})
}

// res builds the expected resources block.
func res(reqCPU, reqMem, limCPU, limMem string) map[string]interface{} {
	return map[string]interface{}{
		"requests": map[string]interface{}{"cpu": reqCPU, "memory": reqMem},
		"limits":   map[string]interface{}{"cpu": limCPU, "memory": limMem},
	}
}

func TestWebAppMinimal(t *testing.T) {
	g := NewWithT(t)
	r, err := renderWebApp("")
	g.Expect(err).NotTo(HaveOccurred())

	// Everything the issue lists, and the database's NetworkPolicy; nothing
	// more for dev: no PDB, no CronScaler.
	g.Expect(r.Kinds()).To(Equal([]string{
		"ConfigMap/" + webAppRelease, "Deployment/" + webAppRelease, "Ingress/" + webAppRelease,
		"NetworkPolicy/" + webAppDB, "Secret/" + webAppDB, "Service/" + webAppRelease, "Service/" + webAppDB, "StatefulSet/" + webAppDB,
	}))
	for _, o := range r.Objects {
		g.Expect(o.GetNamespace()).To(Equal(webAppNamespace), "%s namespace", o.GetKind())
		g.Expect(o.GetLabels()).To(And(
			HaveKeyWithValue("app.kubernetes.io/name", "webapp"),
			HaveKeyWithValue("app.kubernetes.io/instance", webAppRelease),
			HaveKeyWithValue("app.kubernetes.io/component", BeElementOf("app", "database")),
			HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"),
			HaveKeyWithValue("helm.sh/chart", "webapp-0.1.0"),
		), "%s labels", o.GetKind())
	}

	// The app: image, replicas, port, restricted security, probes, database
	// connection from the Secret, config mounted.
	d := r.Get("Deployment", webAppRelease)
	g.Expect(field(g, d, "spec", "replicas")).To(BeEquivalentTo(2))
	g.Expect(field(g, d, "spec", "selector", "matchLabels")).To(Equal(map[string]interface{}{
		"app.kubernetes.io/name": "webapp", "app.kubernetes.io/instance": webAppRelease, "app.kubernetes.io/component": "app",
	}))
	pod := field(g, d, "spec", "template", "spec").(map[string]interface{})
	g.Expect(pod["automountServiceAccountToken"]).To(BeFalse())
	g.Expect(pod["securityContext"]).To(HaveKeyWithValue("runAsNonRoot", true))
	g.Expect(pod).NotTo(HaveKey("affinity"))
	c := appContainer(g, r)
	g.Expect(c["image"]).To(Equal("registry.acme.com/app/app:v1.4"))
	g.Expect(c["ports"]).To(Equal([]interface{}{
		map[string]interface{}{"name": "http", "containerPort": int64(8080), "protocol": "TCP"},
	}))
	g.Expect(c["securityContext"]).To(And(
		HaveKeyWithValue("allowPrivilegeEscalation", false),
		HaveKeyWithValue("readOnlyRootFilesystem", true),
		HaveKeyWithValue("capabilities", map[string]interface{}{"drop": []interface{}{"ALL"}}),
	))
	g.Expect(c["livenessProbe"]).To(HaveKeyWithValue("httpGet", map[string]interface{}{"path": "/", "port": "http"}))
	g.Expect(c["readinessProbe"]).To(HaveKeyWithValue("httpGet", map[string]interface{}{"path": "/", "port": "http"}))
	env := map[string]interface{}{}
	for _, e := range c["env"].([]interface{}) {
		m := e.(map[string]interface{})
		env[m["name"].(string)] = m["valueFrom"]
	}
	for name, key := range map[string]string{"DATABASE_HOST": "host", "DATABASE_PORT": "port", "DATABASE_NAME": "database", "DATABASE_USER": "username", "DATABASE_PASSWORD": "password"} {
		g.Expect(env).To(HaveKeyWithValue(name, map[string]interface{}{"secretKeyRef": map[string]interface{}{"name": webAppDB, "key": key}}))
	}
	g.Expect(c["volumeMounts"]).To(ContainElement(map[string]interface{}{"name": "config", "mountPath": "/etc/webapp", "readOnly": true}))

	// The credentials Secret: connection details, the password, kept with
	// the retained volume.
	s := r.Get("Secret", webAppDB)
	g.Expect(field(g, s, "stringData")).To(Equal(map[string]interface{}{
		"host": webAppDB + "." + webAppNamespace + ".svc", "port": "5432", "database": "app", "username": "app", "password": testPassword,
	}))
	g.Expect(s.GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))

	// The database: pinned image, non-root postgres, PGDATA in a subdir,
	// retained claim, credentials from the Secret.
	sts := r.Get("StatefulSet", webAppDB)
	g.Expect(field(g, sts, "spec", "serviceName")).To(Equal(webAppDB))
	g.Expect(field(g, sts, "spec", "replicas")).To(BeEquivalentTo(1))
	g.Expect(field(g, sts, "spec", "persistentVolumeClaimRetentionPolicy")).To(Equal(map[string]interface{}{"whenDeleted": "Retain", "whenScaled": "Retain"}))
	g.Expect(field(g, sts, "spec", "template", "spec", "securityContext")).To(And(
		HaveKeyWithValue("runAsUser", int64(999)), HaveKeyWithValue("fsGroup", int64(999)), HaveKeyWithValue("runAsNonRoot", true)))
	pg := container(g, sts, "postgres")
	g.Expect(pg["image"]).To(Equal("postgres:17.2"))
	g.Expect(pg["env"]).To(ContainElements(
		map[string]interface{}{"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"},
		map[string]interface{}{"name": "POSTGRES_PASSWORD", "valueFrom": map[string]interface{}{"secretKeyRef": map[string]interface{}{"name": webAppDB, "key": "password"}}},
	))
	g.Expect(pg["securityContext"]).To(HaveKeyWithValue("readOnlyRootFilesystem", true))
	vct := field(g, sts, "spec", "volumeClaimTemplates").([]interface{})
	g.Expect(vct).To(HaveLen(1))
	claim := &unstructured.Unstructured{Object: vct[0].(map[string]interface{})}
	g.Expect(claim.GetName()).To(Equal("data"))
	g.Expect(field(g, claim, "spec", "resources", "requests", "storage")).To(Equal("1Gi"))
	g.Expect(hasField(claim, "spec", "storageClassName")).To(BeFalse())

	// Services: the app's, and the database's headless one.
	g.Expect(field(g, r.Get("Service", webAppRelease), "spec", "ports")).To(Equal([]interface{}{
		map[string]interface{}{"name": "http", "port": int64(80), "targetPort": "http", "protocol": "TCP"},
	}))
	g.Expect(field(g, r.Get("Service", webAppDB), "spec", "clusterIP")).To(Equal("None"))

	// The Ingress routes the hostname to the app Service.
	in := r.Get("Ingress", webAppRelease)
	g.Expect(field(g, in, "spec", "rules")).To(Equal([]interface{}{map[string]interface{}{
		"host": "app.acme.com",
		"http": map[string]interface{}{"paths": []interface{}{map[string]interface{}{
			"path": "/", "pathType": "Prefix",
			"backend": map[string]interface{}{"service": map[string]interface{}{"name": webAppRelease, "port": map[string]interface{}{"name": "http"}}},
		}}},
	}}))
	g.Expect(hasField(in, "spec", "tls")).To(BeFalse())

	// NOTES never show the password.
	g.Expect(r.Notes).To(ContainSubstring("http://app.acme.com/"))
	g.Expect(r.Notes).NotTo(ContainSubstring(testPassword))
	// The password is only in the Secret.
	g.Expect(strings.Count(r.Manifest, testPassword)).To(Equal(1))
}

func TestWebAppTiers(t *testing.T) {
	cases := []struct {
		tier string
		// app container resources
		app map[string]interface{}
		// database container resources
		db map[string]interface{}
		// database volume size
		storage string
		// replicas for webAppReplicas 0 and 1 (the floor shows)
		replicasFor0, replicasFor1 int
		// whether a PDB and anti-affinity are rendered
		protected bool
	}{
		{"dev", res("50m", "64Mi", "500m", "256Mi"), res("100m", "256Mi", "1", "512Mi"), "1Gi", 0, 1, false},
		{"stg", res("100m", "128Mi", "1", "512Mi"), res("250m", "512Mi", "1", "1Gi"), "5Gi", 1, 1, false},
		{"prod", res("250m", "256Mi", "2", "1Gi"), res("500m", "1Gi", "2", "2Gi"), "20Gi", 2, 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.tier, func(t *testing.T) {
			g := NewWithT(t)
			r, err := renderWebApp("deploymentTier: " + tc.tier)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resourcesOf(appContainer(g, r))).To(Equal(tc.app))
			sts := r.Get("StatefulSet", webAppDB)
			g.Expect(resourcesOf(container(g, sts, "postgres"))).To(Equal(tc.db))
			vct := field(g, sts, "spec", "volumeClaimTemplates").([]interface{})
			g.Expect(vct[0]).To(HaveKeyWithValue("spec", HaveKeyWithValue("resources", map[string]interface{}{"requests": map[string]interface{}{"storage": tc.storage}})))

			for spec, want := range map[string]int{"webAppReplicas: 0": tc.replicasFor0, "webAppReplicas: 1": tc.replicasFor1, "webAppReplicas: 5": 5} {
				r, err := renderWebApp("{deploymentTier: " + tc.tier + ", " + spec + "}")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(field(g, r.Get("Deployment", webAppRelease), "spec", "replicas")).To(BeEquivalentTo(want), spec)
			}

			pdb := r.Get("PodDisruptionBudget", webAppRelease)
			affinity := field(g, r.Get("Deployment", webAppRelease), "spec", "template", "spec").(map[string]interface{})["affinity"]
			if !tc.protected {
				g.Expect(pdb).To(BeNil())
				g.Expect(affinity).To(BeNil())
				return
			}
			g.Expect(pdb).NotTo(BeNil())
			g.Expect(field(g, pdb, "spec", "minAvailable")).To(BeEquivalentTo(1))
			g.Expect(field(g, pdb, "spec", "selector", "matchLabels")).To(HaveKeyWithValue("app.kubernetes.io/component", "app"))
			g.Expect(affinity).To(HaveKeyWithValue("podAntiAffinity", HaveKey("preferredDuringSchedulingIgnoredDuringExecution")))
		})
	}
}

func TestWebAppRender(t *testing.T) {
	cases := []struct {
		name  string
		spec  string
		check func(g Gomega, r *chartrender.Result)
	}{
		{
			// Explicit resources win over the tier's, per field.
			name: "resource overrides",
			spec: `{deploymentTier: prod, resources: {requests: {cpu: 1}, limits: {memory: 4Gi}}, database: {resources: {requests: {memory: 3Gi}}}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(resourcesOf(appContainer(g, r))).To(Equal(res("1", "256Mi", "2", "4Gi")))
				g.Expect(resourcesOf(container(g, r.Get("StatefulSet", webAppDB), "postgres"))).To(Equal(res("500m", "3Gi", "2", "2Gi")))
			},
		},
		{
			// References to existing Secrets and ConfigMaps, in the
			// Kubernetes shapes, after the plain env; no value of theirs in
			// the rendered objects.
			name: "envVars and envFrom",
			spec: `{env: {MODE: prod}, envVars: [{name: API_KEY, valueFrom: {secretKeyRef: {name: api, key: token}}}, {name: REGION, valueFrom: {configMapKeyRef: {name: settings, key: region, optional: true}}}, {name: PLAIN, value: x}], envFrom: [{secretRef: {name: extra}}, {configMapRef: {name: flags}, prefix: FLAG_}]}`,
			check: func(g Gomega, r *chartrender.Result) {
				c := appContainer(g, r)
				env := c["env"].([]interface{})
				g.Expect(env[len(env)-4:]).To(Equal([]interface{}{
					map[string]interface{}{"name": "MODE", "value": "prod"},
					map[string]interface{}{"name": "API_KEY", "valueFrom": map[string]interface{}{"secretKeyRef": map[string]interface{}{"name": "api", "key": "token"}}},
					map[string]interface{}{"name": "REGION", "valueFrom": map[string]interface{}{"configMapKeyRef": map[string]interface{}{"name": "settings", "key": "region", "optional": true}}},
					map[string]interface{}{"name": "PLAIN", "value": "x"},
				}))
				g.Expect(c["envFrom"]).To(Equal([]interface{}{
					map[string]interface{}{"secretRef": map[string]interface{}{"name": "extra"}},
					map[string]interface{}{"configMapRef": map[string]interface{}{"name": "flags"}, "prefix": "FLAG_"},
				}))
			},
		},
		{
			// An existing Secret's password replaces the generated one, for
			// the app and PostgreSQL; the chart's Secret keeps the rest.
			name: "database existingSecret",
			spec: `database: {auth: {existingSecret: shop-db-credentials}}`,
			check: func(g Gomega, r *chartrender.Result) {
				ref := map[string]interface{}{"secretKeyRef": map[string]interface{}{"name": "shop-db-credentials", "key": "password"}}
				g.Expect(appContainer(g, r)["env"]).To(ContainElement(map[string]interface{}{"name": "DATABASE_PASSWORD", "valueFrom": ref}))
				g.Expect(container(g, r.Get("StatefulSet", webAppDB), "postgres")["env"]).To(ContainElement(map[string]interface{}{"name": "POSTGRES_PASSWORD", "valueFrom": ref}))
				data := field(g, r.Get("Secret", webAppDB), "stringData").(map[string]interface{})
				g.Expect(data).NotTo(HaveKey("password"))
				g.Expect(data).To(HaveKeyWithValue("username", "app"))
			},
		},
		{
			// The database admits its own app's pods on its port, and the
			// listed pods of the namespace; nothing else.
			name: "database networkPolicy",
			spec: `database: {networkPolicy: {allowedPodSelectors: [{app: pg-backup}]}}`,
			check: func(g Gomega, r *chartrender.Result) {
				np := r.Get("NetworkPolicy", webAppDB)
				g.Expect(np).NotTo(BeNil())
				// Its Pods are taken out of a tenant's namespace-wide
				// allowances; the app's are not.
				g.Expect(field(g, r.Get("StatefulSet", webAppDB), "spec", "template", "metadata", "labels")).To(HaveKeyWithValue(ownIngressPolicyLabel, "true"))
				g.Expect(field(g, r.Get("Deployment", webAppRelease), "spec", "template", "metadata", "labels")).NotTo(HaveKey(ownIngressPolicyLabel))
				g.Expect(field(g, np, "spec", "podSelector", "matchLabels")).To(Equal(map[string]interface{}{
					"app.kubernetes.io/name": "webapp", "app.kubernetes.io/instance": webAppRelease, "app.kubernetes.io/component": "database",
				}))
				g.Expect(field(g, np, "spec", "policyTypes")).To(Equal([]interface{}{"Ingress"}))
				g.Expect(field(g, np, "spec", "ingress")).To(Equal([]interface{}{map[string]interface{}{
					"ports": []interface{}{map[string]interface{}{"port": "postgres", "protocol": "TCP"}},
					"from": []interface{}{
						map[string]interface{}{"podSelector": map[string]interface{}{"matchLabels": map[string]interface{}{
							"app.kubernetes.io/name": "webapp", "app.kubernetes.io/instance": webAppRelease, "app.kubernetes.io/component": "app",
						}}},
						map[string]interface{}{"podSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "pg-backup"}}},
					},
				}}))
			},
		},
		{
			// Off: no policy; without a database: none either.
			name: "database networkPolicy off",
			spec: `database: {networkPolicy: {enabled: false}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.Get("NetworkPolicy", webAppDB)).To(BeNil())
				// Without a policy of its own, the tenant's allowances
				// must keep selecting the database.
				g.Expect(field(g, r.Get("StatefulSet", webAppDB), "spec", "template", "metadata", "labels")).NotTo(HaveKey(ownIngressPolicyLabel))
			},
		},
		{
			name: "no database, no policy",
			spec: `database: {enabled: false}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.Get("NetworkPolicy", webAppDB)).To(BeNil())
			},
		},
		{
			// An explicit replica floor replaces the tier's.
			name: "replicaFloor override",
			spec: `{deploymentTier: prod, webAppReplicas: 0, replicaFloor: 0}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(field(g, r.Get("Deployment", webAppRelease), "spec", "replicas")).To(BeEquivalentTo(0))
			},
		},
		{
			// PDB and anti-affinity forced on outside prod.
			name: "dev with PDB and required anti-affinity",
			spec: `{podDisruptionBudget: {mode: always, minAvailable: 2}, podAntiAffinity: required}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(field(g, r.Get("PodDisruptionBudget", webAppRelease), "spec", "minAvailable")).To(BeEquivalentTo(2))
				aff := field(g, r.Get("Deployment", webAppRelease), "spec", "template", "spec", "affinity", "podAntiAffinity").(map[string]interface{})
				g.Expect(aff).To(HaveKey("requiredDuringSchedulingIgnoredDuringExecution"))
			},
		},
		{
			// PDB and anti-affinity forced off in prod.
			name: "prod without PDB and anti-affinity",
			spec: `{deploymentTier: prod, podDisruptionBudget: {mode: never}, podAntiAffinity: none}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.OfKind("PodDisruptionBudget")).To(BeEmpty())
				g.Expect(hasField(r.Get("Deployment", webAppRelease), "spec", "template", "spec", "affinity")).To(BeFalse())
			},
		},
		{
			// env and config: plain variables after the database ones,
			// files in the ConfigMap, a new checksum that rolls the pods.
			name: "env and config",
			spec: "{env: {LOG_LEVEL: debug}, config: {app.yaml: \"a: 1\\n\"}, configMountPath: /config}",
			check: func(g Gomega, r *chartrender.Result) {
				c := appContainer(g, r)
				g.Expect(c["env"]).To(ContainElement(map[string]interface{}{"name": "LOG_LEVEL", "value": "debug"}))
				g.Expect(c["volumeMounts"]).To(ContainElement(map[string]interface{}{"name": "config", "mountPath": "/config", "readOnly": true}))
				g.Expect(field(g, r.Get("ConfigMap", webAppRelease), "data")).To(Equal(map[string]interface{}{"app.yaml": "a: 1\n"}))
				def, err := renderWebApp("")
				g.Expect(err).NotTo(HaveOccurred())
				sum := func(r *chartrender.Result) interface{} {
					return field(g, r.Get("Deployment", webAppRelease), "spec", "template", "metadata", "annotations", "checksum/config")
				}
				g.Expect(sum(r)).NotTo(Equal(sum(def)))
			},
		},
		{
			// Probes off; a different port.
			name: "probes and port",
			spec: `{containerPort: 3000, livenessProbe: {enabled: false}, readinessProbe: {path: /ready}}`,
			check: func(g Gomega, r *chartrender.Result) {
				c := appContainer(g, r)
				g.Expect(c).NotTo(HaveKey("livenessProbe"))
				g.Expect(c["readinessProbe"]).To(HaveKeyWithValue("httpGet", HaveKeyWithValue("path", "/ready")))
				g.Expect(c["ports"]).To(ConsistOf(HaveKeyWithValue("containerPort", int64(3000))))
			},
		},
		{
			// Ingress with class, annotations and TLS (default secret name).
			name: "ingress TLS",
			spec: `ingress: {className: nginx, annotations: {a: b}, tls: {enabled: true}}`,
			check: func(g Gomega, r *chartrender.Result) {
				in := r.Get("Ingress", webAppRelease)
				g.Expect(field(g, in, "spec", "ingressClassName")).To(Equal("nginx"))
				g.Expect(in.GetAnnotations()).To(HaveKeyWithValue("a", "b"))
				g.Expect(field(g, in, "spec", "tls")).To(Equal([]interface{}{map[string]interface{}{
					"hosts": []interface{}{"app.acme.com"}, "secretName": webAppRelease + "-tls",
				}}))
				g.Expect(r.Notes).To(ContainSubstring("https://app.acme.com/"))
			},
		},
		{
			// No Ingress when disabled.
			name: "ingress disabled",
			spec: `ingress: {enabled: false}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.OfKind("Ingress")).To(BeEmpty())
			},
		},
		{
			// Service type and port.
			name: "service",
			spec: `service: {type: LoadBalancer, port: 8443, annotations: {lb: internal}}`,
			check: func(g Gomega, r *chartrender.Result) {
				s := r.Get("Service", webAppRelease)
				g.Expect(field(g, s, "spec", "type")).To(Equal("LoadBalancer"))
				g.Expect(s.GetAnnotations()).To(HaveKeyWithValue("lb", "internal"))
				g.Expect(field(g, s, "spec", "ports")).To(ConsistOf(HaveKeyWithValue("port", int64(8443))))
			},
		},
		{
			// whenDeleted: Delete: the claims go with the StatefulSet, and
			// the Secret is not kept either.
			name: "retention Delete",
			spec: `database: {storage: {whenDeleted: Delete, size: 50Gi, storageClassName: fast}}`,
			check: func(g Gomega, r *chartrender.Result) {
				sts := r.Get("StatefulSet", webAppDB)
				g.Expect(field(g, sts, "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted")).To(Equal("Delete"))
				g.Expect(r.Get("Secret", webAppDB).GetAnnotations()).NotTo(HaveKey("helm.sh/resource-policy"))
				vct := field(g, sts, "spec", "volumeClaimTemplates").([]interface{})[0].(map[string]interface{})
				g.Expect(vct["spec"]).To(And(
					HaveKeyWithValue("storageClassName", "fast"),
					HaveKeyWithValue("resources", map[string]interface{}{"requests": map[string]interface{}{"storage": "50Gi"}}),
				))
			},
		},
		{
			// Database off: no database objects and no connection variables.
			name: "database disabled",
			spec: `{database: {enabled: false}, env: {DATABASE_URL: "postgres://elsewhere"}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.Kinds()).To(Equal([]string{
					"ConfigMap/" + webAppRelease, "Deployment/" + webAppRelease, "Ingress/" + webAppRelease, "Service/" + webAppRelease,
				}))
				g.Expect(appContainer(g, r)["env"]).To(Equal([]interface{}{map[string]interface{}{"name": "DATABASE_URL", "value": "postgres://elsewhere"}}))
			},
		},
		{
			// Database name, user and port reach the Secret and the probes.
			name: "database settings",
			spec: `database: {name: shop, user: storefront, port: 5433, image: {tag: "16.6"}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(field(g, r.Get("Secret", webAppDB), "stringData")).To(And(
					HaveKeyWithValue("database", "shop"), HaveKeyWithValue("username", "storefront"), HaveKeyWithValue("port", "5433")))
				pg := container(g, r.Get("StatefulSet", webAppDB), "postgres")
				g.Expect(pg["image"]).To(Equal("postgres:16.6"))
				g.Expect(pg["env"]).To(ContainElement(map[string]interface{}{"name": "PGPORT", "value": "5433"}))
				g.Expect(field(g, r.Get("Service", webAppDB), "spec", "ports")).To(ConsistOf(HaveKeyWithValue("port", int64(5433))))
			},
		},
		{
			// cronScaling on: a CronScaler targets the app Deployment, which
			// carries no replicas, so the two never fight.
			name: "cronScaling",
			spec: `{webAppReplicas: 4, cronScaling: {enabled: true, timeZone: Europe/Paris, jobs: [{name: day, schedule: "0 8 * * 1-5", replicas: 6}, {name: night, schedule: "0 20 * * *", replicas: 1}]}}`,
			check: func(g Gomega, r *chartrender.Result) {
				cs := r.Get("CronScaler", webAppRelease)
				g.Expect(cs).NotTo(BeNil())
				g.Expect(cs.GetAPIVersion()).To(Equal("autoscaling.acme.com/v1alpha1"))
				g.Expect(cs.GetNamespace()).To(Equal(webAppNamespace))
				g.Expect(field(g, cs, "spec")).To(Equal(map[string]interface{}{
					"scaleTargetRef": map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment", "name": webAppRelease},
					"timeZone":       "Europe/Paris",
					"jobs": []interface{}{
						map[string]interface{}{"name": "day", "schedule": "0 8 * * 1-5", "replicas": int64(6)},
						map[string]interface{}{"name": "night", "schedule": "0 20 * * *", "replicas": int64(1)},
					},
				}))
				g.Expect(hasField(r.Get("Deployment", webAppRelease), "spec", "replicas")).To(BeFalse())
				g.Expect(r.Notes).To(ContainSubstring("CronScaler " + webAppRelease))
			},
		},
		{
			// cronScaling off (the default) with jobs listed: no CronScaler.
			name: "cronScaling disabled",
			spec: `cronScaling: {jobs: [{name: day, schedule: "0 8 * * *", replicas: 6}]}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.OfKind("CronScaler")).To(BeEmpty())
				g.Expect(field(g, r.Get("Deployment", webAppRelease), "spec", "replicas")).To(BeEquivalentTo(2))
			},
		},
		{
			// A long resource name is cut so "<name>-db-0" is a DNS label.
			name: "pod metadata and scheduling",
			spec: `{podAnnotations: {backup: nightly}, podLabels: {team: shop, app.kubernetes.io/component: other}, nodeSelector: {disk: ssd}, tolerations: [{key: k, operator: Exists}], imagePullSecrets: [{name: regcred}]}`,
			check: func(g Gomega, r *chartrender.Result) {
				d := r.Get("Deployment", webAppRelease)
				meta := field(g, d, "spec", "template", "metadata").(map[string]interface{})
				g.Expect(meta["annotations"]).To(HaveKeyWithValue("backup", "nightly"))
				g.Expect(meta["labels"]).To(And(HaveKeyWithValue("team", "shop"), HaveKeyWithValue("app.kubernetes.io/component", "app")))
				for _, o := range []*unstructured.Unstructured{d, r.Get("StatefulSet", webAppDB)} {
					pod := field(g, o, "spec", "template", "spec").(map[string]interface{})
					g.Expect(pod["nodeSelector"]).To(Equal(map[string]interface{}{"disk": "ssd"}))
					g.Expect(pod["tolerations"]).To(HaveLen(1))
					g.Expect(pod["imagePullSecrets"]).To(Equal([]interface{}{map[string]interface{}{"name": "regcred"}}))
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := renderWebApp(tc.spec)
			g.Expect(err).NotTo(HaveOccurred())
			tc.check(g, r)
		})
	}
}

func TestWebAppLongReleaseName(t *testing.T) {
	g := NewWithT(t)
	vals, err := webAppValues("")
	g.Expect(err).NotTo(HaveOccurred())
	name := strings.Repeat("a", 53)
	r, err := chartrender.Render(webAppChartDir, chartrender.Options{ReleaseName: name, Namespace: webAppNamespace, Values: vals})
	g.Expect(err).NotTo(HaveOccurred())
	sts := r.OfKind("StatefulSet")
	g.Expect(sts).To(HaveLen(1))
	// "<statefulset>-0" must fit a 63-character DNS label.
	g.Expect(len(sts[0].GetName()) + 2).To(BeNumerically("<=", 63))
}

func TestWebAppRefusedValues(t *testing.T) {
	cases := []struct {
		name string
		// values, rendered as given (not merged over the minimal spec)
		values string
		// every substring must appear in the error
		want []string
	}{
		// Each required field, missing.
		{"no tier", "{webAppImage: a/b:1, webAppHostname: a.example.com, database: {auth: {password: x}}}", []string{"missing property 'deploymentTier'"}},
		{"no image", "{deploymentTier: dev, webAppHostname: a.example.com, database: {auth: {password: x}}}", []string{"missing property 'webAppImage'"}},
		{"no hostname", "{deploymentTier: dev, webAppImage: a/b:1, database: {auth: {password: x}}}", []string{"missing property 'webAppHostname'"}},
		// Unknown tier.
		{"unknown tier", "{deploymentTier: qa, webAppImage: a/b:1, webAppHostname: a.example.com, database: {auth: {password: x}}}", []string{"/deploymentTier"}},
		// Not a DNS name.
		{"bad hostname", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: 'not a host', database: {auth: {password: x}}}", []string{"/webAppHostname"}},
		{"hostname with underscore", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: my_app.example.com, database: {auth: {password: x}}}", []string{"/webAppHostname"}},
		// Negative replicas.
		{"negative replicas", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: a.example.com, webAppReplicas: -1, database: {auth: {password: x}}}", []string{"/webAppReplicas", "minimum"}},
		// Unknown keys.
		{"unknown key", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: a.example.com, replicas: 2, database: {auth: {password: x}}}", []string{"replicas", "not allowed"}},
		{"unknown nested key", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: a.example.com, database: {size: 1Gi, auth: {password: x}}}", []string{"/database", "size", "not allowed"}},
		// Plain helm without a password: the template says who fills it.
		{"no password", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: a.example.com}", []string{"database.auth.password", "platform-operator"}},
		// Bad quantity.
		{"bad quantity", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: a.example.com, resources: {limits: {memory: lots}}, database: {auth: {password: x}}}", []string{"/resources/limits/memory"}},
		// Cross-field checks of the templates.
		{"empty database peer", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: a.example.com, database: {auth: {password: x}, networkPolicy: {allowedPodSelectors: [{}]}}}", []string{"allowedPodSelectors"}},
		{"cronScaling without jobs", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: a.example.com, cronScaling: {enabled: true}, database: {auth: {password: x}}}", []string{"cronScaling.jobs"}},
		{"cronScaling duplicate jobs", "{deploymentTier: dev, webAppImage: a/b:1, webAppHostname: a.example.com, cronScaling: {enabled: true, jobs: [{name: a, schedule: '0 8 * * *', replicas: 1}, {name: a, schedule: '0 9 * * *', replicas: 2}]}, database: {auth: {password: x}}}", []string{"used twice"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vals, err := chartrender.ValuesFromYAML(tc.values)
			g.Expect(err).NotTo(HaveOccurred())
			r, err := chartrender.Render(webAppChartDir, chartrender.Options{ReleaseName: webAppRelease, Namespace: webAppNamespace, Values: vals})
			g.Expect(err).To(HaveOccurred(), "rendered:\n%v", r)
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

func TestWebAppLint(t *testing.T) {
	for _, spec := range []string{"deploymentTier: dev", "deploymentTier: stg", "deploymentTier: prod",
		`{deploymentTier: prod, cronScaling: {enabled: true, jobs: [{name: a, schedule: "0 8 * * *", replicas: 3}]}, ingress: {tls: {enabled: true}}}`} {
		t.Run(spec, func(t *testing.T) {
			g := NewWithT(t)
			vals, err := webAppValues(spec)
			g.Expect(err).NotTo(HaveOccurred())
			msgs, err := chartrender.Lint(webAppChartDir, chartrender.LintOptions{Values: vals, Namespace: webAppNamespace})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(chartrender.AtLeast(msgs, support.WarningSev)).To(BeEmpty())
			g.Expect(msgs).To(BeEmpty())
		})
	}
}

// TestWebAppDeterministic guards the "no revision on idle reconciles"
// promise from the chart's side: the same values always render the same
// manifest (no random or time-based template functions).
func TestWebAppDeterministic(t *testing.T) {
	for _, tier := range []string{"dev", "stg", "prod"} {
		t.Run(tier, func(t *testing.T) {
			g := NewWithT(t)
			first, err := renderWebApp("deploymentTier: " + tier)
			g.Expect(err).NotTo(HaveOccurred())
			for range 5 {
				again, err := renderWebApp("deploymentTier: " + tier)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(again.Manifest).To(Equal(first.Manifest))
			}
		})
	}
}

func TestWebAppSchemaContract(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(webAppChartDir, "values.schema.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var schema map[string]interface{}
	g.Expect(json.Unmarshal(raw, &schema)).To(Succeed())
	g.Expect(schema["additionalProperties"]).To(BeFalse())
	// The three fields users must write, and nothing else, are required.
	g.Expect(schema["required"]).To(ConsistOf("deploymentTier", "webAppImage", "webAppHostname"))
	// The hostname is a DNS name by format and by pattern (the pattern is
	// what the API server enforces).
	host := schema["properties"].(map[string]interface{})["webAppHostname"].(map[string]interface{})
	g.Expect(host).To(And(HaveKeyWithValue("format", "hostname"), HaveKey("pattern"), HaveKeyWithValue("maxLength", BeNumerically("==", 253))))
}

func TestWebAppChartMetadata(t *testing.T) {
	g := NewWithT(t)
	ch, err := chartrender.LoadChart(webAppChartDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Metadata.APIVersion).To(Equal("v2"))
	g.Expect(ch.Metadata.Name).To(Equal("webapp"))
	// appVersion follows the pinned PostgreSQL image.
	g.Expect(ch.Values).To(HaveKeyWithValue("database", HaveKeyWithValue("image", HaveKeyWithValue("tag", ch.Metadata.AppVersion))))
}

// TestWebAppGeneratedPassword checks the chart's declaration of the
// generated password against what it renders: the path is the value the
// Secret's password comes from, and the Secret the runtime reads a kept
// password from is the one the chart renders, for short and long names.
func TestWebAppGeneratedPassword(t *testing.T) {
	g := NewWithT(t)
	ch, err := chartrender.LoadChart(webAppChartDir)
	g.Expect(err).NotTo(HaveOccurred())
	gvs, err := manifest.ParseGeneratedValues(ch)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gvs).To(HaveLen(1))
	gv := gvs[0]
	g.Expect(gv.Path).To(Equal("database.auth.password"))
	g.Expect(gv.Secret).NotTo(BeNil())

	for _, release := range []string{"webapp-sample", "a", strings.Repeat("x", 49) + "-y", strings.Repeat("z", 53)} {
		vals, err := webAppValues("")
		g.Expect(err).NotTo(HaveOccurred())
		r, err := chartrender.Render(webAppChartDir, chartrender.Options{ReleaseName: release, Namespace: webAppNamespace, Values: vals})
		g.Expect(err).NotTo(HaveOccurred())
		name, err := gv.SecretName(release, webAppNamespace)
		g.Expect(err).NotTo(HaveOccurred())
		s := r.Get("Secret", name)
		g.Expect(s).NotTo(BeNil(), "release %q: no Secret %q in %v", release, name, r.Kinds())
		g.Expect(field(g, s, "stringData", gv.Secret.Key)).To(Equal(testPassword))
	}
}

package helmcharts_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/acme/platform-operator/internal/gen/chartrender"
)

const (
	tenantChartDir = "namespace-tenant"
	// The operator names the release after the NamespaceTenant and stores
	// it in its own namespace (the tenant kind is cluster-scoped).
	tenantRelease          = "team-x"
	tenantReleaseNamespace = "platform-operator-system"
	tenantNamespace        = "app-y"
)

// tenantMinimal is the spec of the minimal NamespaceTenant.
const tenantMinimal = `{namespaceName: app-y, adminUsername: sam}`

// tenantAllOptions sets every optional value.
const tenantAllOptions = `
namespaceName: app-y
adminUsername: sam
deploymentTier: prod
additionalAdmins: {users: [kim, sam], groups: [team-x-oncall]}
podSecurity: {level: privileged}
namespaceLabels: {cost-center: "4711", tenancy.acme.com/tenant: hijack}
namespaceAnnotations: {owner: team-x@acme.com}
quota: {hard: {pods: 20, requests.storage: 100Gi}}
limitRange: {default: {memory: 3Gi}, defaultRequest: {cpu: 1}}
networkPolicy: {allowedNamespaces: [ingress-nginx, monitoring]}
`

// podsWithoutOwnIngressPolicy is the podSelector of the tenant's
// namespace-wide allowances.
var podsWithoutOwnIngressPolicy = map[string]interface{}{"matchExpressions": []interface{}{
	map[string]interface{}{"key": ownIngressPolicyLabel, "operator": "DoesNotExist"},
}}

// renderTenant renders the namespace-tenant chart as the operator does for
// the NamespaceTenant team-x with the given spec (YAML).
func renderTenant(spec string) (*chartrender.Result, error) {
	vals, err := chartrender.ValuesFromYAML(spec)
	if err != nil {
		return nil, fmt.Errorf("test values: %w", err)
	}
	return chartrender.Render(tenantChartDir, chartrender.Options{ReleaseName: tenantRelease, Namespace: tenantReleaseNamespace, Values: vals})
}

// quantities reads a map of quantities (as the chart writes them: strings).
func quantities(g Gomega, o *unstructured.Unstructured, path ...string) map[string]string {
	out := map[string]string{}
	for k, v := range field(g, o, path...).(map[string]interface{}) {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// limitRangeDefaults returns the default limits and requests of the
// tenant's LimitRange container entry.
func limitRangeDefaults(g Gomega, r *chartrender.Result) (limits, requests map[string]interface{}) {
	items := field(g, r.Get("LimitRange", "tenant-limits"), "spec", "limits").([]interface{})
	g.ExpectWithOffset(1, items).To(HaveLen(1))
	c := items[0].(map[string]interface{})
	g.ExpectWithOffset(1, c["type"]).To(Equal("Container"))
	return c["default"].(map[string]interface{}), c["defaultRequest"].(map[string]interface{})
}

func TestNamespaceTenantMinimal(t *testing.T) {
	g := NewWithT(t)
	r, err := renderTenant(tenantMinimal)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(r.Kinds()).To(Equal([]string{
		"LimitRange/tenant-limits",
		"Namespace/app-y",
		"NetworkPolicy/tenant-allow-same-namespace",
		"NetworkPolicy/tenant-default-deny-ingress",
		"ResourceQuota/tenant-quota",
		"RoleBinding/tenant-admins",
	}))
	// Every namespaced object lives in the tenant's namespace, never in the
	// release namespace; every object carries the tenant labels.
	for _, o := range r.Objects {
		if o.GetKind() == "Namespace" {
			g.Expect(o.GetNamespace()).To(BeEmpty())
		} else {
			g.Expect(o.GetNamespace()).To(Equal(tenantNamespace), "%s namespace", o.GetKind())
		}
		g.Expect(o.GetLabels()).To(And(
			HaveKeyWithValue("app.kubernetes.io/name", "namespace-tenant"),
			HaveKeyWithValue("app.kubernetes.io/instance", tenantRelease),
			HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"),
			HaveKeyWithValue("helm.sh/chart", "namespace-tenant-0.1.0"),
			HaveKeyWithValue("tenancy.acme.com/tenant", tenantRelease),
			HaveKeyWithValue("tenancy.acme.com/tier", "dev"),
		), "%s labels", o.GetKind())
	}

	// dev: baseline Pod Security in every mode.
	ns := r.Get("Namespace", tenantNamespace)
	g.Expect(ns.GetLabels()).To(And(
		HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"),
		HaveKeyWithValue("pod-security.kubernetes.io/enforce-version", "latest"),
		HaveKeyWithValue("pod-security.kubernetes.io/audit", "baseline"),
		HaveKeyWithValue("pod-security.kubernetes.io/warn", "baseline"),
	))
	g.Expect(ns.GetAnnotations()).To(BeEmpty())

	rb := r.Get("RoleBinding", "tenant-admins")
	g.Expect(field(g, rb, "roleRef")).To(Equal(map[string]interface{}{
		"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin",
	}))
	g.Expect(field(g, rb, "subjects")).To(Equal([]interface{}{
		map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "sam"},
	}))

	deny := r.Get("NetworkPolicy", "tenant-default-deny-ingress")
	g.Expect(field(g, deny, "spec")).To(Equal(map[string]interface{}{
		"podSelector": map[string]interface{}{}, "policyTypes": []interface{}{"Ingress"},
	}))
	// The allowances skip Pods whose own policy decides their ingress
	// (TestNetworkPoliciesCompose); the sources are every Pod.
	same := r.Get("NetworkPolicy", "tenant-allow-same-namespace")
	g.Expect(field(g, same, "spec", "podSelector")).To(Equal(podsWithoutOwnIngressPolicy))
	g.Expect(field(g, same, "spec", "ingress")).To(Equal([]interface{}{map[string]interface{}{
		"from": []interface{}{map[string]interface{}{"podSelector": map[string]interface{}{}}},
	}}))

	g.Expect(r.Notes).To(ContainSubstring("owns namespace app-y"))
	g.Expect(r.Hooks).To(BeEmpty())
}

func TestNamespaceTenantTiers(t *testing.T) {
	cases := []struct {
		tier string
		// ResourceQuota hard limits.
		quota map[string]string
		// LimitRange container default limits and requests.
		limits, requests map[string]interface{}
		// Pod Security level of the namespace.
		podSecurity string
	}{
		{
			tier:        "dev",
			quota:       map[string]string{"cpu": "5", "memory": "10Gi", "pods": "10"},
			limits:      map[string]interface{}{"cpu": "500m", "memory": "512Mi"},
			requests:    map[string]interface{}{"cpu": "100m", "memory": "128Mi"},
			podSecurity: "baseline",
		},
		{
			tier:        "stg",
			quota:       map[string]string{"cpu": "50", "memory": "50Gi", "pods": "50"},
			limits:      map[string]interface{}{"cpu": "1", "memory": "1Gi"},
			requests:    map[string]interface{}{"cpu": "250m", "memory": "256Mi"},
			podSecurity: "restricted",
		},
		{
			tier:        "prod",
			quota:       map[string]string{"cpu": "500", "memory": "200Gi", "pods": "100"},
			limits:      map[string]interface{}{"cpu": "2", "memory": "2Gi"},
			requests:    map[string]interface{}{"cpu": "500m", "memory": "512Mi"},
			podSecurity: "restricted",
		},
	}
	for _, tc := range cases {
		t.Run(tc.tier, func(t *testing.T) {
			g := NewWithT(t)
			r, err := renderTenant(`{namespaceName: app-y, adminUsername: sam, deploymentTier: ` + tc.tier + `}`)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(quantities(g, r.Get("ResourceQuota", "tenant-quota"), "spec", "hard")).To(Equal(tc.quota))
			limits, requests := limitRangeDefaults(g, r)
			g.Expect(limits).To(Equal(tc.limits))
			g.Expect(requests).To(Equal(tc.requests))
			ns := r.Get("Namespace", tenantNamespace)
			g.Expect(ns.GetLabels()).To(And(
				HaveKeyWithValue("pod-security.kubernetes.io/enforce", tc.podSecurity),
				HaveKeyWithValue("tenancy.acme.com/tier", tc.tier),
			))
		})
	}
}

func TestNamespaceTenantOptions(t *testing.T) {
	cases := []struct {
		name  string
		spec  string
		check func(g Gomega, r *chartrender.Result)
	}{
		{
			// Additional users and groups join adminUsername in the one
			// RoleBinding; a user listed twice is bound once.
			name: "additional admins",
			spec: `{namespaceName: app-y, adminUsername: sam, additionalAdmins: {users: [kim, sam], groups: [oncall]}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(field(g, r.Get("RoleBinding", "tenant-admins"), "subjects")).To(Equal([]interface{}{
					map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "sam"},
					map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "kim"},
					map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "oncall"},
				}))
			},
		},
		{
			// An explicit Pod Security level wins over the tier's.
			name: "pod security override",
			spec: `{namespaceName: app-y, adminUsername: sam, deploymentTier: prod, podSecurity: {level: baseline}}`,
			check: func(g Gomega, r *chartrender.Result) {
				labels := r.Get("Namespace", tenantNamespace).GetLabels()
				for _, mode := range []string{"enforce", "audit", "warn"} {
					g.Expect(labels).To(HaveKeyWithValue("pod-security.kubernetes.io/"+mode, "baseline"))
				}
			},
		},
		{
			// Extra labels and annotations land on the Namespace; the
			// chart's own labels cannot be replaced.
			name: "namespace labels and annotations",
			spec: `{namespaceName: app-y, adminUsername: sam, namespaceLabels: {cost-center: "4711", tenancy.acme.com/tenant: other, pod-security.kubernetes.io/enforce: privileged}, namespaceAnnotations: {owner: team-x@acme.com}}`,
			check: func(g Gomega, r *chartrender.Result) {
				ns := r.Get("Namespace", tenantNamespace)
				g.Expect(ns.GetLabels()).To(And(
					HaveKeyWithValue("cost-center", "4711"),
					HaveKeyWithValue("tenancy.acme.com/tenant", tenantRelease),
					HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"),
				))
				g.Expect(ns.GetAnnotations()).To(Equal(map[string]string{"owner": "team-x@acme.com"}))
			},
		},
		{
			// releaseIdentity: a ServiceAccount bound in the namespace to the
			// release deployer ClusterRole, named on the Namespace next to its
			// other annotations (which cannot replace it).
			name: "release identity",
			spec: `{namespaceName: app-y, adminUsername: sam, namespaceAnnotations: {owner: team-x@acme.com, platform.acme.com/release-service-account: other}, releaseIdentity: {enabled: true}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.Get("Namespace", tenantNamespace).GetAnnotations()).To(Equal(map[string]string{
					"owner": "team-x@acme.com", "platform.acme.com/release-service-account": "release-deployer",
				}))
				sa := r.Get("ServiceAccount", "release-deployer")
				g.Expect(sa.GetNamespace()).To(Equal(tenantNamespace))
				rb := r.Get("RoleBinding", "release-deployer")
				g.Expect(rb.GetNamespace()).To(Equal(tenantNamespace))
				g.Expect(field(g, rb, "roleRef")).To(Equal(map[string]interface{}{
					"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "platform-operator-release-deployer",
				}))
				g.Expect(field(g, rb, "subjects")).To(Equal([]interface{}{
					map[string]interface{}{"kind": "ServiceAccount", "name": "release-deployer", "namespace": tenantNamespace},
				}))
			},
		},
		{
			// Quota overrides are merged over the tier's hard limits; integers
			// are written as quantity strings.
			name: "quota override",
			spec: `{namespaceName: app-y, adminUsername: sam, quota: {hard: {pods: 20, requests.storage: 100Gi}}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(quantities(g, r.Get("ResourceQuota", "tenant-quota"), "spec", "hard")).To(Equal(map[string]string{
					"cpu": "5", "memory": "10Gi", "pods": "20", "requests.storage": "100Gi",
				}))
			},
		},
		{
			// LimitRange overrides are merged over the tier's defaults.
			name: "limit overrides",
			spec: `{namespaceName: app-y, adminUsername: sam, limitRange: {default: {memory: 1Gi}, defaultRequest: {cpu: 200m}}}`,
			check: func(g Gomega, r *chartrender.Result) {
				limits, requests := limitRangeDefaults(g, r)
				g.Expect(limits).To(Equal(map[string]interface{}{"cpu": "500m", "memory": "1Gi"}))
				g.Expect(requests).To(Equal(map[string]interface{}{"cpu": "200m", "memory": "128Mi"}))
			},
		},
		{
			// Quota and LimitRange can be switched off.
			name: "no quota, no limits",
			spec: `{namespaceName: app-y, adminUsername: sam, quota: {enabled: false}, limitRange: {enabled: false}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.OfKind("ResourceQuota")).To(BeEmpty())
				g.Expect(r.OfKind("LimitRange")).To(BeEmpty())
			},
		},
		{
			// Allowed namespaces get a third policy selecting them by their
			// immutable kubernetes.io/metadata.name label.
			name: "allowed namespaces",
			spec: `{namespaceName: app-y, adminUsername: sam, networkPolicy: {allowedNamespaces: [ingress-nginx, monitoring]}}`,
			check: func(g Gomega, r *chartrender.Result) {
				np := r.Get("NetworkPolicy", "tenant-allow-from-namespaces")
				g.Expect(np).NotTo(BeNil())
				g.Expect(np.GetNamespace()).To(Equal(tenantNamespace))
				g.Expect(field(g, np, "spec", "podSelector")).To(Equal(podsWithoutOwnIngressPolicy))
				g.Expect(field(g, np, "spec", "ingress")).To(Equal([]interface{}{map[string]interface{}{
					"from": []interface{}{
						map[string]interface{}{"namespaceSelector": map[string]interface{}{
							"matchLabels": map[string]interface{}{"kubernetes.io/metadata.name": "ingress-nginx"}}},
						map[string]interface{}{"namespaceSelector": map[string]interface{}{
							"matchLabels": map[string]interface{}{"kubernetes.io/metadata.name": "monitoring"}}},
					},
				}}))
			},
		},
		{
			// Network isolation off: no NetworkPolicy at all.
			name: "network isolation off",
			spec: `{namespaceName: app-y, adminUsername: sam, networkPolicy: {enabled: false, allowedNamespaces: [monitoring]}}`,
			check: func(g Gomega, r *chartrender.Result) {
				g.Expect(r.OfKind("NetworkPolicy")).To(BeEmpty())
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := renderTenant(tc.spec)
			g.Expect(err).NotTo(HaveOccurred())
			tc.check(g, r)
		})
	}
}

func TestNamespaceTenantRefusedValues(t *testing.T) {
	cases := []struct {
		name string
		spec string
		// every substring must appear in the error
		want []string
	}{
		// Both required fields missing.
		{"empty spec", `{}`, []string{"namespaceName", "adminUsername"}},
		// adminUsername missing.
		{"no admin", `{namespaceName: app-y}`, []string{"adminUsername"}},
		// Not a DNS-1123 label.
		{"upper-case namespace", `{namespaceName: App_Y, adminUsername: sam}`, []string{"/namespaceName"}},
		// Longer than a namespace name may be.
		{"long namespace", `{namespaceName: ` + strings.Repeat("a", 64) + `, adminUsername: sam}`, []string{"/namespaceName"}},
		// Unknown tier.
		{"unknown tier", `{namespaceName: app-y, adminUsername: sam, deploymentTier: qa}`, []string{"/deploymentTier", "dev"}},
		// Unknown Pod Security level.
		{"unknown pod security level", `{namespaceName: app-y, adminUsername: sam, podSecurity: {level: strict}}`, []string{"/podSecurity/level"}},
		// A quota that is not a quantity.
		{"bad quantity", `{namespaceName: app-y, adminUsername: sam, quota: {hard: {pods: lots}}}`, []string{"/quota/hard/pods"}},
		// Typos are refused, not ignored.
		{"unknown key", `{namespaceName: app-y, adminUsername: sam, tier: prod}`, []string{"tier", "not allowed"}},
		// Allowed namespaces must be namespace names.
		{"bad allowed namespace", `{namespaceName: app-y, adminUsername: sam, networkPolicy: {allowedNamespaces: ["Not OK"]}}`, []string{"/networkPolicy/allowedNamespaces/0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := renderTenant(tc.spec)
			g.Expect(err).To(HaveOccurred(), "rendered:\n%v", r)
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

func TestNamespaceTenantLint(t *testing.T) {
	for name, spec := range map[string]string{"minimal": tenantMinimal, "all options": tenantAllOptions} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			vals, err := chartrender.ValuesFromYAML(spec)
			g.Expect(err).NotTo(HaveOccurred())
			msgs, err := chartrender.Lint(tenantChartDir, chartrender.LintOptions{Values: vals, Namespace: tenantReleaseNamespace})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(chartrender.AtLeast(msgs, support.WarningSev)).To(BeEmpty())
			g.Expect(msgs).To(BeEmpty())
		})
	}
}

func TestNamespaceTenantDeterministic(t *testing.T) {
	g := NewWithT(t)
	first, err := renderTenant(tenantAllOptions)
	g.Expect(err).NotTo(HaveOccurred())
	for i := 0; i < 5; i++ {
		again, err := renderTenant(tenantAllOptions)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.Manifest).To(Equal(first.Manifest))
	}
}

// TestNamespaceTenantSchemaContract: the fields users must write (the
// contract shared by every chart is in TestChartSchemas).
func TestNamespaceTenantSchemaContract(t *testing.T) {
	schema := loadJSONish(t, filepath.Join(tenantChartDir, "values.schema.json"))
	NewWithT(t).Expect(schema["required"]).To(ConsistOf("namespaceName", "adminUsername"))
}

func TestNamespaceTenantChartMetadata(t *testing.T) {
	g := NewWithT(t)
	ch, err := chartrender.LoadChart(tenantChartDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Metadata.APIVersion).To(Equal("v2"))
	g.Expect(ch.Metadata.Name).To(Equal("namespace-tenant"))
	g.Expect(ch.Metadata.KubeVersion).To(Equal(">=1.26.0-0"))
	g.Expect(ch.Schema).NotTo(BeEmpty())
}

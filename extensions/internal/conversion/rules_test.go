package conversion

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// testKinds has one kind with a second version (one rename in place, one
// into another object) and one kind without.
const testKinds = `
- chart: charts/demo
  group: demo.example.com
  version: v1alpha1
  kind: Demo
  plural: demos
  scope: Namespaced
  description: A demo.
  nameLimit: {maxLength: 40, dns1035Label: true, reason: it names the release.}
  versions:
  - name: v1beta1
    renames:
    - {from: demoHost, to: host}
    - {from: db.size, to: storage.size}
- chart: charts/plain
  group: demo.example.com
  version: v1alpha1
  kind: Plain
  plural: plains
  scope: Namespaced
  description: A plain kind.
  nameLimit: {maxLength: 40, dns1035Label: true, reason: it names the release.}
`

func testRules(t *testing.T) *Rules {
	t.Helper()
	kinds, err := apikinds.ParseKinds([]byte(testKinds))
	if err != nil {
		t.Fatal(err)
	}
	return New(kinds)
}

func object(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

// alpha and beta are one object in its two versions: metadata, status and
// the fields that are not renamed are the same.
const alpha = `
apiVersion: demo.example.com/v1alpha1
kind: Demo
metadata: {name: shop, namespace: team, uid: u-1, resourceVersion: "7", generation: 2, labels: {a: b}}
spec:
  demoHost: shop.example.com
  replicas: 3
  db: {size: 1Gi}
  extra: {kept: true}
status:
  conditions: [{type: Deployed, status: "True"}]
  deployedRelease: {name: shop}
`

const beta = `
apiVersion: demo.example.com/v1beta1
kind: Demo
metadata: {name: shop, namespace: team, uid: u-1, resourceVersion: "7", generation: 2, labels: {a: b}}
spec:
  host: shop.example.com
  replicas: 3
  storage: {size: 1Gi}
  extra: {kept: true}
status:
  conditions: [{type: Deployed, status: "True"}]
  deployedRelease: {name: shop}
`

func TestConvertBothWays(t *testing.T) {
	g := NewWithT(t)
	r := testRules(t)

	up := object(t, alpha)
	g.Expect(r.Convert(up, "demo.example.com/v1beta1")).To(Succeed())
	g.Expect(up.Object).To(Equal(object(t, beta).Object))

	down := object(t, beta)
	g.Expect(r.Convert(down, "demo.example.com/v1alpha1")).To(Succeed())
	g.Expect(down.Object).To(Equal(object(t, alpha).Object))

	// To its own version: unchanged.
	same := object(t, alpha)
	g.Expect(r.Convert(same, "demo.example.com/v1alpha1")).To(Succeed())
	g.Expect(same.Object).To(Equal(object(t, alpha).Object))
}

// Fields a resource does not set are not created, and a moved field
// leaves no empty object behind: there and back is the object itself.
func TestConvertUnsetFields(t *testing.T) {
	g := NewWithT(t)
	r := testRules(t)
	const minimal = `{apiVersion: demo.example.com/v1alpha1, kind: Demo, metadata: {name: a}, spec: {replicas: 1}}`
	u := object(t, minimal)
	g.Expect(r.Convert(u, "demo.example.com/v1beta1")).To(Succeed())
	g.Expect(u.Object["spec"]).To(Equal(map[string]any{"replicas": int64(1)}))
	g.Expect(r.Convert(u, "demo.example.com/v1alpha1")).To(Succeed())
	g.Expect(u.Object).To(Equal(object(t, minimal).Object))

	noSpec := object(t, `{apiVersion: demo.example.com/v1beta1, kind: Demo, metadata: {name: a}}`)
	g.Expect(r.Convert(noSpec, "demo.example.com/v1alpha1")).To(Succeed())
	g.Expect(noSpec.Object).NotTo(HaveKey("spec"))
}

func TestConvertRefused(t *testing.T) {
	r := testRules(t)
	tests := []struct {
		name, obj, desired, want string
	}{
		{"unknown desired version", alpha, "demo.example.com/v2", `Demo.demo.example.com has no version "v2": it is served as v1alpha1, v1beta1`},
		{"unknown object version", `{apiVersion: demo.example.com/v1, kind: Demo, metadata: {name: a}}`, "demo.example.com/v1beta1",
			`Demo.demo.example.com has no version "v1"`},
		{"kind without versions", `{apiVersion: demo.example.com/v1alpha1, kind: Plain, metadata: {name: a}}`, "demo.example.com/v1beta1",
			`Plain.demo.example.com is not a kind this webhook converts`},
		{"other group", alpha, "other.example.com/v1beta1", `to another group`},
		{"both names set", `{apiVersion: demo.example.com/v1alpha1, kind: Demo, metadata: {name: a}, spec: {demoHost: a, host: b}}`,
			"demo.example.com/v1beta1", `both spec.demoHost and spec.host are set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(r.Convert(object(t, tt.obj), tt.desired)).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

// The shipped kinds file: WebApp v1beta1 names webAppHostname hostname.
func TestShippedKinds(t *testing.T) {
	g := NewWithT(t)
	file := filepath.Join("..", "..", "..", "config", "crd", "kinds.yaml")
	r, err := Load(file)
	g.Expect(err).NotTo(HaveOccurred())
	u := object(t, `{apiVersion: web.acme.com/v1alpha1, kind: WebApp, metadata: {name: a}, spec: {deploymentTier: dev, webAppHostname: a.example.com}}`)
	g.Expect(r.Convert(u, "web.acme.com/v1beta1")).To(Succeed())
	g.Expect(u.Object["spec"]).To(Equal(map[string]any{"deploymentTier": "dev", "hostname": "a.example.com"}))

	kinds, err := apikinds.LoadKinds(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(apikinds.ConvertedCRDs(kinds)).To(Equal([]string{"webapps.web.acme.com"}))
}

// The sidecar may update the CRDs it injects its CA into, and only those
// (config/rbac/role.yaml).
func TestShippedRoleGrantsConversionCRDs(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("..", "..", "..")
	kinds, err := apikinds.LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.UnmarshalStrict(data, role)).To(Succeed())
	var named []string
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "apiextensions.k8s.io") && slices.Contains(r.Resources, "customresourcedefinitions") &&
			slices.Contains(r.Verbs, "update") {
			g.Expect(r.ResourceNames).NotTo(BeEmpty(), "updates of CRDs are limited by name")
			named = append(named, r.ResourceNames...)
		}
	}
	slices.Sort(named)
	g.Expect(named).To(Equal(apikinds.ConvertedCRDs(kinds)))
}

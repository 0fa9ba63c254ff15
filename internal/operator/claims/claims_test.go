package claims

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/acme/platform-operator/internal/operator/release"
)

var webApp = schema.GroupKind{Group: "web.acme.com", Kind: "WebApp"}

func TestFromManifests(t *testing.T) {
	g := NewWithT(t)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	mapper.Add(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, meta.RESTScopeNamespace)
	objs, err := FromManifests(map[string]string{
		"c/templates/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n---\n# only a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team, namespace: ignored}\n",
		"c/templates/a.yaml": `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: other}
spec:
  rules: [{host: a.example.com}, {host: b.example.com}]
  tls: [{hosts: [a.example.com, c.example.com]}]
`,
	}, "app", mapper)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(3))
	g.Expect(objs[0].String()).To(Equal("Ingress other/web"), "files in name order; a namespace written in the manifest stays")
	g.Expect(objs[0].Hosts).To(Equal([]string{"a.example.com", "b.example.com", "c.example.com"}))
	g.Expect(objs[1].String()).To(Equal("ConfigMap app/web"), "a namespaced object goes to the release namespace")
	g.Expect(objs[2].String()).To(Equal("Namespace team"), "a cluster-scoped object has no namespace")
}

func TestSpecPathOf(t *testing.T) {
	g := NewWithT(t)
	spec := map[string]interface{}{
		"ingress": map[string]interface{}{"hosts": []interface{}{map[string]interface{}{"host": "x.example.com"}}},
		"name":    "web",
	}
	g.Expect(specPathOf(spec, "x.example.com")).To(Equal("spec.ingress.hosts[0].host"))
	g.Expect(specPathOf(spec, "web")).To(Equal("spec.name"))
	g.Expect(specPathOf(spec, "absent")).To(BeEmpty())
	g.Expect(specPathOf(spec, "")).To(BeEmpty())
}

// ingresses is an IngressIndex over a fixed list.
type ingresses map[string][]Ingress

func (i ingresses) ServingHost(_ context.Context, host string) ([]Ingress, error) {
	return i[host], nil
}

// TestHostScopes: what each scope refuses, for a WebApp "pay" in namespace
// "a" whose Ingress would serve one host.
func TestHostScopes(t *testing.T) {
	ours := func(ns, name string) *corev1.Secret {
		o := release.Owner{GroupKind: webApp, Namespace: ns, Name: name, UID: "u-" + "name"}
		l := o.Labels()
		l["owner"], l["name"], l["version"] = "helm", name, "1"
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1." + name + ".v1", Labels: l}}
	}
	reader := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(ours("b", "shop"), ours("a", "blog")).Build()
	index := ingresses{
		"own.example.com":          {{Namespace: "a", Name: "pay", ReleaseName: "pay", ReleaseNamespace: "a"}},
		"other-tenant.example.com": {{Namespace: "b", Name: "shop", ReleaseName: "shop", ReleaseNamespace: "b"}},
		"by-hand-b.example.com":    {{Namespace: "b", Name: "manual"}},
		"by-hand-a.example.com":    {{Namespace: "a", Name: "manual"}},
		"ours-a.example.com":       {{Namespace: "a", Name: "blog", ReleaseName: "blog", ReleaseNamespace: "a"}},
	}
	claimant := Claimant{Owner: release.Owner{GroupKind: webApp, Namespace: "a", Name: "pay"}, ReleaseName: "pay", ReleaseNamespace: "a",
		Spec: map[string]interface{}{"webAppHostname": "x"}}
	cases := []struct {
		host       string
		cluster    string // the holder named under HostsCluster; "" when allowed
		namespaced string // under HostsNamespace
	}{
		{"own.example.com", "", ""},
		{"free.example.com", "", ""},
		{"other-tenant.example.com", "Ingress b/shop of WebApp b/shop", ""},
		{"by-hand-b.example.com", "Ingress b/manual already", ""},
		{"by-hand-a.example.com", "", ""},
		{"ours-a.example.com", "Ingress a/blog of WebApp a/blog", "Ingress a/blog of WebApp a/blog"},
	}
	for _, tc := range cases {
		objs := []Object{{GVK: schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, Namespace: "a", Name: "pay", Hosts: []string{tc.host}}}
		for scope, want := range map[HostScope]string{HostsCluster: tc.cluster, HostsNamespace: tc.namespaced, HostsOff: ""} {
			clash, err := Checker{Reader: reader, Ingresses: index, HostScope: scope}.Hosts(context.Background(), objs, claimant)
			if err != nil {
				t.Fatal(err)
			}
			if want == "" {
				if clash != nil {
					t.Errorf("%s under %s: refused (%v), want allowed", tc.host, scope, clash)
				}
				continue
			}
			if clash == nil {
				t.Errorf("%s under %s: allowed, want refused naming %q", tc.host, scope, want)
				continue
			}
			NewWithT(t).Expect(clash.Error()).To(ContainSubstring("host "+tc.host+" is served by "+want), string(scope))
		}
	}
}

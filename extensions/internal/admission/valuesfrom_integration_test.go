package admission

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWebhookChecksValuesFrom: a tenant who may create Nginxes and get
// only some Secrets of its namespace is refused a valuesFrom naming a
// Secret it may not get (the operator could read it), and one naming a
// missing Secret or key that is not optional; it may use the Secrets it
// can read, and their values are rendered with the chart, so a value the
// chart's schema refuses is refused at apply. The content of a Secret
// never appears in an answer.
func TestWebhookChecksValuesFrom(t *testing.T) {
	g := NewWithT(t)
	admin := adminClient(t)
	defer startWebhook(t)()
	ctx := t.Context()
	ns := newNamespace(t, admin)

	const tenant = "valuesfrom-tenant"
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"web.acme.com"}, Resources: []string{"nginxes"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"mine", "absent", "bad"}, Verbs: []string{"get"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: tenant}},
	}
	g.Expect(admin.Create(ctx, role)).To(Succeed())
	g.Expect(admin.Create(ctx, binding)).To(Succeed())
	for name, data := range map[string]map[string][]byte{
		"mine":   {"values.yaml": []byte("replicaCount: 2\n"), "conf": []byte("server { listen 8080; } # s3cret-mine")},
		"theirs": {"values.yaml": []byte("replicaCount: 3\n")},
		"bad":    {"values.yaml": []byte("replicaCount: s3cret-bad\n")},
	} {
		g.Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data})).To(Succeed())
	}
	cfg := rest.CopyConfig(env.Require(t))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: tenant, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: testScheme()})
	g.Expect(err).NotTo(HaveOccurred())

	nginx := func(name, valuesFrom string) *unstructured.Unstructured {
		return obj(ns, "Nginx", name, spec(t, `{valuesFrom: `+valuesFrom+`}`))
	}
	noSecret := func(err error) {
		g.ExpectWithOffset(1, err.Error()).NotTo(ContainSubstring("s3cret"), "an answer quotes a Secret's content")
	}

	err = c.Create(ctx, nginx("theirs", `[{kind: Secret, name: theirs}]`))
	refused(g, err, "spec.valuesFrom[0].name", tenant+" may not get Secret theirs in namespace "+ns)
	noSecret(err)

	err = c.Create(ctx, nginx("absent", `[{kind: Secret, name: mine}, {kind: Secret, name: absent}]`))
	refused(g, err, "spec.valuesFrom[1]", "Secret absent does not exist")

	err = c.Create(ctx, nginx("nokey", `[{kind: Secret, name: mine, valuesKey: nope}]`))
	refused(g, err, "spec.valuesFrom[0].valuesKey", `Secret mine has no key "nope"`)

	err = c.Create(ctx, nginx("bad", `[{kind: Secret, name: bad}]`))
	refused(g, err, "replicaCount")
	noSecret(err)

	g.Expect(c.Create(ctx, nginx("mine", `[{kind: Secret, name: mine}, {kind: Secret, name: mine, valuesKey: conf, targetPath: serverBlock},
{kind: Secret, name: absent, optional: true}]`))).To(Succeed(), "a Secret the tenant can get, and an optional missing one")
}

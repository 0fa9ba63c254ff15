package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/extensions/internal/cronscaler"
	"github.com/acme/platform-operator/internal/devtools/testenv"
	"github.com/acme/platform-operator/internal/operator/claims"
	"github.com/acme/platform-operator/internal/operator/release"
)

// The integration tests run the webhook as the sidecar does, in a manager
// of its own as the shipped ServiceAccount, behind the
// ValidatingWebhookConfiguration of config/webhook
// installed on a real API server (envtest rewrites its clientConfig to
// this process and issues a certificate for it). Every refusal is asserted
// on what a client of the API server gets back from a create or update.
var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	// The watches file names its charts relative to the repository root,
	// as the image's working directory does.
	if err := os.Chdir(filepath.Join("..", "..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env = testenv.StartWithWebhooks([]string{filepath.Join("config", "webhook", "manifests.yaml")},
		filepath.Join("config", "crd", "bases"))
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(autoscalingv1alpha1.AddToScheme(s))
	return s
}

// webhookOptions are the options of a webhook served where envtest's
// configuration calls it, with envtest's certificate.
func webhookOptions() Options {
	o := DefaultOptions()
	o.Port = env.Webhooks.LocalServingPort
	o.Host = env.Webhooks.LocalServingHost
	o.CertDir = env.Webhooks.LocalServingCertDir
	o.Certs = CertsProvided
	o.ReleaseNamespace = "platform-operator-system"
	return o
}

// operatorUser is the shipped ServiceAccount, whom the webhook runs as.
const operatorUser = "system:serviceaccount:platform-operator-system:platform-operator-controller-manager"

// asOperator grants the operator's user the shipped ClusterRole
// (config/rbac/role.yaml) and returns a config that impersonates it, so
// that a permission the webhook lacks fails the tests.
func asOperator(t *testing.T) *rest.Config {
	t.Helper()
	g := NewWithT(t)
	c := adminClient(t)
	data, err := os.ReadFile(filepath.Join("config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.UnmarshalStrict(data, role)).To(Succeed())
	role.Name = "admission-test-operator"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: operatorUser}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := c.Create(t.Context(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Require(t))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: operatorUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	return cfg
}

// runWebhook runs the webhook with o in a manager of its own, as the
// sidecar does, as the shipped ServiceAccount, until the returned function
// is called.
func runWebhook(t *testing.T, o Options) (stop func()) {
	t.Helper()
	return runWebhookWith(t, o, ctrl.Options{})
}

// runWebhookWith is runWebhook with further manager options (leader
// election).
func runWebhookWith(t *testing.T, o Options, mo ctrl.Options) (stop func()) {
	t.Helper()
	g := NewWithT(t)
	mo.Scheme = testScheme()
	mo.Metrics = metricsserver.Options{BindAddress: "0"}
	mo.HealthProbeBindAddress = "0"
	mgr, err := ctrl.NewManager(asOperator(t), mo)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cronscaler.IndexFields(t.Context(), mgr.GetFieldIndexer())).To(Succeed())
	g.Expect(SetupWithManager(mgr, o)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	}
}

// startWebhook runs the webhook with envtest's certificate; it returns
// once a create of a fresh resource goes through it.
func startWebhook(t *testing.T) (stop func()) {
	t.Helper()
	return startWebhookWith(t, webhookOptions())
}

// startWebhookWith is startWebhook with options o (another watches file).
func startWebhookWith(t *testing.T, o Options) (stop func()) {
	t.Helper()
	g := NewWithT(t)
	stop = runWebhook(t, o)
	c := adminClient(t)
	ns := newNamespace(t, c)
	g.Eventually(func() error {
		probe := obj(ns, "Nginx", fmt.Sprintf("probe-%d", time.Now().UnixNano()), nil)
		if err := c.Create(t.Context(), probe); err != nil {
			return err
		}
		return c.Delete(t.Context(), probe)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return stop
}

func adminClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Require(t), client.Options{Scheme: testScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "adm-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

var kinds = map[string]string{
	"Nginx":           "web.acme.com/v1alpha1",
	"WebApp":          "web.acme.com/v1alpha1",
	"NamespaceTenant": "tenancy.acme.com/v1alpha1",
	"CronScaler":      "autoscaling.acme.com/v1alpha1",
}

// obj is a custom resource of kind with spec given as YAML (nil: empty).
func obj(ns, kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kinds[kind], "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{},
	}}
	if ns != "" && kind != "NamespaceTenant" {
		u.SetNamespace(ns)
	}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

func spec(t *testing.T, y string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// refused asserts that err is the webhook's refusal and contains every
// part of want.
func refused(g Gomega, err error, want ...string) {
	g.ExpectWithOffset(1, err).To(HaveOccurred())
	g.ExpectWithOffset(1, err.Error()).To(ContainSubstring(`admission webhook "`))
	g.ExpectWithOffset(1, err.Error()).To(ContainSubstring("denied the request"))
	for _, w := range want {
		g.ExpectWithOffset(1, err.Error()).To(ContainSubstring(w))
	}
}

func TestWebhookRefusesAtApply(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	defer startWebhook(t)()
	ctx := t.Context()
	ns := newNamespace(t, c)

	t.Run("a release name another kind holds", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Create(ctx, obj(ns, "Nginx", "shop", nil))).To(Succeed())
		err := c.Create(ctx, obj(ns, "WebApp", "shop", spec(t, `{deploymentTier: dev, webAppImage: "app:1", webAppHostname: shop.example.com}`)))
		refused(g, err, "metadata.name", "release shop in namespace "+ns+" belongs to Nginx "+ns+"/shop", "rename this WebApp")
	})

	t.Run("a release installed by hand", func(t *testing.T) {
		g := NewWithT(t)
		record := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1.manual.v1",
				Labels: map[string]string{"owner": "helm", "name": "manual", "version": "1", "status": "deployed"}},
			Type: "helm.sh/release.v1",
			Data: map[string][]byte{"release": []byte("x")},
		}
		g.Expect(c.Create(ctx, record)).To(Succeed())
		refused(g, c.Create(ctx, obj(ns, "Nginx", "manual", nil)),
			"release manual in namespace "+ns+" was not installed by this operator")
	})

	t.Run("a spec the chart does not render with", func(t *testing.T) {
		g := NewWithT(t)
		refused(g, c.Create(ctx, obj(ns, "Nginx", "same-ports", spec(t, `{containerPort: 8081, statusPort: 8081}`))),
			"spec: Invalid value", "containerPort and statusPort must differ")
		refused(g, c.Create(ctx, obj(ns, "Nginx", "hpa", spec(t, `{autoscaling: {enabled: true, minReplicas: 5, maxReplicas: 2}}`))),
			"autoscaling.maxReplicas must not be lower than autoscaling.minReplicas")
	})

	t.Run("an edit that breaks the chart; an edit of metadata only", func(t *testing.T) {
		g := NewWithT(t)
		web := obj(ns, "Nginx", "edited", nil)
		g.Expect(c.Create(ctx, web)).To(Succeed())
		broken := web.DeepCopy()
		g.Expect(unstructured.SetNestedField(broken.Object, int64(8081), "spec", "containerPort")).To(Succeed())
		refused(g, c.Update(ctx, broken), "containerPort and statusPort must differ")
		web.SetLabels(map[string]string{"team": "a"})
		g.Expect(c.Update(ctx, web)).To(Succeed())
	})

	t.Run("a second CronScaler of a target; a target an HPA scales", func(t *testing.T) {
		g := NewWithT(t)
		job := `{scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %s}, jobs: [{name: day, schedule: "0 8 * * *", replicas: 2}]}`
		g.Expect(c.Create(ctx, obj(ns, "CronScaler", "first", spec(t, fmt.Sprintf(job, "api"))))).To(Succeed())
		g.Eventually(func(g Gomega) {
			refused(g, c.Create(ctx, obj(ns, "CronScaler", "second", spec(t, fmt.Sprintf(job, "api")))),
				"spec.scaleTargetRef", "Deployment api is already scaled by CronScaler "+ns+"/first")
		}).WithTimeout(10 * time.Second).Should(Succeed())

		hpa := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(`{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: worker},
  spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}, maxReplicas: 3,
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]}}`), &hpa.Object)).To(Succeed())
		hpa.SetNamespace(ns)
		g.Expect(c.Create(ctx, hpa)).To(Succeed())
		g.Eventually(func(g Gomega) {
			refused(g, c.Create(ctx, obj(ns, "CronScaler", "worker", spec(t, fmt.Sprintf(job, "worker")))),
				"spec.scaleTargetRef", "HorizontalPodAutoscaler "+ns+"/worker")
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	t.Run("a tenant namespace another tenant claims, or that exists", func(t *testing.T) {
		g := NewWithT(t)
		tenant := `{namespaceName: %s, adminUsername: sam, deploymentTier: dev}`
		team := "team-" + ns
		g.Expect(c.Create(ctx, obj("", "NamespaceTenant", "t1-"+ns, spec(t, fmt.Sprintf(tenant, team))))).To(Succeed())
		g.Eventually(func(g Gomega) {
			refused(g, c.Create(ctx, obj("", "NamespaceTenant", "t2-"+ns, spec(t, fmt.Sprintf(tenant, team)))),
				"spec.namespaceName", fmt.Sprintf("namespace %q is claimed by NamespaceTenant t1-%s", team, ns))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		refused(g, c.Create(ctx, obj("", "NamespaceTenant", "t3-"+ns, spec(t, fmt.Sprintf(tenant, ns)))),
			fmt.Sprintf("namespace %q already exists and was not created by a NamespaceTenant", ns))
	})

	t.Run("an object another release or nobody holds", func(t *testing.T) {
		g := NewWithT(t)
		// Nginx blog's release, as the runtime leaves it: a record with its
		// owner, and its objects annotated by Helm.
		heldBy(t, c, ns, "blog", "Nginx", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "blog-nginx"}})
		refused(g, c.Create(ctx, obj(ns, "WebApp", "blog-nginx", spec(t, `{deploymentTier: dev, webAppImage: "app:1", webAppHostname: blog.example.com}`))),
			"metadata.name: Forbidden", "ConfigMap "+ns+"/blog-nginx belongs to Nginx "+ns+"/blog; rename this WebApp")
		refused(g, c.Create(ctx, obj(ns, "Nginx", "thief", spec(t, `{fullnameOverride: blog-nginx}`))),
			"spec.fullnameOverride: Forbidden", "ConfigMap "+ns+"/blog-nginx belongs to Nginx "+ns+"/blog; choose another spec.fullnameOverride")
		g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "loose-nginx"}})).To(Succeed())
		refused(g, c.Create(ctx, obj(ns, "Nginx", "loose", nil)),
			"ConfigMap "+ns+"/loose-nginx exists and belongs to no release of this operator; rename this Nginx, or remove that object")
	})

	t.Run("a host another tenant serves; a host kept across edits", func(t *testing.T) {
		g := NewWithT(t)
		other, third := newNamespace(t, c), newNamespace(t, c)
		webapp := `{deploymentTier: dev, webAppImage: "app:%s", webAppHostname: %s}`
		// WebApp pay of another tenant serves pay.example.com.
		heldBy(t, c, other, "pay", "WebApp", ingress("pay", "pay.example.com"))
		g.Eventually(func(g Gomega) {
			refused(g, c.Create(ctx, obj(ns, "WebApp", "pay", spec(t, fmt.Sprintf(webapp, "1", "pay.example.com")))),
				"spec.webAppHostname: Forbidden", "host pay.example.com is served by Ingress "+other+"/pay of WebApp "+other+"/pay already; choose another spec.webAppHostname")
		}).WithTimeout(10 * time.Second).Should(Succeed())
		// Any Ingress in another namespace, ours or not.
		hand := ingress("by-hand", "hand.example.com")
		hand.Namespace = third
		g.Expect(c.Create(ctx, hand)).To(Succeed())
		g.Eventually(func(g Gomega) {
			refused(g, c.Create(ctx, obj(ns, "WebApp", "hand", spec(t, fmt.Sprintf(webapp, "1", "hand.example.com")))),
				"host hand.example.com is served by Ingress "+third+"/by-hand already")
		}).WithTimeout(10 * time.Second).Should(Succeed())

		// A WebApp keeps its own host across edits; another of ours in the
		// same namespace cannot take it.
		shop := obj(ns, "WebApp", "shop-a", spec(t, fmt.Sprintf(webapp, "1", "shop.example.com")))
		g.Expect(c.Create(ctx, shop)).To(Succeed())
		heldBy(t, c, ns, "shop-a", "WebApp", ingress("shop-a", "shop.example.com"))
		g.Eventually(func(g Gomega) {
			refused(g, c.Create(ctx, obj(ns, "WebApp", "shop-b", spec(t, fmt.Sprintf(webapp, "1", "shop.example.com")))),
				"host shop.example.com is served by Ingress "+ns+"/shop-a of WebApp "+ns+"/shop-a already")
		}).WithTimeout(10 * time.Second).Should(Succeed())
		g.Expect(unstructured.SetNestedField(shop.Object, "app:2", "spec", "webAppImage")).To(Succeed())
		g.Expect(c.Update(ctx, shop)).To(Succeed(), "an edit that keeps its own host passes")
	})

	t.Run("a v1beta1 WebApp is checked as the v1alpha1 one it is stored as", func(t *testing.T) {
		g := NewWithT(t)
		convertWebAppsHere(t, c)
		other := newNamespace(t, c)
		heldBy(t, c, other, "mail", "WebApp", ingress("mail", "mail.example.com"))
		beta := func(name, host string) *unstructured.Unstructured {
			u := obj(ns, "WebApp", name, spec(t, `{deploymentTier: dev, webAppImage: "app:1", hostname: `+host+`}`))
			u.SetAPIVersion("web.acme.com/v1beta1")
			return u
		}
		// The API server converts the v1beta1 create to v1alpha1 for the
		// webhook (matchPolicy Equivalent): the message names the field
		// as v1alpha1 does.
		g.Eventually(func(g Gomega) {
			refused(g, c.Create(ctx, beta("mail", "mail.example.com")),
				"spec.webAppHostname: Forbidden", "host mail.example.com is served by Ingress "+other+"/mail of WebApp "+other+"/mail already")
		}).WithTimeout(10 * time.Second).Should(Succeed())
		g.Expect(c.Create(ctx, beta("post", "post.example.com"))).To(Succeed())
		stored := obj(ns, "WebApp", "post", nil)
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(stored), stored)).To(Succeed())
		g.Expect(stored.Object["spec"]).To(HaveKeyWithValue("webAppHostname", "post.example.com"))
		g.Expect(stored.Object["spec"]).NotTo(HaveKey("hostname"))
	})

	g.Expect(ctx.Err()).NotTo(HaveOccurred())
}

// ingress is an Ingress serving host.
func ingress(name, host string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: host}},
			TLS:   []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: name + "-tls"}},
		},
	}
}

// heldBy creates what a release name of a resource of kind in ns leaves
// behind: its record, labelled with its owner, and o (in ns) annotated by
// Helm as one of its objects.
func heldBy(t *testing.T, c client.Client, ns, name, kind string, o client.Object) {
	t.Helper()
	owner := release.Owner{GroupKind: schema.FromAPIVersionAndKind(kinds[kind], kind).GroupKind(), Namespace: ns, Name: name, UID: "uid-" + types.UID(name)}
	labels := owner.Labels()
	labels["owner"], labels["name"], labels["version"], labels["status"] = "helm", name, "1", "deployed"
	record := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1." + name + ".v1", Labels: labels},
		Type:       "helm.sh/release.v1",
		Data:       map[string][]byte{"release": []byte("x")},
	}
	o.SetNamespace(ns)
	o.SetAnnotations(map[string]string{claims.ReleaseNameAnnotation: name, claims.ReleaseNamespaceAnnotation: ns})
	for _, obj := range []client.Object{record, o} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWebhookDown: with the webhook stopped, creates and spec edits of our
// kinds fail closed (failurePolicy Fail), while deletes and edits that keep
// the spec go through: the configuration never sends those.
func TestWebhookDown(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	stop := startWebhook(t)
	ctx := t.Context()
	ns := newNamespace(t, c)
	web := obj(ns, "Nginx", "web", nil)
	g.Expect(c.Create(ctx, web)).To(Succeed())
	stop()

	err := c.Create(ctx, obj(ns, "Nginx", "other", nil))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`failed calling webhook "vnginx.web.acme.com"`))
	edited := web.DeepCopy()
	g.Expect(unstructured.SetNestedField(edited.Object, int64(3), "spec", "replicaCount")).To(Succeed())
	g.Expect(c.Update(ctx, edited)).To(MatchError(ContainSubstring("failed calling webhook")))

	web.SetAnnotations(map[string]string{"note": "kept"})
	g.Expect(c.Update(ctx, web)).To(Succeed())
	g.Expect(c.Delete(ctx, web)).To(Succeed())
	// Other kinds are not the webhook's business.
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"}})).To(Succeed())
}

// TestSelfIssuedCertificateRotates runs the webhook as config/default
// does (--admission-certs=self) with a one-minute certificate: the sidecar
// issues a CA and serving certificate into its Secret, puts the CA into
// the configuration's caBundle, serves the certificate, and renews it
// before it expires; creates go through the API server all along.
func TestSelfIssuedCertificateRotates(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)

	// The caBundle envtest installed, put back for the other tests.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, vwc)).To(Succeed())
	original := vwc.DeepCopy()
	t.Cleanup(func() {
		current := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(original), current); err != nil {
			t.Error(err)
			return
		}
		for i := range current.Webhooks {
			current.Webhooks[i].ClientConfig.CABundle = original.Webhooks[i].ClientConfig.CABundle
		}
		if err := c.Update(context.Background(), current); err != nil {
			t.Error(err)
		}
	})

	// The WebApp CRD converts through this server too; its caBundle is
	// envtest's CA until the rotator puts in its own. envtest's goes back
	// for the other tests.
	convertWebAppsHere(t, c)
	t.Cleanup(func() { pointWebAppConversion(t, c) })

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook-server-cert"}}
	g.Expect(c.Create(ctx, secret)).To(Succeed())
	o := webhookOptions()
	o.CertDir = t.TempDir()
	o.Certs = CertsSelf
	o.Namespace = ns
	o.Secret = secret.Name
	o.Configuration = original.Name
	o.ExtraDNSNames = []string{"localhost"}
	o.CertValidity = time.Minute
	defer runWebhook(t, o)()

	served := func() []byte {
		conn, err := tls.Dial("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the served certificate
		if err != nil {
			return nil
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Raw
	}
	admitted := func(g Gomega) {
		web := obj(ns, "Nginx", fmt.Sprintf("web-%d", time.Now().UnixNano()), nil)
		g.Expect(c.Create(ctx, web)).To(Succeed())
	}

	var first []byte
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		g.Expect(secret.Data).To(HaveKey("ca.crt"))
		first = served()
		g.Expect(first).NotTo(BeNil(), "the server does not serve yet")
		admitted(g)
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(vwc), vwc)).To(Succeed())
	for _, wh := range vwc.Webhooks {
		g.Expect(wh.ClientConfig.CABundle).To(Equal(secret.Data["ca.crt"]), wh.Name)
	}
	// The same CA goes into the conversion caBundle of the WebApp CRD
	// (the kinds file declares its v1beta1): a WebApp reads as v1beta1
	// through the server's self-issued certificate.
	webapp := obj(ns, "WebApp", "conv", spec(t, `{deploymentTier: dev, webAppImage: "app:1", webAppHostname: conv.example.com}`))
	g.Expect(c.Create(ctx, webapp)).To(Succeed())
	g.Eventually(func(g Gomega) {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		g.Expect(c.Get(ctx, client.ObjectKey{Name: "webapps.web.acme.com"}, crd)).To(Succeed())
		caBundle, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		g.Expect(caBundle).To(Equal(base64.StdEncoding.EncodeToString(secret.Data["ca.crt"])))
		beta := &unstructured.Unstructured{}
		beta.SetGroupVersionKind(schema.GroupVersionKind{Group: "web.acme.com", Version: "v1beta1", Kind: "WebApp"})
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(webapp), beta)).To(Succeed())
		g.Expect(beta.Object["spec"]).To(HaveKeyWithValue("hostname", "conv.example.com"))
	}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	firstCert, err := x509.ParseCertificate(first)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("self-issued certificate served, valid until %s", firstCert.NotAfter.Format(time.TimeOnly))

	// Renewed when a quarter of its life is left, before it expires.
	g.Eventually(func(g Gomega) {
		now := served()
		g.Expect(now).NotTo(BeNil())
		g.Expect(now).NotTo(Equal(first), "still the first certificate")
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	g.Expect(time.Now()).To(BeTemporally("<", firstCert.NotAfter), "renewed only after the first expired")
	t.Logf("renewed at %s", time.Now().Format(time.TimeOnly))
	g.Eventually(admitted).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestSelfIssuedCertificateStandby: a second replica, standing by on the
// sidecar's Lease, issues nothing but serves the certificate the leader
// keeps in the Secret.
//
// It runs in a process of its own: cert-controller registers its
// controller under a fixed name, once per process.
func TestSelfIssuedCertificateStandby(t *testing.T) {
	if os.Getenv(standbyChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSelfIssuedCertificateStandby$", "-test.v")
		cmd.Env = append(os.Environ(), standbyChild+"=1")
		cmd.Dir = filepath.Join("extensions", "internal", "admission") // TestMain moved to the root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	g := NewWithT(t)
	c := adminClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)
	// The leader's certificate, as the rotator of the leading replica
	// leaves it in the Secret.
	o := webhookOptions()
	o.Certs = CertsSelf
	o.Namespace = ns
	o.Secret = "webhook-server-cert"
	o.Configuration = "validating-webhook-configuration"
	leaderDir := t.TempDir()
	o.CertDir = leaderDir
	o.ExtraDNSNames = []string{"localhost"}
	// A Lease held by a leader that is not a manager of this test, so
	// both managers below stand by.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "adm-test"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("elsewhere"), LeaseDurationSeconds: ptr.To(int32(3600)),
			RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	g.Expect(c.Create(ctx, lease)).To(Succeed())
	port, err := freePort()
	g.Expect(err).NotTo(HaveOccurred())
	o.Port = port
	// The Secret a leader wrote: a self-signed pair is enough to serve.
	crt, key := selfSigned(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.Secret},
		Data: map[string][]byte{"ca.crt": crt, "tls.crt": crt, "tls.key": key}}
	defer runWebhookWith(t, o, ctrl.Options{LeaderElection: true, LeaderElectionNamespace: ns, LeaderElectionID: "adm-test"})()
	g.Consistently(func() error {
		_, err := os.Stat(filepath.Join(leaderDir, "tls.crt"))
		return err
	}).WithTimeout(2*time.Second).ShouldNot(Succeed(), "a standby issues nothing while there is no certificate")
	g.Expect(c.Create(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		conn, err := tls.Dial("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the served certificate
		g.Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		block, _ := pem.Decode(crt)
		g.Expect(conn.ConnectionState().PeerCertificates[0].Raw).To(Equal(block.Bytes))
	}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "the standby serves the Secret's certificate")
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	g.Expect(secret.Data["tls.crt"]).To(Equal(crt), "the standby did not rotate the Secret")
}

// standbyChild marks the process TestSelfIssuedCertificateStandby runs in.
const standbyChild = "ADMISSION_STANDBY_CHILD"

// freePort returns a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// selfSigned returns a PEM certificate for 127.0.0.1 and localhost, and its
// key.
func selfSigned(t *testing.T) (crt, key []byte) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// TestSecretCertificateFollowsCABundle runs the webhook as the OLM bundle
// does (--admission-certs=secret): it serves the certificate of the Secret,
// read from the API server, and when the Secret gets a new one it goes on
// serving the old until the caBundle of the webhooks calling the Service
// trusts the new.
func TestSecretCertificateFollowsCABundle(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)
	port, err := freePort()
	g.Expect(err).NotTo(HaveOccurred())
	o := webhookOptions()
	o.Port = port
	o.Certs = CertsSecret
	o.Namespace = ns
	o.Secret = "service-cert"
	o.Service = "operator-service"
	o.CertDir = t.TempDir() // nothing is read from it

	oldCrt, oldKey := selfSigned(t)
	newCrt, newKey := selfSigned(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.Secret},
		Data: map[string][]byte{"tls.crt": oldCrt, "tls.key": oldKey}}
	g.Expect(c.Create(ctx, secret)).To(Succeed())
	// A configuration calling the Service, as OLM installs it; it selects
	// no object, so the API server never calls it here.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-certs-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "vnginx.web.acme.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: o.Service, Path: ptr.To(Path)},
				CABundle: oldCrt,
			},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"never": "selected"}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	g.Expect(c.Create(ctx, vwc)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), vwc) })
	defer runWebhook(t, o)()

	served := func(g Gomega) []byte {
		conn, err := tls.Dial("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the served certificate
		g.Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: conn.ConnectionState().PeerCertificates[0].Raw})
	}
	g.Eventually(served).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(Equal(oldCrt), "the Secret's certificate")

	// The Secret first, as OLM writes it: the caBundle does not trust the
	// new certificate yet, so the old one stays.
	secret.Data = map[string][]byte{"tls.crt": newCrt, "tls.key": newKey}
	g.Expect(c.Update(ctx, secret)).To(Succeed())
	g.Consistently(served).WithTimeout(2*time.Second).WithPolling(100*time.Millisecond).Should(Equal(oldCrt),
		"the certificate the caBundle trusts")

	// Then the caBundle: the new certificate is served.
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(vwc), vwc)).To(Succeed())
	vwc.Webhooks[0].ClientConfig.CABundle = newCrt
	g.Expect(c.Update(ctx, vwc)).To(Succeed())
	g.Eventually(served).WithTimeout(5*time.Second).WithPolling(50*time.Millisecond).Should(Equal(newCrt),
		"the certificate the new caBundle trusts")

	// Without any configuration calling the Service, the newest.
	g.Expect(c.Delete(ctx, vwc)).To(Succeed())
	g.Consistently(served).WithTimeout(time.Second).WithPolling(100 * time.Millisecond).Should(Equal(newCrt))
}

// convertWebAppsHere points the WebApp CRD's conversion webhook at the
// webhook server of these tests (pointWebAppConversion), and waits until
// the API server converts through it.
func convertWebAppsHere(t *testing.T, c client.Client) {
	t.Helper()
	pointWebAppConversion(t, c)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "web.acme.com", Version: "v1beta1", Kind: "WebAppList"})
	NewWithT(t).Eventually(func() error { return c.List(t.Context(), list) }).WithTimeout(10 * time.Second).Should(Succeed())
}

// pointWebAppConversion points the WebApp CRD's conversion webhook at the
// webhook server of these tests, with envtest's address and CA.
func pointWebAppConversion(t *testing.T, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	url := "https://" + net.JoinHostPort(env.Webhooks.LocalServingHostExternalName, strconv.Itoa(env.Webhooks.LocalServingPort)) + "/convert"
	// envtest installs the CRD without its conversion (strategy None, as
	// for every CRD whose types are not convertible in its scheme).
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"conversionReviewVersions": []string{"v1"},
			"clientConfig":             map[string]any{"url": url, "caBundle": env.Webhooks.LocalServingCAData},
		},
	}}})
	g.Expect(err).NotTo(HaveOccurred())
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	crd.SetName("webapps.web.acme.com")
	// Not t.Context(): it also runs in a cleanup, once that is done.
	g.Expect(c.Patch(context.Background(), crd, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

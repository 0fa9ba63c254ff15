package real

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/realnode"
)

// The NetworkPolicy tests open TCP connections from client Pods (bash's
// /dev/tcp in the nginx stand-in) to Services and Pods on the real node,
// whose NetworkPolicies kube-router enforces. A connection a policy drops is
// refused at once (kube-router rejects), so every check is quick; each one
// polls because kube-router applies a new policy or Pod asynchronously.

// expectDial waits until a connection from pod in ns to host:port
// succeeds (open) or fails (!open).
func expectDial(t *testing.T, ns, pod, host string, port int, open bool) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		out, err := cluster.Dial(ns, pod, host, port)
		if open {
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring("connected"))
		} else {
			g.Expect(err).To(HaveOccurred(), "connection from %s/%s to %s:%d: %s", ns, pod, host, port, out)
		}
	}).WithTimeout(45*time.Second).WithPolling(time.Second).Should(Succeed(),
		"from %s/%s to %s:%d, want open=%v", ns, pod, host, port, open)
	verb := "refused"
	if open {
		verb = "connects"
	}
	t.Logf("%s/%s -> %s:%d %s", ns, pod, host, port, verb)
}

// webServer runs the test app (it answers /healthz without a database) as
// Pod web in ns behind Service web (port 80), and returns the Pod's IP.
func webServer(t *testing.T, ns string) string {
	t.Helper()
	cluster.Apply(t, ns, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 10001, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: app
    image: %s
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`, realnode.AppImage))
	if out, err := cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/web", "--timeout=120s"); err != nil {
		t.Fatalf("web pod in %s: %v\n%s", ns, err, out)
	}
	pod := &corev1.Pod{}
	NewWithT(t).Expect(cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, pod)).To(Succeed())
	return pod.Status.PodIP
}

func tenantManifest(name, ns, extra string) string {
	return fmt.Sprintf(`apiVersion: tenancy.acme.com/v1alpha1
kind: NamespaceTenant
metadata:
  name: %s
spec:
  namespaceName: %s
  adminUsername: sam
  deploymentTier: dev
%s`, name, ns, extra)
}

// TestTenantIsolationOnTheWire: two NamespaceTenants cannot open a
// connection to each other's Services or Pods; inside a tenant Pods reach
// each other by their DNS names; a tenant's Pods reach the outside (a
// Service of an ordinary namespace, the API server); a namespace the
// tenant allows gets in; and once a tenant's policies are gone the
// connection it refused goes through, so the refusals are the policies'
// doing, not the network's.
func TestTenantIsolationOnTheWire(t *testing.T) {
	const (
		a, b, outside = "real-np-a", "real-np-b", "real-np-outside"
	)
	svc := func(ns string) string { return "web." + ns + ".svc.cluster.local" }
	cluster.Apply(t, "", tenantManifest("real-np-a", a, ""))
	cluster.Apply(t, "", tenantManifest("real-np-b", b, ""))
	for _, nt := range []string{"real-np-a", "real-np-b"} {
		if out, err := cluster.Kubectl("wait", "--for=condition=Ready", "namespacetenant/"+nt, "--timeout=120s"); err != nil {
			t.Fatalf("tenant %s: %v\n%s", nt, err, out)
		}
	}
	t.Cleanup(func() {
		_, _ = cluster.Kubectl("delete", "namespacetenant", "real-np-a", "real-np-b", "--wait=true", "--timeout=180s")
	})
	cluster.CreateNamespace(t, outside)
	ips := map[string]string{}
	for _, ns := range []string{a, b, outside} {
		ips[ns] = webServer(t, ns)
		cluster.ClientPod(t, ns, realnode.NginxImage)
	}

	t.Log("inside a tenant: Pods reach each other, by Service name (cluster DNS) and by Pod IP")
	expectDial(t, a, "client", svc(a), 80, true)
	expectDial(t, a, "client", ips[a], 8080, true)
	expectDial(t, b, "client", svc(b), 80, true)

	t.Log("across tenants: refused both ways, to the Service and to the Pod")
	expectDial(t, a, "client", svc(b), 80, false)
	expectDial(t, a, "client", ips[b], 8080, false)
	expectDial(t, b, "client", svc(a), 80, false)
	expectDial(t, b, "client", ips[a], 8080, false)

	t.Log("out of a tenant: an ordinary namespace's Service and the API server are reachable")
	expectDial(t, outside, "client", svc(outside), 80, true)
	expectDial(t, a, "client", svc(outside), 80, true)
	expectDial(t, a, "client", "kubernetes.default.svc.cluster.local", 443, true)

	t.Log("into a tenant: refused from an ordinary namespace until the tenant allows it")
	expectDial(t, outside, "client", svc(a), 80, false)
	cluster.Apply(t, "", tenantManifest("real-np-a", a, "  networkPolicy: {allowedNamespaces: ["+outside+"]}\n"))
	expectDial(t, outside, "client", svc(a), 80, true)
	expectDial(t, b, "client", svc(a), 80, false)

	t.Log("tenant B without its policies: A's connection to B goes through")
	cluster.Apply(t, "", tenantManifest("real-np-b", b, "  networkPolicy: {enabled: false}\n"))
	NewWithT(t).Eventually(func(g Gomega) {
		var nps networkingv1.NetworkPolicyList
		g.Expect(cluster.Client.List(context.Background(), &nps, client.InNamespace(b))).To(Succeed())
		g.Expect(nps.Items).To(BeEmpty())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the operator removes B's policies")
	expectDial(t, a, "client", svc(b), 80, true)
	expectDial(t, a, "client", ips[b], 8080, true)

	t.Log("and with them back, refused again")
	cluster.Apply(t, "", tenantManifest("real-np-b", b, ""))
	expectDial(t, a, "client", svc(b), 80, false)
}

// TestWebAppDatabaseOnlyFromItsApp: the WebApp's app connects to its
// database (it answers "connected"), another Pod of the same namespace is
// refused, and a Pod carrying a label of database.networkPolicy's
// allowedPodSelectors gets in.
func TestWebAppDatabaseOnlyFromItsApp(t *testing.T) {
	g := NewWithT(t)
	const ns, name = "real-np-webapp", "ledger"
	cluster.CreateNamespace(t, ns)
	cluster.ClientPod(t, ns, realnode.NginxImage)
	cluster.NamedClientPod(t, ns, "backup", realnode.NginxImage, map[string]string{"role": "db-backup"})
	cluster.Apply(t, ns, webAppWithDBPeers(name, "[]"))
	cluster.ExpectServing(t, ns, name, 1)
	host := name + "." + ns + ".svc.cluster.local"
	db := name + "-db." + ns + ".svc.cluster.local"
	out, err := cluster.HTTPGet(ns, host, 80, "/")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("connected to app as app on " + name + "-db"))
	t.Log("the app connects to its database")

	expectDial(t, ns, "client", db, 5432, false)
	expectDial(t, ns, "backup", db, 5432, false)

	t.Log("allowedPodSelectors lets the backup Pod in, and no one else")
	cluster.Apply(t, ns, webAppWithDBPeers(name, `[{role: db-backup}]`))
	expectDial(t, ns, "backup", db, 5432, true)
	expectDial(t, ns, "client", db, 5432, false)
	out, err = cluster.HTTPGet(ns, host, 80, "/")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("connected to app"))
}

// webAppWithDBPeers is realnode.WebAppManifest (which ends in its
// database block) with database.networkPolicy.allowedPodSelectors set to
// peers (YAML).
func webAppWithDBPeers(name, peers string) string {
	return realnode.WebAppManifest(name, 1) + "    networkPolicy: {allowedPodSelectors: " + peers + "}\n"
}

// TestNginxNetworkPolicyOnTheWire: an Nginx with its NetworkPolicy admits
// on its http port what the chart documents (Pods of its own namespace,
// Pods of allowedNamespaces, Pods matching allowedPodSelectors in any
// namespace) and refuses every other Pod.
func TestNginxNetworkPolicyOnTheWire(t *testing.T) {
	const ns, friends, others = "real-np-nginx", "real-np-friends", "real-np-others"
	for _, n := range []string{ns, friends, others} {
		cluster.CreateNamespace(t, n)
		cluster.ClientPod(t, n, realnode.NginxImage)
	}
	cluster.NamedClientPod(t, others, "frontend", realnode.NginxImage, map[string]string{"role": "frontend"})
	cluster.Apply(t, ns, nginxManifest("guarded", "guarded")+fmt.Sprintf(
		"  networkPolicy: {enabled: true, allowedNamespaces: [%s], allowedPodSelectors: [{role: frontend}]}\n", friends))
	if out, err := cluster.Kubectl("wait", "-n", ns, "--for=condition=Ready", "nginx/guarded", "--timeout=180s"); err != nil {
		t.Fatalf("nginx: %v\n%s", err, out)
	}
	host := "guarded-nginx." + ns + ".svc.cluster.local"
	expectDial(t, ns, "client", host, 80, true)
	expectDial(t, friends, "client", host, 80, true)
	expectDial(t, others, "frontend", host, 80, true)
	expectDial(t, others, "client", host, 80, false)
}

// TestChartPoliciesHoldInsideATenant: inside a NamespaceTenant's namespace,
// where the tenant admits every Pod of the namespace to every other, a
// chart's narrower policy still holds. A WebApp's app reaches its
// database, a Pod of allowedPodSelectors does, and a plain Pod of the same
// namespace is refused; that plain Pod still reaches the app and an
// ordinary Pod (same-namespace traffic to them is unchanged); a namespace
// the tenant allows reaches the app but not the database; another tenant
// reaches nothing. An Nginx with its policy admits its own namespace and
// refuses the other tenant and the namespace its policy does not list.
func TestChartPoliciesHoldInsideATenant(t *testing.T) {
	g := NewWithT(t)
	const (
		shop, other, gateway = "real-np-shop", "real-np-other", "real-np-gateway"
		app                  = "shop"
	)
	cluster.CreateNamespace(t, gateway)
	cluster.Apply(t, "", tenantManifest(shop, shop, "  networkPolicy: {allowedNamespaces: ["+gateway+"]}\n"))
	cluster.Apply(t, "", tenantManifest(other, other, ""))
	for _, nt := range []string{shop, other} {
		if out, err := cluster.Kubectl("wait", "--for=condition=Ready", "namespacetenant/"+nt, "--timeout=120s"); err != nil {
			t.Fatalf("tenant %s: %v\n%s", nt, err, out)
		}
	}
	t.Cleanup(func() {
		_, _ = cluster.Kubectl("delete", "namespacetenant", shop, other, "--wait=true", "--timeout=180s")
	})
	for _, ns := range []string{shop, other, gateway} {
		cluster.ClientPod(t, ns, realnode.NginxImage)
	}
	cluster.NamedClientPod(t, shop, "backup", realnode.NginxImage, map[string]string{"role": "db-backup"})
	webServer(t, shop)

	cluster.Apply(t, shop, webAppWithDBPeers(app, `[{role: db-backup}]`))
	cluster.ExpectServing(t, shop, app, 1)
	cluster.Apply(t, shop, nginxManifest("guarded", "guarded")+"  networkPolicy: {enabled: true}\n")
	if out, err := cluster.Kubectl("wait", "-n", shop, "--for=condition=Ready", "nginx/guarded", "--timeout=180s"); err != nil {
		t.Fatalf("nginx: %v\n%s", err, out)
	}
	svc := func(name string) string { return name + "." + shop + ".svc.cluster.local" }

	out, err := cluster.HTTPGet(shop, svc(app), 80, "/")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("connected to app as app on " + app + "-db"))
	t.Log("the app connects to its database")

	t.Log("the database: its app and allowedPodSelectors only")
	expectDial(t, shop, "backup", svc(app+"-db"), 5432, true)
	expectDial(t, shop, "client", svc(app+"-db"), 5432, false)
	expectDial(t, gateway, "client", svc(app+"-db"), 5432, false)
	expectDial(t, other, "client", svc(app+"-db"), 5432, false)

	t.Log("ordinary Pods of the tenant: the namespace and allowed namespaces reach them, other tenants do not")
	expectDial(t, shop, "client", svc(app), 80, true)
	expectDial(t, shop, "client", svc("web"), 80, true)
	expectDial(t, gateway, "client", svc(app), 80, true)
	expectDial(t, other, "client", svc(app), 80, false)
	expectDial(t, other, "client", svc("web"), 80, false)

	t.Log("an Nginx with its policy: its own namespace; not another tenant, nor a namespace only the tenant allows")
	expectDial(t, shop, "client", svc("guarded-nginx"), 80, true)
	expectDial(t, other, "client", svc("guarded-nginx"), 80, false)
	expectDial(t, gateway, "client", svc("guarded-nginx"), 80, false)
}

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/claims"
	"github.com/acme/platform-operator/test/testkit"
)

// The objects of Nginx blog (helm-charts/nginx) are named blog-nginx; a
// WebApp named blog-nginx renders objects of that name too.
const (
	blogNginx = `apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata: {name: blog}
spec: {replicaCount: 1}
`
	webAppBlogNginx = `apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata: {name: blog-nginx}
spec: {deploymentTier: dev, webAppImage: "registry.acme.com/blog/blog:v1", webAppHostname: blog.acme.com}
`
	nginxThief = `apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata: {name: thief}
spec: {fullnameOverride: blog-nginx}
`
)

// expectHeldByBlog asserts that the ConfigMap blog-nginx in ns is still
// Nginx blog's.
func expectHeldByBlog(g Gomega, ns string) {
	cm := &corev1.ConfigMap{}
	g.ExpectWithOffset(1, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "blog-nginx"}, cm)).To(Succeed())
	g.ExpectWithOffset(1, cm.Annotations).To(HaveKeyWithValue(claims.ReleaseNameAnnotation, "blog"))
}

// TestObjectClashRefusedByTheRuntime: without the webhook (the resource
// predates it, or it was down), a WebApp whose objects Nginx blog holds is
// refused by the runtime in the webhook's words, once and not in a retry
// loop, and claims no generated value; the Nginx keeps its objects.
func TestObjectClashRefusedByTheRuntime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "e2e-object-clash"
	env.CreateNamespace(t, ns)
	env.Apply(t, ns, blogNginx)
	expectDeployed(t, testkit.NginxGVK, ns, "blog", "InstallSuccessful")

	env.Apply(t, ns, webAppBlogNginx)
	want := "ConfigMap " + ns + "/blog-nginx belongs to Nginx " + ns + "/blog; rename this WebApp"
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, testkit.WebAppGVK, ns, "blog-nginx", "ReleaseFailed")
		g.Expect(status).To(Equal("True"))
		g.Expect(reason).To(Equal("ObjectConflict"))
		g.Expect(msg).To(ContainSubstring(want))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	// Not retried with backoff: a window later, one refusal, no failed
	// installs, and no generated database password claimed.
	time.Sleep(conflictWindow())
	msgs, count, err := env.WarningEvents(ctx, ns, "blog-nginx", "ObjectConflict")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msgs).To(ContainElement(want))
	g.Expect(count).To(BeNumerically("<=", 2), "refused once (and at most once more on a status change), not retried")
	_, failed, err := env.WarningEvents(ctx, ns, "blog-nginx", "InstallFailed")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(failed).To(BeZero())
	generated, err := env.EventsWithReason(ctx, ns, "blog-nginx", "ValueGenerated")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(generated).To(BeEmpty(), "a release that was never installed keeps no generated value")
	expectHeldByBlog(g, ns)
}

// TestRefusedAtApplyThroughMakeRun runs the README's quick start, `make
// run` (hack/run.sh), on the suite's local cluster: it registers the
// sidecar's webhook, so an object clash and a duplicate hostname are
// refused at apply, naming the holder; an edit that keeps its own host
// passes; and the webhook configuration goes when make run stops.
func TestRefusedAtApplyThroughMakeRun(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	// make run runs its own manager and sidecar, and points the WebApp
	// CRD's conversion at its own sidecar: the suite's comes back after.
	defer func() {
		if err := useSuiteConversionWebhook(); err != nil {
			t.Errorf("pointing the conversion webhook at the suite's sidecar again: %v", err)
		}
	}()
	for _, p := range []*operatorProcess{env.manager, env.extensions} {
		g.Expect(p.stop()).To(Succeed())
		defer func() {
			if err := p.start(); err != nil {
				t.Errorf("restarting the suite's %s: %v", p.name, err)
			}
		}()
	}
	run := startMakeRun(t)
	defer run.stop(t)
	g.Eventually(func() (string, error) {
		return env.Kubectl("get", "validatingwebhookconfigurations", "-o", "name")
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(ContainSubstring("platform-operator-make-run"), run.log)

	const ns = "e2e-make-run-refusals"
	env.CreateNamespace(t, ns)
	env.Apply(t, ns, blogNginx)
	expectDeployed(t, testkit.NginxGVK, ns, "blog", "InstallSuccessful")

	out, err := env.KubectlIn(webAppBlogNginx, "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(`The WebApp "blog-nginx" is invalid: metadata.name: Forbidden: ConfigMap ` + ns + `/blog-nginx belongs to Nginx ` + ns + `/blog; rename this WebApp`))
	out, err = env.KubectlIn(nginxThief, "apply", "-n", ns, "-f", "-")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(`The Nginx "thief" is invalid: spec.fullnameOverride: Forbidden: ConfigMap ` + ns + `/blog-nginx belongs to Nginx ` + ns + `/blog; choose another spec.fullnameOverride`))
	expectHeldByBlog(g, ns)

	// Two tenants, one hostname.
	const tenantA, tenantB = "e2e-make-run-tenant-a", "e2e-make-run-tenant-b"
	env.CreateNamespace(t, tenantA)
	env.CreateNamespace(t, tenantB)
	pay := `apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata: {name: pay}
spec: {deploymentTier: dev, webAppImage: "registry.acme.com/pay/pay:%s", webAppHostname: pay.acme.com}
`
	env.Apply(t, tenantA, strings.Replace(pay, "%s", "v1", 1))
	expectDeployed(t, testkit.WebAppGVK, tenantA, "pay", "InstallSuccessful")
	g.Eventually(func(g Gomega) {
		out, err := env.KubectlIn(strings.Replace(pay, "%s", "v1", 1), "apply", "-n", tenantB, "-f", "-")
		g.Expect(err).To(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring(`The WebApp "pay" is invalid: spec.webAppHostname: Forbidden: host pay.acme.com is served by Ingress ` +
			tenantA + `/pay of WebApp ` + tenantA + `/pay already; choose another spec.webAppHostname`))
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	// The holder keeps its host across an edit.
	env.Apply(t, tenantA, strings.Replace(pay, "%s", "v2", 1))

	// The refused resources were never stored.
	for _, c := range []struct{ ns, kind, name string }{{ns, "webapp", "blog-nginx"}, {ns, "nginx", "thief"}, {tenantB, "webapp", "pay"}} {
		out, err := env.Kubectl("get", c.kind, c.name, "-n", c.ns, "--ignore-not-found", "-o", "name")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(strings.TrimSpace(out)).To(BeEmpty())
	}
	for _, del := range [][]string{{"nginx", "blog", "-n", ns}, {"webapp", "pay", "-n", tenantA}} {
		out, err := env.Kubectl(append([]string{"delete", "--timeout=60s"}, del...)...)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}

	run.stop(t)
	out, err = env.Kubectl("get", "validatingwebhookconfigurations", "-o", "name")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).NotTo(ContainSubstring("platform-operator-make-run"), "make run removes its webhook when it stops")
	g.Expect(ctx.Err()).NotTo(HaveOccurred())
}

// makeRun is hack/run.sh running on the suite's cluster.
type makeRun struct {
	cmd *exec.Cmd
	// done is closed when the script has exited.
	done chan struct{}
	log  string
}

// startMakeRun starts hack/run.sh as `make run` does, on the suite's
// cluster as the local cluster it recognises (KUBECONFIG is the kubeconfig
// of LOCAL_CLUSTER_DIR), as the cluster's admin.
func startMakeRun(t *testing.T) *makeRun {
	t.Helper()
	logFile, err := os.CreateTemp("", "e2e-make-run-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "hack/run.sh")
	cmd.Dir = env.Root
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+env.Kubeconfig,
		"LOCAL_CLUSTER_DIR="+filepath.Dir(env.Kubeconfig),
		"LOCALBIN="+filepath.Join(env.Root, "bin"),
		"K8S_BIN="+filepath.Dir(env.KubectlPath),
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &makeRun{cmd: cmd, done: make(chan struct{}), log: logFile.Name()}
	go func() {
		// Interrupted, the script exits 130: its exit status says nothing.
		_ = cmd.Wait()
		_ = logFile.Close()
		close(r.done)
	}()
	return r
}

// stop presses Ctrl-C (SIGINT to the script) and waits for make run to
// finish its clean-up; a second call does nothing.
func (r *makeRun) stop(t *testing.T) {
	t.Helper()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-r.done:
	case <-time.After(90 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
		t.Errorf("make run did not stop within 90s; its log: %s", r.log)
	}
	r.cmd = nil
	if !t.Failed() {
		_ = os.Remove(r.log)
	} else {
		t.Logf("make run's log: %s", r.log)
	}
}

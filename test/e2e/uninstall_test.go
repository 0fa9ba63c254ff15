package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// uninstallLabel marks the resources TestUninstall creates: the command
// is limited to them (--selector), so that it leaves the other tests'
// resources and the shared CRDs' conversion alone.
const uninstallLabel = "e2e.acme.com/uninstall=yes"

// runUninstall runs `bin/extensions uninstall --selector=<uninstallLabel>
// args...` as make undeploy does (the admin's kubeconfig, from the
// repository's root) and returns its output and exit code.
func runUninstall(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := env.Run("", filepath.Join(env.Root, "bin", "extensions"), append([]string{"uninstall", "--selector=" + uninstallLabel}, args...)...)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out, 0
	case errors.As(err, &exit):
		return out, exit.ExitCode()
	}
	t.Fatalf("running bin/extensions uninstall: %v\n%s", err, out)
	return "", 0
}

// TestUninstall: the check that make undeploy runs first refuses while a
// WebApp and two NamespaceTenants exist, naming each; with
// --delete-resources it deletes them while the operator runs, so that
// their finalizers run (Helm releases uninstalled, tenant namespaces
// deleted), and exits 0 once they are gone.
func TestUninstall(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	const ns, webApp, tenantA, tenantB = "e2e-uninstall", "shop", "e2e-uninstall-a", "e2e-uninstall-b"
	env.CreateNamespace(t, ns)
	env.Apply(t, ns, fmt.Sprintf(`apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata:
  name: %s
  labels: {e2e.acme.com/uninstall: "yes"}
spec:
  deploymentTier: dev
  webAppImage: registry.acme.com/shop/shop:v1
  webAppHostname: uninstall.shop.acme.com
`, webApp))
	for _, name := range []string{tenantA, tenantB} {
		env.Apply(t, "", fmt.Sprintf(`apiVersion: tenancy.acme.com/v1alpha1
kind: NamespaceTenant
metadata:
  name: %s
  labels: {e2e.acme.com/uninstall: "yes"}
spec:
  namespaceName: %s-ns
  adminUsername: sam
`, name, name))
	}
	expectDeployed(t, testkit.WebAppGVK, ns, webApp, "InstallSuccessful")
	for _, name := range []string{tenantA, tenantB} {
		expectDeployed(t, testkit.NamespaceTenantGVK, "", name, "InstallSuccessful")
		// The sidecar's finalizer too, so that its clean-up is what the
		// deletion below waits for.
		g.Eventually(func(g Gomega) {
			cr, err := env.Get(ctx, testkit.NamespaceTenantGVK, "", name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cr.GetFinalizers()).To(ContainElements(tenantFinalizer, runtimeFinalizer))
		}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	}
	g.Expect(env.ReleaseRevisions(ctx, ns, webApp)).NotTo(BeEmpty())

	t.Log("without --delete-resources: refused, each resource named, nothing deleted")
	out, code := runUninstall(t)
	g.Expect(code).To(Equal(1), out)
	g.Expect(out).To(ContainSubstring("Refusing to continue: 3 resources of the operator's kinds exist."))
	g.Expect(out).To(ContainSubstring("\n  NamespaceTenant " + tenantA + "\n  NamespaceTenant " + tenantB + "\n  WebApp " + ns + "/" + webApp + "\n"))
	g.Expect(out).To(ContainSubstring("uninstall --selector=" + uninstallLabel + " --delete-resources\n"))
	g.Expect(out).To(ContainSubstring("kubectl delete webapps.v1alpha1.web.acme.com -l " + uninstallLabel + " --all-namespaces\n"))
	_, err := env.Get(ctx, testkit.WebAppGVK, ns, webApp)
	g.Expect(err).NotTo(HaveOccurred())

	t.Log("with --delete-resources: deleted, their finalizers run, exit 0 within the bound")
	started := time.Now()
	out, code = runUninstall(t, "--delete-resources", "--timeout=3m")
	g.Expect(code).To(Equal(0), out)
	took := time.Since(started)
	t.Logf("deleted and gone in %s:\n%s", took.Round(time.Millisecond), out)
	g.Expect(took).To(BeNumerically("<", 3*time.Minute+30*time.Second))
	g.Expect(out).To(ContainSubstring("Deleting 3 resources of the operator's kinds matching " + uninstallLabel))
	g.Expect(out).To(ContainSubstring("is left matching " + uninstallLabel + ".\n"))
	g.Expect(out).To(ContainSubstring("webapps.web.acme.com: conversion webhook kept: this run was limited by --selector"))

	for _, r := range []struct {
		gvk      schema.GroupVersionKind
		ns, name string
	}{{testkit.WebAppGVK, ns, webApp}, {testkit.NamespaceTenantGVK, "", tenantA}, {testkit.NamespaceTenantGVK, "", tenantB}} {
		_, err := env.Get(ctx, r.gvk, r.ns, r.name)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s %s/%s: %v", r.gvk.Kind, r.ns, r.name, err)
	}
	// The runtime's finalizer uninstalled the releases (the WebApp's
	// Deployment went with its release), the sidecar's deleted the
	// tenants' namespaces before letting them go.
	g.Expect(env.ReleaseRevisions(ctx, ns, webApp)).To(BeEmpty())
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: webApp}, &appsv1.Deployment{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the WebApp's Deployment: %v", err)
	for _, name := range []string{tenantA, tenantB} {
		g.Expect(env.ReleaseRevisions(ctx, tenantReleaseNamespace, name)).To(BeEmpty())
		err := env.Client.Get(ctx, client.ObjectKey{Name: name + "-ns"}, &corev1.Namespace{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s-ns: %v", name, err)
	}

	t.Log("the shared cluster's WebApp CRD still converts through the webhook")
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "webapps.web.acme.com"}, crd)).To(Succeed())
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	g.Expect(strategy).To(Equal(string(apiextensionsv1.WebhookConverter)))

	t.Log("run again: nothing left, exit 0")
	out, code = runUninstall(t)
	g.Expect(code).To(Equal(0), out)
}

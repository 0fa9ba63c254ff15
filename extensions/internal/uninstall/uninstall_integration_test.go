package uninstall

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/devtools/testenv"
	"github.com/acme/platform-operator/internal/operator/releaseidentity"
)

// The integration tests share one API server (etcd and kube-apiserver from
// KUBEBUILDER_ASSETS) with the operator's CRDs installed as shipped: the
// WebApp's converts through a webhook that nobody serves here, as after the
// operator is gone. No operator runs: a test that needs finalizers removed
// removes them itself. The tests change the WebApp CRD's conversion, so
// they run one at a time.
var env *testenv.Env

var crdDir = filepath.Join("..", "..", "..", "config", "crd", "bases")

func TestMain(m *testing.M) {
	env = testenv.Start(crdDir)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// testFinalizer stands for the operator's finalizers.
const testFinalizer = "test.acme.com/hold"

// cluster is what a test uses of the API server.
type cluster struct {
	c       client.Client
	dynamic dynamic.Interface
	meta    metadata.Interface
}

func connect(t *testing.T) cluster {
	t.Helper()
	g := NewWithT(t)
	cfg := env.Require(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	dyn, err := dynamic.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	meta, err := metadata.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	restoreConversion(t, c)
	return cluster{c: c, dynamic: dyn, meta: meta}
}

// restoreConversion gives the WebApp CRD its shipped conversion (envtest
// installs CRDs without the conversion webhooks of types it does not
// know), now and again when the test ends.
func restoreConversion(t *testing.T, c client.Client) {
	t.Helper()
	restore := func() error {
		data, err := os.ReadFile(filepath.Join(crdDir, "web.acme.com_webapps.yaml"))
		if err != nil {
			return err
		}
		var shipped apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &shipped); err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: shipped.Name}, crd); err != nil {
			return err
		}
		crd.Spec.Conversion = shipped.Spec.Conversion
		return c.Update(context.Background(), crd)
	}
	NewWithT(t).Expect(restore()).To(Succeed())
	t.Cleanup(func() {
		if err := restore(); err != nil {
			t.Error(err)
		}
	})
}

// uninstaller is the command's Uninstaller on the test's API server, with
// the shipped kinds.
func (k cluster) uninstaller(t *testing.T, out *strings.Builder, del bool, timeout time.Duration, selector string) *Uninstaller {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	kinds, err := LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"), filepath.Join(root, "watches.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return &Uninstaller{
		CRDs: k.c, Objects: k.meta, Out: out, Clock: clock.RealClock{}, Kinds: kinds,
		Delete: del, Timeout: timeout, Interval: 100 * time.Millisecond, Selector: selector,
		DeleteCommand: "extensions uninstall --delete-resources",
	}
}

var (
	webAppV1alpha1 = schema.GroupVersionResource{Group: "web.acme.com", Version: "v1alpha1", Resource: "webapps"}
	webAppV1beta1  = schema.GroupVersionResource{Group: "web.acme.com", Version: "v1beta1", Resource: "webapps"}
	tenants        = schema.GroupVersionResource{Group: "tenancy.acme.com", Version: "v1alpha1", Resource: "namespacetenants"}
)

// createWebApp creates a WebApp in its storage version, in namespace ns
// (created when missing), with labels and finalizers.
func (k cluster) createWebApp(t *testing.T, ns, name string, labels map[string]string, finalizers ...string) {
	t.Helper()
	g := NewWithT(t)
	err := k.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "web.acme.com/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"deploymentTier": "dev", "webAppImage": "registry.acme.com/shop/shop:v1", "webAppHostname": name + ".acme.com"},
	}}
	u.SetLabels(labels)
	u.SetFinalizers(finalizers)
	_, err = k.dynamic.Resource(webAppV1alpha1).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { k.remove(t, webAppV1alpha1, ns, name) })
}

// createTenant creates a NamespaceTenant with finalizers.
func (k cluster) createTenant(t *testing.T, name string, finalizers ...string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.acme.com/v1alpha1", "kind": "NamespaceTenant",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"namespaceName": name, "adminUsername": "sam"},
	}}
	u.SetFinalizers(finalizers)
	_, err := k.dynamic.Resource(tenants).Create(context.Background(), u, metav1.CreateOptions{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { k.remove(t, tenants, "", name) })
}

// remove deletes an object, its finalizers cleared, if it is still there.
func (k cluster) remove(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	ctx := context.Background()
	_, err := k.meta.Resource(gvr).Namespace(ns).Patch(ctx, name, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err == nil {
		err = k.meta.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("removing %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

// conversionOf returns the WebApp CRD's conversion strategy.
func (k cluster) conversionOf(t *testing.T) apiextensionsv1.ConversionStrategyType {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	NewWithT(t).Expect(k.c.Get(context.Background(), client.ObjectKey{Name: "webapps.web.acme.com"}, crd)).To(Succeed())
	return crd.Spec.Conversion.Strategy
}

// releaseFinalizers plays the operator: from after on, it removes the
// finalizers of each WebApp and NamespaceTenant whose deletion was asked
// for, until stop is closed.
func (k cluster) releaseFinalizers(t *testing.T, after time.Duration, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-stop:
			return
		case <-time.After(after):
		}
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for _, gvr := range []schema.GroupVersionResource{webAppV1alpha1, tenants} {
				list, err := k.meta.Resource(gvr).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				for _, m := range list.Items {
					if m.DeletionTimestamp != nil {
						k.remove(t, gvr, m.Namespace, m.Name)
					}
				}
			}
		}
	})
	return &wg
}

// TestRefusesAndNamesEach: with resources present (one of them already
// being deleted), the check refuses, names each with the command to
// delete them, deletes nothing and leaves the conversion webhook.
func TestRefusesAndNamesEach(t *testing.T) {
	g := NewWithT(t)
	k := connect(t)
	ctx := context.Background()
	k.createWebApp(t, "shop", "shop", nil)
	k.createTenant(t, "team-a")
	k.createTenant(t, "team-b", testFinalizer)
	g.Expect(k.meta.Resource(tenants).Delete(ctx, "team-b", metav1.DeleteOptions{})).To(Succeed())

	var out strings.Builder
	err := k.uninstaller(t, &out, false, time.Minute, "").Run(ctx)
	g.Expect(err).To(MatchError(ErrResourcesExist))
	g.Expect(out.String()).To(MatchRegexp(`(?s)^Refusing to continue: 3 resources of the operator's kinds exist\.\n.*` +
		`\n  NamespaceTenant team-a\n  NamespaceTenant team-b \(deleting for \d+s; finalizers: test.acme.com/hold\)\n  WebApp shop/shop\n` +
		`Delete them first and wait until they are gone:\n  extensions uninstall --delete-resources\n` +
		`or with kubectl, while the operator runs:\n` +
		`  kubectl delete namespacetenants.v1alpha1.tenancy.acme.com --all\n` +
		`  kubectl delete webapps.v1alpha1.web.acme.com --all --all-namespaces\n$`))
	_, err = k.meta.Resource(webAppV1alpha1).Namespace("shop").Get(ctx, "shop", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "nothing is deleted")
	g.Expect(k.conversionOf(t)).To(Equal(apiextensionsv1.WebhookConverter))
}

// TestDeletesWaitsAndResetsConversion: with --delete-resources every
// resource is deleted, the command waits while their finalizers hold
// them, and once none is left the WebApp CRD converts with None: a WebApp
// created afterwards reads in the preferred version v1beta1, which the
// shipped webhook, served by nobody here, could not convert.
func TestDeletesWaitsAndResetsConversion(t *testing.T) {
	g := NewWithT(t)
	k := connect(t)
	ctx := context.Background()
	k.createWebApp(t, "shop", "shop", nil, testFinalizer)
	k.createWebApp(t, "blog", "blog", nil)
	k.createTenant(t, "team-a", testFinalizer)

	// The shipped state, before: reading in v1beta1 needs the webhook.
	_, err := k.dynamic.Resource(webAppV1beta1).Namespace("shop").Get(ctx, "shop", metav1.GetOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("conversion webhook")))

	// Held for a while before the operator's stand-in runs: the command
	// must wait, not return at once.
	held := time.Second
	stop := make(chan struct{})
	wg := k.releaseFinalizers(t, held, stop)
	defer func() {
		close(stop)
		wg.Wait()
	}()

	var out strings.Builder
	started := time.Now()
	g.Expect(k.uninstaller(t, &out, true, time.Minute, "").Run(ctx)).To(Succeed(), out.String())
	g.Expect(time.Since(started)).To(BeNumerically(">=", held), "it waited for the finalizers")
	g.Expect(out.String()).To(HavePrefix("Deleting 3 resources of the operator's kinds, and waiting up to 1m0s for their finalizers:\n" +
		"  NamespaceTenant team-a\n  WebApp blog/blog\n  WebApp shop/shop\n"))
	g.Expect(out.String()).To(ContainSubstring("No resource of the operator's kinds (CronScaler, NamespaceTenant, Nginx, WebApp) is left.\n"))
	g.Expect(out.String()).To(HaveSuffix("webapps.web.acme.com: conversion set to None: no object of its kind is stored, " +
		"so none needs converting, and the API server no longer calls the operator's webhook\n"))
	for _, gvr := range []schema.GroupVersionResource{webAppV1alpha1, tenants} {
		list, err := k.meta.Resource(gvr).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(list.Items).To(BeEmpty())
	}
	g.Expect(k.conversionOf(t)).To(Equal(apiextensionsv1.NoneConverter))

	t.Log("what is created afterwards reads, edits and deletes in the preferred version without a webhook")
	k.createWebApp(t, "later", "later", nil)
	_, err = k.dynamic.Resource(webAppV1beta1).Namespace("later").Get(ctx, "later", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = k.dynamic.Resource(webAppV1beta1).Namespace("later").Patch(ctx, "later", "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"edited":"yes"}}}`), metav1.PatchOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k.dynamic.Resource(webAppV1beta1).Namespace("later").Delete(ctx, "later", metav1.DeleteOptions{})).To(Succeed())

	t.Log("run again with nothing left: exit 0, and nothing more to do on the CRD")
	out.Reset()
	g.Expect(k.uninstaller(t, &out, false, time.Minute, "").Run(ctx)).To(Succeed())
	g.Expect(out.String()).To(Equal("No resource of the operator's kinds (CronScaler, NamespaceTenant, Nginx, WebApp) is left.\n"))
}

// TestDeployTakesConversionBack: after a reset, the shipped CRD applied
// server-side as make deploy does (kubectl's field manager, conflicts
// forced) converts through the webhook again; without forcing, the
// conflict names this command's field manager.
func TestDeployTakesConversionBack(t *testing.T) {
	g := NewWithT(t)
	k := connect(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(crdDir, "web.acme.com_webapps.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	apply := func(force bool) error {
		shipped := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(data, &shipped.Object)).To(Succeed())
		opts := []client.PatchOption{client.FieldOwner("kubectl")}
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		return k.c.Patch(ctx, shipped, client.Apply, opts...)
	}
	g.Expect(apply(true)).To(Succeed())
	var out strings.Builder
	g.Expect(k.uninstaller(t, &out, false, time.Minute, "").Run(ctx)).To(Succeed())
	g.Expect(k.conversionOf(t)).To(Equal(apiextensionsv1.NoneConverter))

	g.Expect(apply(false)).To(MatchError(ContainSubstring(`conflict with "platform-operator-uninstall"`)))
	g.Expect(apply(true)).To(Succeed())
	g.Expect(k.conversionOf(t)).To(Equal(apiextensionsv1.WebhookConverter))
}

// TestTimeoutNamesWhatIsLeft: a finalizer nobody removes (no operator)
// keeps its resource; at the timeout the command names it and its
// finalizers, and the conversion webhook stays, since the resource still
// needs it.
func TestTimeoutNamesWhatIsLeft(t *testing.T) {
	g := NewWithT(t)
	k := connect(t)
	ctx := context.Background()
	k.createWebApp(t, "shop", "shop", nil, testFinalizer)
	k.createTenant(t, "team-a")

	var out strings.Builder
	started := time.Now()
	err := k.uninstaller(t, &out, true, 2*time.Second, "").Run(ctx)
	g.Expect(err).To(MatchError(ErrResourcesRemain))
	g.Expect(time.Since(started)).To(BeNumerically("<", 10*time.Second))
	g.Expect(out.String()).To(ContainSubstring("1 resource left: WebApp shop/shop\n"), "the tenant went at once")
	g.Expect(out.String()).To(MatchRegexp(`Timed out after 2s: 1 resource of the operator's kinds is still there:\n` +
		`  WebApp shop/shop \(deleting for \ds; finalizers: test.acme.com/hold\)\n`))
	g.Expect(out.String()).NotTo(ContainSubstring("conversion"))
	g.Expect(k.conversionOf(t)).To(Equal(apiextensionsv1.WebhookConverter))
}

// TestSelectorLimitsTheRun: with --selector only the matching resources
// are found and deleted, and the conversion is left as it is, whatever
// else exists.
func TestSelectorLimitsTheRun(t *testing.T) {
	g := NewWithT(t)
	k := connect(t)
	ctx := context.Background()
	k.createWebApp(t, "shop", "mine", map[string]string{"run": "mine"})
	k.createWebApp(t, "shop", "theirs", nil)

	var out strings.Builder
	err := k.uninstaller(t, &out, false, time.Minute, "run=mine").Run(ctx)
	g.Expect(err).To(MatchError(ErrResourcesExist))
	g.Expect(out.String()).To(ContainSubstring("  WebApp shop/mine\n"))
	g.Expect(out.String()).NotTo(ContainSubstring("theirs"))
	g.Expect(out.String()).To(ContainSubstring("kubectl delete webapps.v1alpha1.web.acme.com -l run=mine --all-namespaces"))

	out.Reset()
	g.Expect(k.uninstaller(t, &out, true, time.Minute, "run=mine").Run(ctx)).To(Succeed(), out.String())
	g.Expect(out.String()).To(ContainSubstring("No resource of the operator's kinds (CronScaler, NamespaceTenant, Nginx, WebApp) is left matching run=mine.\n"))
	g.Expect(out.String()).To(HaveSuffix("webapps.web.acme.com: conversion webhook kept: this run was limited by --selector, " +
		"and objects outside it may need converting\n"))
	_, err = k.meta.Resource(webAppV1alpha1).Namespace("shop").Get(ctx, "mine", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	_, err = k.meta.Resource(webAppV1alpha1).Namespace("shop").Get(ctx, "theirs", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k.conversionOf(t)).To(Equal(apiextensionsv1.WebhookConverter))
}

// TestNoCRDs: with none of the operator's CRDs installed there is nothing
// to check.
func TestNoCRDs(t *testing.T) {
	g := NewWithT(t)
	k := connect(t)
	var out strings.Builder
	u := k.uninstaller(t, &out, false, time.Minute, "")
	u.Kinds = []schema.GroupKind{{Group: "nothing.acme.com", Kind: "Nothing"}}
	g.Expect(u.Run(context.Background())).To(Succeed())
	g.Expect(out.String()).To(Equal("No CRD of the operator's kinds is installed.\n"))
}

// TestRemovesManagedIdentities: with no resource left, the ServiceAccounts
// and RoleBindings the operator made for its releases go too; others stay.
func TestRemovesManagedIdentities(t *testing.T) {
	g := NewWithT(t)
	k := connect(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "identities"}}
	g.Expect(k.c.Create(ctx, ns)).To(Succeed())
	managed := map[string]string{releaseidentity.ManagedByLabel: releaseidentity.ManagedByValue}
	g.Expect(k.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "platform-operator-release", Labels: managed}})).To(Succeed())
	g.Expect(k.c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "platform-operator-release", Labels: managed},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: "platform-operator-release"}},
	})).To(Succeed())
	g.Expect(k.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "theirs"}})).To(Succeed())

	var out strings.Builder
	g.Expect(k.uninstaller(t, &out, false, time.Minute, "").Run(ctx)).To(Succeed(), out.String())
	g.Expect(out.String()).To(ContainSubstring("Removed the 2 ServiceAccounts and RoleBindings the operator made for its releases (app.kubernetes.io/managed-by=platform-operator).\n"))
	err := k.c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "platform-operator-release"}, &corev1.ServiceAccount{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	err = k.c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "platform-operator-release"}, &rbacv1.RoleBinding{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	g.Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "theirs"}, &corev1.ServiceAccount{})).To(Succeed())
}

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// webAppReconciles is the number of reconciles the manager has run for
// WebApps since it started.
func webAppReconciles() (float64, error) {
	return env.manager.metric("controller_runtime_reconcile_total", "controller=webapp-controller")
}

// expectPasswordNotExposed checks that the password is nowhere in what a
// user who may only read WebApps and Events sees.
func expectPasswordNotExposed(t *testing.T, ns, name, password string) {
	t.Helper()
	g := NewWithT(t)
	out, err := env.Kubectl("get", "webapp", name, "-n", ns, "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("deployedRelease"), "the status must carry the release manifest")
	g.Expect(out).To(ContainSubstring("kind: Secret"), "the manifest lists the Secret")
	g.Expect(out).To(ContainSubstring("password: REDACTED"))
	g.Expect(out).NotTo(ContainSubstring(password))
	out, err = env.Kubectl("get", "events", "-n", ns, "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("ValueGenerated"), "the generation is reported, without the value")
	g.Expect(out).NotTo(ContainSubstring(password))
	logs, err := os.ReadFile(env.manager.logPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(logs)).To(ContainSubstring("Generated value"), "the generation is logged, without the value")
	g.Expect(string(logs)).NotTo(ContainSubstring(password))
}

// TestWebAppLifecycle walks the minimal WebApp from the issue through its
// life: every object with the right values, a password that survives idle
// reconciles, a hand-deleted Secret, an operator restart and upgrades,
// tier changes, and deletion that keeps the database volume.
func TestWebAppLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-webapp-lifecycle", "webapp-sample"
	env.CreateNamespace(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: name}
	dbKey := client.ObjectKey{Namespace: ns, Name: name + "-db"}

	out, err := env.Kubectl("apply", "-n", ns, "-f", "config/samples/web_v1alpha1_webapp.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)

	t.Log("create: the release is installed with every object of a dev WebApp")
	expectDeployed(t, testkit.WebAppGVK, ns, name, "InstallSuccessful")
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ConsistOf("sh.helm.release.v1." + name + ".v1"))

	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
	g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)))
	app := dep.Spec.Template.Spec.Containers[0]
	g.Expect(app.Image).To(Equal("example/app:v1.4"))
	g.Expect(app.Resources.Requests.Cpu().String()).To(Equal("50m"), "dev tier default")
	g.Expect(dep.Spec.Template.Spec.Affinity).To(BeNil(), "no anti-affinity in dev")
	dbEnv := map[string]string{}
	for _, e := range app.Env {
		g.Expect(e.ValueFrom).NotTo(BeNil(), "env %s", e.Name)
		g.Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal(name + "-db"))
		dbEnv[e.Name] = e.ValueFrom.SecretKeyRef.Key
	}
	g.Expect(dbEnv).To(Equal(map[string]string{
		"DATABASE_HOST": "host", "DATABASE_PORT": "port", "DATABASE_NAME": "database",
		"DATABASE_USER": "username", "DATABASE_PASSWORD": "password",
	}))

	sts := &appsv1.StatefulSet{}
	g.Expect(env.Client.Get(ctx, dbKey, sts)).To(Succeed())
	g.Expect(sts.Spec.ServiceName).To(Equal(name + "-db"))
	g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("postgres:17.2"))
	g.Expect(*sts.Spec.Template.Spec.SecurityContext.RunAsUser).To(Equal(int64(999)))
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
	g.Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted).To(Equal(appsv1.RetainPersistentVolumeClaimRetentionPolicyType))

	headless := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, dbKey, headless)).To(Succeed())
	g.Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, key, svc)).To(Succeed())
	g.Expect(svc.Spec.Ports[0].Port).To(Equal(int32(80)))
	g.Expect(env.Client.Get(ctx, key, &corev1.ConfigMap{})).To(Succeed())
	ing := &networkingv1.Ingress{}
	g.Expect(env.Client.Get(ctx, key, ing)).To(Succeed())
	g.Expect(ing.Spec.Rules[0].Host).To(Equal("app.acme.com"))
	g.Expect(ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name).To(Equal(name))
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key, &policyv1.PodDisruptionBudget{}))).To(BeTrue(), "no PDB in dev")

	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, dbKey, secret)).To(Succeed())
	g.Expect(secret.Data).To(HaveKeyWithValue("host", []byte(name+"-db."+ns+".svc")))
	g.Expect(secret.Data).To(HaveKeyWithValue("port", []byte("5432")))
	g.Expect(secret.Data).To(HaveKeyWithValue("database", []byte("app")))
	g.Expect(secret.Data).To(HaveKeyWithValue("username", []byte("app")))
	password := string(secret.Data["password"])
	g.Expect(password).To(MatchRegexp(`^[A-Za-z0-9]{32}$`))
	g.Expect(secret.Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))

	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(testkit.DeploymentAvailable(dep)).To(BeTrue(), "deployment status: %+v", dep.Status)
	}).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	out, err = env.Kubectl("wait", "-n", ns, "--for=condition=Ready", "webapp/"+name, "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("get", "webapps", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.Fields(strings.Split(out, "\n")[0])).To(Equal([]string{"NAME", "TIER", "IMAGE", "HOSTNAME", "REPLICAS", "CHART", "READY", "DEPLOYED", "REMEDIATED", "AGE"}))
	g.Expect(out).To(MatchRegexp(`webapp-sample\s+dev\s+example/app:v1.4\s+app.acme.com\s+2\s+\d+\.\d+\.\d+\S*\s+True\s+True`))

	t.Log("the password is not in the WebApp (status included) nor in events")
	expectPasswordNotExposed(t, ns, name, password)

	t.Log("20 reconciles without a spec change: no new revision, same password")
	revisions, err := env.ReleaseRevisions(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	for i := range 20 {
		before, err := webAppReconciles()
		g.Expect(err).NotTo(HaveOccurred())
		out, err := env.Kubectl("annotate", "webapp", name, "-n", ns, "--overwrite", fmt.Sprintf("e2e.acme.com/poke=%d", i))
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Eventually(webAppReconciles).WithTimeout(10*time.Second).WithPolling(50*time.Millisecond).
			Should(BeNumerically(">", before), "poke %d caused no reconcile", i)
	}
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ConsistOf(revisions))
	g.Expect(env.DBPassword(g, ns, name)).To(Equal(password))

	t.Log("a Secret deleted by hand comes back with the same password")
	oldUID := secret.UID
	g.Expect(env.Client.Delete(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		s := &corev1.Secret{}
		g.Expect(env.Client.Get(ctx, dbKey, s)).To(Succeed())
		g.Expect(s.UID).NotTo(Equal(oldUID))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(env.DBPassword(g, ns, name)).To(Equal(password))
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ConsistOf(revisions))
	// The repaired Secret carries Helm's ownership metadata, so that a later
	// release of the same name can adopt it.
	g.Expect(env.Client.Get(ctx, dbKey, secret)).To(Succeed())
	g.Expect(secret.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", name))
	g.Expect(secret.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))

	t.Log("restart the operator: no new revision, same password")
	g.Expect(env.manager.stop()).To(Succeed())
	g.Expect(env.manager.start()).To(Succeed())
	g.Eventually(webAppReconciles).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(BeNumerically(">=", 1))
	g.Consistently(func() ([]string, error) {
		return env.ReleaseRevisions(ctx, ns, name)
	}).WithTimeout(3 * time.Second).Should(ConsistOf(revisions))
	g.Expect(env.DBPassword(g, ns, name)).To(Equal(password))

	t.Log("change the image: revision 2 upgrades the Deployment and leaves the database alone")
	g.Expect(env.Client.Get(ctx, dbKey, sts)).To(Succeed())
	stsGeneration := sts.Generation
	g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
	depGeneration := dep.Generation
	out, err = env.Kubectl("patch", "webapp", name, "-n", ns, "--type=merge", "-p", `{"spec":{"webAppImage":"registry.acme.com/app/app:v1.5"}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectDeployed(t, testkit.WebAppGVK, ns, name, "UpgradeSuccessful")
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ContainElement("sh.helm.release.v1." + name + ".v2"))
	g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
	g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.acme.com/app/app:v1.5"))
	g.Expect(dep.Generation).To(BeNumerically(">", depGeneration))
	g.Expect(env.Client.Get(ctx, dbKey, sts)).To(Succeed())
	g.Expect(sts.Generation).To(Equal(stsGeneration), "the StatefulSet must not change")
	g.Expect(env.DBPassword(g, ns, name)).To(Equal(password))

	t.Log("dev -> prod: prod resources, anti-affinity and a PDB")
	out, err = env.Kubectl("patch", "webapp", name, "-n", ns, "--type=merge", "-p", `{"spec":{"deploymentTier":"prod"}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("250m"))
		g.Expect(dep.Spec.Template.Spec.Affinity).NotTo(BeNil())
		g.Expect(env.Client.Get(ctx, key, &policyv1.PodDisruptionBudget{})).To(Succeed())
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	expectDeployed(t, testkit.WebAppGVK, ns, name, "UpgradeSuccessful")
	// Deployed says UpgradeSuccessful since the image change already, and
	// Helm updates the StatefulSet after the Deployment: wait for it.
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, dbKey, sts)).To(Succeed())
		g.Expect(sts.Spec.Template.Spec.Containers[0].Resources.Requests.Memory().String()).To(Equal("1Gi"), "prod database resources")
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"),
		"an existing database keeps the volume it was created with")

	t.Log("prod -> stg: stg resources, the PDB goes")
	out, err = env.Kubectl("patch", "webapp", name, "-n", ns, "--type=merge", "-p", `{"spec":{"deploymentTier":"stg"}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("100m"))
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key, &policyv1.PodDisruptionBudget{}))).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(env.DBPassword(g, ns, name)).To(Equal(password))
	expectPasswordNotExposed(t, ns, name, password)

	t.Log("delete the WebApp: the app goes, the database volume and its Secret stay")
	pvcKey := client.ObjectKey{Namespace: ns, Name: "data-" + name + "-db-0"}
	g.Eventually(func() error {
		return env.Client.Get(ctx, pvcKey, &corev1.PersistentVolumeClaim{})
	}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "the StatefulSet controller creates the claim")
	out, err = env.Kubectl("delete", "webapp", name, "-n", ns, "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.Ingress{}} {
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key, obj))).To(BeTrue(), "%T still there", obj)
		}
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, dbKey, &appsv1.StatefulSet{}))).To(BeTrue(), "StatefulSet still there")
		g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(BeEmpty())
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	// Give the garbage collector time to act on anything it would delete.
	g.Consistently(func(g Gomega) {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(env.Client.Get(ctx, pvcKey, pvc)).To(Succeed())
		g.Expect(pvc.DeletionTimestamp).To(BeNil())
		g.Expect(env.Client.Get(ctx, dbKey, &corev1.Secret{})).To(Succeed())
	}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	t.Log("re-create the WebApp: it reuses the kept password, so the retained database still opens")
	out, err = env.Kubectl("apply", "-n", ns, "-f", "config/samples/web_v1alpha1_webapp.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectDeployed(t, testkit.WebAppGVK, ns, name, "InstallSuccessful")
	g.Expect(env.DBPassword(g, ns, name)).To(Equal(password))
	out, err = env.Kubectl("get", "events", "-n", ns, "--field-selector", "reason=ValueRecovered", "-o", "name")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.TrimSpace(out)).NotTo(BeEmpty(), "the recovery is reported")
	out, err = env.Kubectl("delete", "webapp", name, "-n", ns, "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

// TestWebAppRetentionDelete checks database.storage.whenDeleted: Delete:
// deleting the WebApp deletes the database volume and its Secret.
func TestWebAppRetentionDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-webapp-retention", "shop"
	env.CreateNamespace(t, ns)
	manifest := fmt.Sprintf(`apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata:
  name: %s
  namespace: %s
spec:
  deploymentTier: dev
  webAppImage: registry.acme.com/shop/shop:v1
  webAppHostname: shop.acme.com
  database:
    storage:
      whenDeleted: Delete
`, name, ns)
	out, err := env.KubectlIn(manifest, "apply", "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectDeployed(t, testkit.WebAppGVK, ns, name, "InstallSuccessful")

	dbKey := client.ObjectKey{Namespace: ns, Name: name + "-db"}
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, dbKey, secret)).To(Succeed())
	g.Expect(secret.Annotations).NotTo(HaveKey("helm.sh/resource-policy"))
	sts := &appsv1.StatefulSet{}
	g.Expect(env.Client.Get(ctx, dbKey, sts)).To(Succeed())
	g.Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted).To(Equal(appsv1.DeletePersistentVolumeClaimRetentionPolicyType))

	pvcKey := client.ObjectKey{Namespace: ns, Name: "data-" + name + "-db-0"}
	g.Eventually(func() error {
		return env.Client.Get(ctx, pvcKey, &corev1.PersistentVolumeClaim{})
	}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "the StatefulSet controller creates the claim")

	out, err = env.Kubectl("delete", "webapp", name, "-n", ns, "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, pvcKey, &corev1.PersistentVolumeClaim{}))).To(BeTrue(), "claim still there")
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, dbKey, &corev1.Secret{}))).To(BeTrue(), "Secret still there")
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// TestWebAppInvalidSpecsRefused applies invalid WebApps with kubectl: the
// API server refuses each one with the field path, and nothing is created.
func TestWebAppInvalidSpecsRefused(t *testing.T) {
	ctx := context.Background()
	const ns = "e2e-webapp-invalid"
	env.CreateNamespace(t, ns)
	const valid = "deploymentTier: dev\n  webAppImage: registry.acme.com/app/app:v1.4\n  webAppHostname: app.acme.com"

	cases := []struct {
		name string // resource name, unique per case
		spec string // the spec, as YAML indented under "spec:"
		want string // what the error must mention
	}{
		// Each required field, left out.
		{"no-tier", "webAppImage: registry.acme.com/app/app:v1.4\n  webAppHostname: app.acme.com", `spec.deploymentTier: Required value`},
		{"no-image", "deploymentTier: dev\n  webAppHostname: app.acme.com", `spec.webAppImage: Required value`},
		{"no-hostname", "deploymentTier: dev\n  webAppImage: registry.acme.com/app/app:v1.4", `spec.webAppHostname: Required value`},
		// The tier is an enum.
		{"unknown-tier", "deploymentTier: qa\n  webAppImage: registry.acme.com/app/app:v1.4\n  webAppHostname: app.acme.com", `spec.deploymentTier: Unsupported value: "qa"`},
		// Hostnames are DNS names: no spaces, no underscores, no upper case,
		// no scheme, no trailing dot.
		{"hostname-space", "deploymentTier: dev\n  webAppImage: registry.acme.com/app/app:v1.4\n  webAppHostname: not a host", `spec.webAppHostname`},
		{"hostname-underscore", "deploymentTier: dev\n  webAppImage: registry.acme.com/app/app:v1.4\n  webAppHostname: my_app.acme.com", `spec.webAppHostname`},
		{"hostname-url", "deploymentTier: dev\n  webAppImage: registry.acme.com/app/app:v1.4\n  webAppHostname: https://app.acme.com", `spec.webAppHostname`},
		{"hostname-upper", "deploymentTier: dev\n  webAppImage: registry.acme.com/app/app:v1.4\n  webAppHostname: App.Acme.com", `spec.webAppHostname`},
		// Negative replicas.
		{"negative-replicas", valid + "\n  webAppReplicas: -1", `spec.webAppReplicas: Invalid value: -1`},
		// Unknown fields, top level and nested, are refused, not dropped.
		{"unknown-field", valid + "\n  webAppReplica: 2", `unknown field "spec.webAppReplica"`},
		{"unknown-nested-field", valid + "\n  database:\n    size: 5Gi", `unknown field "spec.database.size"`},
		// An image reference with spaces.
		{"bad-image", "deploymentTier: dev\n  webAppImage: not an image\n  webAppHostname: app.acme.com", `spec.webAppImage`},
		// The password is the operator's to generate.
		{"password-set", valid + "\n  database:\n    auth:\n      password: hunter2", `spec.database.auth.password`},
		// Retention policy is Retain or Delete.
		{"bad-retention", valid + "\n  database:\n    storage:\n      whenDeleted: Keep", `spec.database.storage.whenDeleted`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectRefusedAtApply(t, testkit.WebAppGVK, ns, tc.name, tc.spec, tc.want)
		})
	}
	var deps appsv1.DeploymentList
	NewWithT(t).Expect(env.Client.List(ctx, &deps, client.InNamespace(ns))).To(Succeed())
	NewWithT(t).Expect(deps.Items).To(BeEmpty())
}

// TestWebAppFullSample applies the full sample (prod, most options set) and
// checks the options reach the objects.
func TestWebAppFullSample(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name = "e2e-webapp-full", "webapp-full"
	env.CreateNamespace(t, ns)
	out, err := env.Kubectl("apply", "-n", ns, "-f", "config/samples/web_v1alpha1_webapp_full.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectDeployed(t, testkit.WebAppGVK, ns, name, "InstallSuccessful")

	key := client.ObjectKey{Namespace: ns, Name: name}
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
	g.Expect(*dep.Spec.Replicas).To(Equal(int32(3)))
	g.Expect(dep.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(HaveLen(1))
	g.Expect(dep.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("500m"))
	pdb := &policyv1.PodDisruptionBudget{}
	g.Expect(env.Client.Get(ctx, key, pdb)).To(Succeed())
	g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(2))
	ing := &networkingv1.Ingress{}
	g.Expect(env.Client.Get(ctx, key, ing)).To(Succeed())
	g.Expect(ing.Spec.TLS).To(ConsistOf(HaveField("SecretName", "shop-acme-com-tls")))
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, key, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKey("app.yaml"))
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-db"}, secret)).To(Succeed())
	g.Expect(secret.Data).To(HaveKeyWithValue("database", []byte("shop")))
	g.Expect(secret.Data).To(HaveKeyWithValue("username", []byte("storefront")))
	sts := &appsv1.StatefulSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-db"}, sts)).To(Succeed())
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("50Gi"))

	out, err = env.Kubectl("delete", "-n", ns, "-f", "config/samples/web_v1alpha1_webapp_full.yaml", "--timeout=60s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

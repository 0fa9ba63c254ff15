package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/workloadrefs"
	"github.com/acme/platform-operator/test/testkit"
)

// replicaSetsOf lists the pod template hashes of the ReplicaSets of the
// Deployment ns/name: one per rollout.
func replicaSetsOf(ctx context.Context, g Gomega, ns, name string) []string {
	var list appsv1.ReplicaSetList
	g.ExpectWithOffset(1, env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var hashes []string
	for _, rs := range list.Items {
		for _, o := range rs.OwnerReferences {
			if o.Kind == "Deployment" && o.Name == name {
				hashes = append(hashes, rs.Labels["pod-template-hash"])
			}
		}
	}
	return hashes
}

// TestWebAppSecretReferences: a WebApp's app reads an API key from a
// Secret. Applied before the Secret exists, it reports the missing
// reference in Ready until the Secret is created. The key's value is
// nowhere in the WebApp, its Helm release records or the Deployment.
// Changing the Secret rolls the Deployment once (one new pod template
// hash) within 30 s and makes no release revision; an idle minute after
// that adds neither a revision nor a rollout.
func TestWebAppSecretReferences(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	const ns, name = "refs", "vault"
	env.CreateNamespace(t, ns)
	applyCR(g, testkit.WebAppGVK, ns, name, `
deploymentTier: dev
webAppImage: registry.example.com/vault:1
webAppHostname: vault.refs.example.com
env: {MODE: prod}
envVars:
- name: API_KEY
  valueFrom: {secretKeyRef: {name: api-keys, key: token}}
`)
	expectDeployed(t, testkit.WebAppGVK, ns, name, "InstallSuccessful")

	t.Log("the Secret does not exist yet: Ready says which one is missing")
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("False"))
		g.Expect(reason).To(Equal("MissingReference"), msg)
		g.Expect(msg).To(ContainSubstring(`Secret "api-keys" key "token"`))
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	_, _, msg := env.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
	t.Logf("Ready: %s", msg)

	value := "k3y-" + rand.String(16)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-keys"}, Data: map[string][]byte{"token": []byte(value)}}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		status, _, msg := env.ConditionOf(g, testkit.WebAppGVK, ns, name, "Ready")
		g.Expect(status).To(Equal("True"), msg)
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	t.Log("the Secret exists: Ready")

	t.Log("the value is in no WebApp, release record or Deployment")
	cr, err := env.Get(ctx, testkit.WebAppGVK, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	b, _ := json.Marshal(cr.Object)
	g.Expect(string(b)).NotTo(ContainSubstring(value))
	revisions, err := env.ReleaseRevisions(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	for i := range revisions {
		rel, err := env.ReleaseRecord(ctx, ns, name, i+1)
		g.Expect(err).NotTo(HaveOccurred())
		b, _ := json.Marshal(rel)
		g.Expect(string(b)).NotTo(ContainSubstring(value), "release record revision %d", i+1)
		g.Expect(string(b)).To(ContainSubstring("api-keys"), "the record names the Secret")
	}
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
	b, _ = json.Marshal(dep)
	g.Expect(string(b)).NotTo(ContainSubstring(value))

	t.Log("rotate the key: one rollout within 30 s, no release revision")
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		g.Expect(dep.Annotations).NotTo(HaveKey(workloadrefs.MissingAnnotation))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	before := replicaSetsOf(ctx, g, ns, name)
	revBefore := len(revisions)
	rotated := time.Now()
	secret.Data["token"] = []byte("k3y-" + rand.String(16))
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(replicaSetsOf(ctx, g, ns, name)).To(HaveLen(len(before) + 1))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("rolled %s after the Secret changed", time.Since(rotated).Round(time.Millisecond))
	after := replicaSetsOf(ctx, g, ns, name)
	revisions, err = env.ReleaseRevisions(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revisions).To(HaveLen(revBefore), "rotation makes no release revision")
	events, err := env.EventsWithReason(ctx, ns, name, "ReferencesChanged")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("events: %s", strings.Join(events, "; "))

	t.Log("an idle minute: no revision, no rollout")
	g.Consistently(func(g Gomega) {
		g.Expect(replicaSetsOf(ctx, g, ns, name)).To(ConsistOf(after))
		revisions, err := env.ReleaseRevisions(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(revisions).To(HaveLen(revBefore))
	}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())

	out, err := env.Kubectl("delete", "webapp", name, "-n", ns, "--wait=true", "--timeout=120s")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

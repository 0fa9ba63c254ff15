package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/gen/kindgen"
	"github.com/acme/platform-operator/test/testkit"
)

// lockerChartFiles is a chart with a plain password value, as most public
// charts take one, rendered into a Secret.
var lockerChartFiles = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: locker\nversion: 0.1.0\n",
	"values.yaml": "# The password of the app.\npassword: \"\"\n",
	"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-locker\n" +
		"stringData:\n  password: {{ .Values.password | quote }}\n",
}

// TestValuesFromSecret: a kind made with `make kind` from that chart
// takes the password from a key of a Secret in the resource's namespace
// (valuesFrom, with a targetPath): the rendered Secret carries it, and
// neither the resource (status included) nor its Events ever do.
// A resource naming a Secret that does not exist yet says so in a
// condition and installs once it is created. Rotating the key upgrades
// the release exactly once, to the new value;
// a reconcile with the same content (the Secret's metadata touched) makes
// no revision.
func TestValuesFromSecret(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	repo := t.TempDir()
	testkit.CopyTree(t, env.Root, repo, kindgen.Files...)
	for name, content := range lockerChartFiles {
		p := filepath.Join(repo, "helm-charts", "locker", name)
		g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(p, []byte(content), 0o644)).To(Succeed())
	}
	out, err := env.Run("", "go", "run", "./cmd/kindgen", "--root", repo,
		"--chart", "helm-charts/locker", "--group", "valuesfrom.acme.com", "--kind", "Locker")
	g.Expect(err).NotTo(HaveOccurred(), out)
	gvk := schema.GroupVersionKind{Group: "valuesfrom.acme.com", Version: "v1alpha1", Kind: "Locker"}
	crd := filepath.Join(repo, "config", "crd", "bases", "valuesfrom.acme.com_lockers.yaml")
	out, err = env.Kubectl("apply", "--server-side", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "-f", crd, "--wait=false") })
	out, err = env.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "-f", crd)
	g.Expect(err).NotTo(HaveOccurred(), out)
	startKindRuntime(t, repo, "Locker", "valuesfrom")

	const ns, first, second = "e2e-valuesfrom", "first-Pa55-e2e-vf", "second-Pa55-e2e-vf"
	env.CreateNamespace(t, ns)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "locker", "--all", "-n", ns, "--wait=true", "--timeout=60s") })
	source := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-credentials"}, Data: map[string][]byte{"password": []byte(first)}}
	g.Expect(env.Client.Create(ctx, source)).To(Succeed())

	t.Log("the password comes from the Secret; the spec's default \"\" does not win")
	applyCR(g, gvk, ns, "app", `valuesFrom: [{kind: Secret, name: app-credentials, valuesKey: password, targetPath: password}]`)
	expectDeployed(t, gvk, ns, "app", "InstallSuccessful")
	rendered := func() (string, error) {
		var s corev1.Secret
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-locker"}, &s)
		return string(s.Data["password"]), err
	}
	g.Eventually(rendered).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(first))
	expectRevisions(t, ns, "app", 1)
	noValue := func(values ...string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, u)).To(Succeed())
		g.Expect(u.Object).To(HaveKeyWithValue("status", Not(BeNil())))
		whole, err := json.Marshal(u.Object)
		g.Expect(err).NotTo(HaveOccurred())
		var events corev1.EventList
		g.Expect(env.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		g.Expect(events.Items).NotTo(BeEmpty())
		evs, err := json.Marshal(events.Items)
		g.Expect(err).NotTo(HaveOccurred())
		for _, v := range values {
			g.Expect(string(whole)).NotTo(ContainSubstring(v), "the resource carries the value")
			g.Expect(string(evs)).NotTo(ContainSubstring(v), "an Event carries the value")
		}
	}
	noValue(first)

	t.Log("a missing Secret holds the install back with a condition naming it; creating it installs")
	applyCR(g, gvk, ns, "later", `valuesFrom: [{kind: Secret, name: later-credentials, valuesKey: password, targetPath: password}]`)
	g.Eventually(func(g Gomega) {
		status, reason, msg := env.ConditionOf(g, gvk, ns, "later", "Irreconcilable")
		g.Expect(status).To(Equal("True"), msg)
		g.Expect(reason).To(Equal("ErrorGettingValues"))
		g.Expect(msg).To(ContainSubstring("spec.valuesFrom[0]: Secret later-credentials does not exist"))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	expectRevisions(t, ns, "later", 0)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later-credentials"},
		Data: map[string][]byte{"password": []byte(first)}})).To(Succeed())
	expectDeployed(t, gvk, ns, "later", "InstallSuccessful")

	t.Log("rotating the key upgrades the release once, to the new value")
	source.Data["password"] = []byte(second)
	g.Expect(env.Client.Update(ctx, source)).To(Succeed())
	g.Eventually(rendered).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(second))
	expectRevisions(t, ns, "app", 2)

	t.Log("a reconcile with the same content makes no revision")
	out, err = env.Kubectl("annotate", "secret", "app-credentials", "-n", ns, "e2e.acme.com/touched=yes")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectRevisions(t, ns, "app", 2)
	g.Expect(rendered()).To(Equal(second))
	noValue(first, second)
}

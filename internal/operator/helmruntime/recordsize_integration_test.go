package helmruntime

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/actionpath"
)

// TestReleaseTooLarge: a Widget whose greeting holds 700 KB of data that
// does not compress (it lands in the release's values and again in its
// ConfigMap, 1.4 MB in the record) is refused before Helm writes anything,
// once, not retried, and without an error in the log; set small, it
// installs; set large again, the upgrade is refused at its dry-run and the
// release stays as it was. No webhook runs here: this is the runtime's
// own check.
func TestReleaseTooLarge(t *testing.T) {
	k8s := requireEnv(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	raw := make([]byte, 525_000)
	_, err := rand.Read(raw)
	g.Expect(err).NotTo(HaveOccurred())
	big := base64.StdEncoding.EncodeToString(raw) // 700,000 characters

	// refusals counts the Events of the refusal, each one counted.
	refusals := func(g Gomega) int32 {
		events, err := eventsOf(ctx, k8s, &unstructured.Unstructured{Object: map[string]any{
			"kind": "Widget", "metadata": map[string]any{"namespace": ns, "name": "big"}}})
		g.Expect(err).NotTo(HaveOccurred())
		var n int32
		for _, e := range events {
			g.Expect(e.Reason).NotTo(Equal(actionpath.ReasonInstallFailed), "reported as a refusal only")
			if e.Reason == actionpath.ReasonReleaseTooLarge {
				n += max(e.Count, 1)
			}
		}
		return n
	}

	t.Log("an install whose record is too large is refused, and nothing is written")
	cr := helmtest.CR("Widget", ns, "big", map[string]any{"greeting": big}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectRefused(t, k8s, cr, actionpath.ReasonReleaseTooLarge, "the record of release big in namespace "+ns+" would be ")
	cur, err := getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conditionOf(cur, "ReleaseFailed")["message"]).To(And(
		MatchRegexp(`would be 1[34]\d{5} bytes, over the 1048576 bytes \(1 MiB\) a Secret may hold`),
		ContainSubstring("the largest values are greeting (700002 bytes)"),
		Not(ContainSubstring("failed to create")),
	), "the refusal's own words, not Helm's")
	waitSettled(t, k8s, cr)
	secrets, err := releaseSecrets(ctx, k8s, ns, "big")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(BeEmpty(), "no release record")
	err = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "big-config"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no object of the release: %v", err)

	t.Log("the refusal is not retried, and logs no error")
	g.Consistently(refusals).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(BeNumerically("==", 1))
	logs, err := os.ReadFile(suite.logFile)
	g.Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(logs), "\n") {
		g.Expect(strings.Contains(line, "\tERROR\t") && strings.Contains(line, ns)).To(BeFalse(), "an error logged: %.400s", line)
	}

	t.Log("the spec made small installs")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
	g.Expect(unstructured.SetNestedField(cr.Object, "hello", "spec", "greeting")).To(Succeed())
	g.Expect(k8s.Update(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	cur, err = getCR(ctx, k8s, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conditionStatus(cur, "ReleaseFailed")).To(Equal("False"))
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "big-config"}, cm)).To(Succeed())
	waitSettled(t, k8s, cr)

	t.Log("an upgrade whose record is too large is refused at its dry-run; the release stays as it was")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
	g.Expect(unstructured.SetNestedField(cr.Object, big, "spec", "greeting")).To(Succeed())
	g.Expect(k8s.Update(ctx, cr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur, err := getCR(ctx, k8s, cr)
		g.Expect(err).NotTo(HaveOccurred())
		irreconcilable := conditionOf(cur, "Irreconcilable")
		g.Expect(irreconcilable).To(And(HaveKeyWithValue("status", "True"), HaveKeyWithValue("reason", actionpath.ReasonReleaseTooLarge)))
		g.Expect(irreconcilable["message"]).To(ContainSubstring("the largest values are greeting (700002 bytes)"))
	}).WithTimeout(eventually).WithPolling(poll).Should(Succeed())
	g.Eventually(refusals).WithTimeout(eventually).WithPolling(poll).Should(BeNumerically("==", 2))
	waitSettled(t, k8s, cr)
	secrets, err = releaseSecrets(ctx, k8s, ns, "big")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(HaveLen(1), "no new revision")
	kept := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "big-config"}, kept)).To(Succeed())
	g.Expect(kept.ResourceVersion).To(Equal(cm.ResourceVersion), "the ConfigMap is untouched")
	g.Consistently(refusals).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(BeNumerically("==", 2))

	g.Expect(k8s.Delete(ctx, cr)).To(Succeed())
	expectGone(t, k8s, cr)
}

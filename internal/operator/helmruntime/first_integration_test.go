package helmruntime

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

// TestFirstInstallStoresOneRecord: the first install of a release stores
// its record once, with the outcome; nobody watching the release's Secrets
// sees a pending-install record, nor the record rewritten.
func TestFirstInstallStoresOneRecord(t *testing.T) {
	k8s := requireEnv(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)
	cs, err := kubernetes.NewForConfig(suite.cfg)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=once"})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	cr := helmtest.CR("Widget", ns, "once", map[string]any{"greeting": "hi"}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)
	waitSettled(t, k8s, cr)

	var seen []string
	for done := false; !done; {
		select {
		case ev := <-w.ResultChan():
			s, ok := ev.Object.(*corev1.Secret)
			g.Expect(ok).To(BeTrue(), "event %v", ev)
			seen = append(seen, string(ev.Type)+" v"+s.Labels["version"]+" "+s.Labels["status"])
		case <-time.After(time.Second):
			done = true
		}
	}
	g.Expect(seen).To(Equal([]string{string(watch.Added) + " v1 deployed"}))
}

// TestFirstInstallAdoptsWhatAKilledInstallLeft: a process killed during a
// first install leaves the objects it created, with Helm's ownership
// metadata, and no record (the pending record was held in memory). The
// next install adopts them rather than failing on them.
func TestFirstInstallAdoptsWhatAKilledInstallLeft(t *testing.T) {
	k8s := requireEnv(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := newTestNamespace(t, k8s)

	left := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "orphan-config", Namespace: ns,
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "orphan", "meta.helm.sh/release-namespace": ns},
	}, Data: map[string]string{"greeting": "from the killed install"}}
	g.Expect(k8s.Create(ctx, left)).To(Succeed())

	cr := helmtest.CR("Widget", ns, "orphan", map[string]any{"greeting": "hi"}, nil)
	g.Expect(k8s.Create(ctx, cr)).To(Succeed())
	expectDeployed(t, k8s, cr)

	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(left), cm)).To(Succeed())
	g.Expect(cm.UID).To(Equal(left.UID), "adopted, not recreated")
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hi"))
	secrets, err := releaseSecrets(ctx, k8s, ns, "orphan")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).To(HaveLen(1))
	g.Expect(secrets[0].Labels).To(HaveKeyWithValue("status", "deployed"))
}

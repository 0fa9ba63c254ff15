package admission

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWebhookRefusesRemediationAnnotations: a resource of a kind with a
// chart whose ready-timeout or remediation annotation does not parse is
// refused at apply, on create and on an update that edits only that
// annotation (the configuration's matchConditions send it); a valid edit
// of it passes without the chart's checks, and deletes work.
func TestWebhookRefusesRemediationAnnotations(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	defer startWebhook(t)()
	ctx := t.Context()
	ns := newNamespace(t, c)
	annotated := func(kind, name string, annotations map[string]string) error {
		o := obj(ns, kind, name, nil)
		if kind == "WebApp" {
			o = obj(ns, kind, name, spec(t, `{deploymentTier: dev, webAppImage: "app:1", webAppHostname: `+name+`.example.com}`))
		}
		o.SetAnnotations(annotations)
		return c.Create(ctx, o)
	}

	t.Run("a create with a ready timeout out of bounds", func(t *testing.T) {
		refused(NewWithT(t), annotated("Nginx", "slow", map[string]string{"platform.acme.com/ready-timeout": "999h"}),
			"metadata.annotations[platform.acme.com/ready-timeout]: Invalid value",
			`annotation platform.acme.com/ready-timeout: "999h" is outside 10s to 24h`)
	})

	t.Run("a create with an unknown strategy", func(t *testing.T) {
		refused(NewWithT(t), annotated("WebApp", "gone", map[string]string{"platform.acme.com/remediation": "uninstall"}),
			"metadata.annotations[platform.acme.com/remediation]: Invalid value",
			`annotation platform.acme.com/remediation: "uninstall" is not one of rollback, none`)
	})

	t.Run("a CronScaler's annotations are not the webhook's business", func(t *testing.T) {
		cs := obj(ns, "CronScaler", "annotated", spec(t,
			`{scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: annotated}, jobs: [{name: day, schedule: "0 8 * * *", replicas: 2}]}`))
		cs.SetAnnotations(map[string]string{"platform.acme.com/ready-timeout": "999h"})
		NewWithT(t).Expect(c.Create(ctx, cs)).To(Succeed())
	})

	t.Run("annotation-only edits; a delete", func(t *testing.T) {
		g := NewWithT(t)
		web := obj(ns, "Nginx", "kept", nil)
		web.SetAnnotations(map[string]string{"platform.acme.com/ready-timeout": "5m", "platform.acme.com/retry": "anything"})
		g.Expect(c.Create(ctx, web)).To(Succeed())
		// An object the chart renders, held by no release: a spec edit is
		// refused for it, so the edits below that pass were not put
		// through the chart's checks.
		g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept-nginx"}})).To(Succeed())
		respec := web.DeepCopy()
		respec.Object["spec"] = spec(t, `{replicaCount: 2}`)
		refused(g, c.Update(ctx, respec), "ConfigMap "+ns+"/kept-nginx exists and belongs to no release of this operator")

		web.SetAnnotations(map[string]string{"platform.acme.com/ready-timeout": "soon", "platform.acme.com/retry": "anything"})
		refused(g, c.Update(ctx, web), "metadata.annotations[platform.acme.com/ready-timeout]",
			`annotation platform.acme.com/ready-timeout: "soon" is not a duration such as 90s, 5m or 1h`)

		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		web.SetAnnotations(map[string]string{"platform.acme.com/ready-timeout": "2m", "platform.acme.com/remediation": "none",
			"platform.acme.com/retry": "again"})
		g.Expect(c.Update(ctx, web)).To(Succeed())
		web.SetLabels(map[string]string{"team": "a"})
		g.Expect(c.Update(ctx, web)).To(Succeed())

		g.Expect(c.Delete(ctx, web)).To(Succeed())
		g.Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(web), web))).To(BeTrue())
	})

	g.Expect(ctx.Err()).NotTo(HaveOccurred())
}

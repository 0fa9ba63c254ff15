package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/test/testkit"
)

// TestImageDefaultsFollowTheOperator: a resource that leaves its image
// unset runs the operator's RELATED_IMAGE_NGINX; an operator restarted with
// another value upgrades it once (one new revision), and leaves a resource
// that chose its own image as it was.
func TestImageDefaultsFollowTheOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "e2e-image-defaults"
	env.CreateNamespace(t, ns)
	first := "mirror.local:5000/nginx-unprivileged:1.27.3-alpine"
	second := "mirror.local:5000/nginx-unprivileged@sha256:" + strings.Repeat("c3", 32)

	restart := func(image string) {
		t.Helper()
		g.Expect(env.manager.stop()).To(Succeed())
		env.manager.env = nil
		if image != "" {
			env.manager.env = []string{"RELATED_IMAGE_NGINX=" + image}
		}
		g.Expect(env.manager.start()).To(Succeed())
	}
	restart(first)
	t.Cleanup(func() {
		out, err := env.Kubectl("delete", "nginx", "--all", "-n", ns, "--wait=true", "--timeout=60s")
		if err != nil {
			t.Logf("cleanup: %v\n%s", err, out)
		}
		restart("")
	})
	image := func(g Gomega, name string) string {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
		return d.Spec.Template.Spec.Containers[0].Image
	}

	applyCR(g, testkit.NginxGVK, ns, "default-nginx", "replicaCount: 1")
	applyCR(g, testkit.NginxGVK, ns, "own-nginx", `{replicaCount: 1, image: {tag: "1.27.2-alpine"}}`)
	expectDeployed(t, testkit.NginxGVK, ns, "default-nginx", "InstallSuccessful")
	expectDeployed(t, testkit.NginxGVK, ns, "own-nginx", "InstallSuccessful")
	t.Log("an image left unset runs the operator's default; a tag set keeps the chart's repository")
	g.Expect(image(g, "default-nginx")).To(Equal(first))
	g.Expect(image(g, "own-nginx")).To(Equal("nginxinc/nginx-unprivileged:1.27.2-alpine"))
	cr, err := env.Get(ctx, testkit.NginxGVK, ns, "default-nginx")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cr.Object["spec"]).NotTo(HaveKey("image"), "the API server writes no default image into the spec")
	defaultBefore, err := env.ReleaseRevisions(ctx, ns, "default-nginx")
	g.Expect(err).NotTo(HaveOccurred())
	ownBefore, err := env.ReleaseRevisions(ctx, ns, "own-nginx")
	g.Expect(err).NotTo(HaveOccurred())

	t.Log("an operator with another default upgrades the release that runs it, once")
	restart(second)
	g.Eventually(func(g Gomega) string {
		return image(g, "default-nginx")
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(second))
	expectDeployed(t, testkit.NginxGVK, ns, "default-nginx", "UpgradeSuccessful")
	// Every resource is reconciled at start-up, and own-image is
	// reconciled by the periodic resync or an event no sooner; one more
	// restart reconciles both again with the same default.
	restart(second)
	g.Eventually(func() (float64, error) {
		return env.manager.metric("controller_runtime_reconcile_total", "controller=nginx-controller")
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(BeNumerically(">=", 2))
	g.Consistently(func(g Gomega) {
		revs, err := env.ReleaseRevisions(ctx, ns, "default-nginx")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(revs).To(HaveLen(len(defaultBefore)+1), "exactly one new revision for the new default")
		revs, err = env.ReleaseRevisions(ctx, ns, "own-nginx")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(revs).To(ConsistOf(ownBefore), "a resource that chose its image is not upgraded")
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Expect(image(g, "own-nginx")).To(Equal("nginxinc/nginx-unprivileged:1.27.2-alpine"))
}

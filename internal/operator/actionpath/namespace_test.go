package actionpath

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

func TestInstallInReleaseNamespace(t *testing.T) {
	g := NewWithT(t)
	rec := &recordingActionClient{}
	inner := helmclient.ActionClientGetterFunc(func(context.Context, client.Object) (helmclient.ActionInterface, error) {
		return rec, nil
	})

	// Cluster-scoped: the reconciler passes obj.GetNamespace() == "".
	acg := &getter{base: inner, nsFor: watchconfig.ReleaseNamespaceMapper(true, "releases"), layers: []Layer{{Name: "release namespace", Wrap: installInReleaseNamespace}}}
	tenant := helmtest.Object(tenantGVK, "", "acme")
	ac, err := acg.ActionClientFor(t.Context(), tenant)
	g.Expect(err).NotTo(HaveOccurred())

	rel, err := ac.Install("acme", tenant.GetNamespace(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Namespace).To(Equal("releases"))
	g.Expect(rec.installNS).To(Equal("releases"))

	_, err = ac.Upgrade("acme", tenant.GetNamespace(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.upgradeNS).To(Equal("releases"))

	// Namespaced: the custom resource's namespace is kept.
	acg = &getter{base: inner, nsFor: watchconfig.ReleaseNamespaceMapper(false, "releases"), layers: []Layer{{Name: "release namespace", Wrap: installInReleaseNamespace}}}
	widget := helmtest.Object(widgetGVK, "team-a", "web")
	ac, err = acg.ActionClientFor(t.Context(), widget)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.Install("web", widget.GetNamespace(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.installNS).To(Equal("team-a"))

	// Mapping failures surface before any Helm call.
	_, err = acg.ActionClientFor(t.Context(), helmtest.Object(widgetGVK, "", "web"))
	g.Expect(err).To(MatchError(ContainSubstring("map release namespace")))

	// Errors of the wrapped getter are returned as they are.
	boom := errors.New("boom")
	acg = &getter{
		layers: []Layer{{Name: "release namespace", Wrap: installInReleaseNamespace}},
		base: helmclient.ActionClientGetterFunc(func(context.Context, client.Object) (helmclient.ActionInterface, error) {
			return nil, boom
		}),
		nsFor: watchconfig.ReleaseNamespaceMapper(true, "releases"),
	}
	_, err = acg.ActionClientFor(t.Context(), tenant)
	g.Expect(err).To(MatchError(boom))
}

package actionpath

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/release"
)

func TestDigestActionClient(t *testing.T) {
	g := NewWithT(t)
	chrt := helmtest.Chart(nil)
	vals := map[string]interface{}{"greeting": "hi"}
	digest, _, err := release.Digest(release.DigestChart(chrt), vals, nil)
	g.Expect(err).NotTo(HaveOccurred())
	inner := newFakeReleaseClient()

	t.Log("install records the digest of the chart and the final values")
	rel, err := newDigestClient(inner).Install("web", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Labels).To(HaveKeyWithValue(release.DigestLabel, digest))

	t.Log("a reconcile of the unchanged release reads it once and skips the dry-run")
	c := newDigestClient(inner)
	inner.gets = 0
	cur, err := c.Get("web") // the library's status read
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Get("web") // its release-state read
	g.Expect(err).NotTo(HaveOccurred())
	spec, err := c.Upgrade("web", "ns", helmtest.Chart(nil), map[string]interface{}{"greeting": "hi"}, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(spec.Manifest).To(Equal(cur.Manifest))
	g.Expect(inner.dryRuns).To(BeZero())
	g.Expect(inner.gets).To(Equal(1))

	t.Log("an edited value goes to the dry-run, and the upgrade records the new digest")
	edited := map[string]interface{}{"greeting": "bonjour"}
	c = newDigestClient(inner)
	spec, err = c.Upgrade("web", "ns", chrt, edited, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(1))
	g.Expect(spec.Manifest).NotTo(Equal(cur.Manifest))
	rel, err = c.Upgrade("web", "ns", chrt, edited)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(2))
	editedDigest, _, _ := release.Digest(release.DigestChart(chrt), edited, nil)
	g.Expect(rel.Labels).To(HaveKeyWithValue(release.DigestLabel, editedDigest))
	t.Log("the client reads the release again after changing it")
	got, err := c.Get("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Version).To(Equal(2))

	t.Log("a new chart (a new operator version) goes to the dry-run")
	newChart := helmtest.Chart(func(c *chart.Chart) { c.Templates[0].Data = []byte("greeting: {{ .Values.greeting | quote }}") })
	_, err = newDigestClient(inner).Upgrade("web", "ns", newChart, edited, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(2))

	t.Log("a release that is not deployed (failed) goes to the dry-run")
	failed, err := inner.cfg.Releases.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	failed.Info.Status = hrelease.StatusFailed
	_, err = newDigestClient(inner).Upgrade("web", "ns", chrt, edited, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(3))
	failed.Info.Status = hrelease.StatusDeployed

	t.Log("a chart that renders the same records its digest on the deployed revision; the next dry-run is skipped")
	sameRender := helmtest.Chart(func(c *chart.Chart) { c.Metadata.Version = "1.0.1" })
	sameDigest, _, _ := release.Digest(release.DigestChart(sameRender), edited, nil)
	_, err = newDigestClient(inner).Upgrade("web", "ns", sameRender, edited, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(4))
	stored, err := inner.cfg.Releases.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored.Version).To(Equal(2)) // no new revision
	g.Expect(stored.Labels).To(HaveKeyWithValue(release.DigestLabel, sameDigest))
	_, err = newDigestClient(inner).Upgrade("web", "ns", sameRender, edited, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(4))
	g.Expect(inner.upgrades).To(Equal(1))

	t.Log("a release installed without a digest gets one after its first dry-run")
	_, err = inner.Install("old", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = newDigestClient(inner).Upgrade("old", "ns", chrt, vals, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(5))
	_, err = newDigestClient(inner).Upgrade("old", "ns", chrt, vals, helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.dryRuns).To(Equal(5))

	t.Log("a chart calling lookup always goes to the dry-run")
	lookup := helmtest.Chart(func(c *chart.Chart) { c.Templates[0].Data = []byte(`{{ lookup "v1" "Secret" "" "x" }}`) })
	_, err = newDigestClient(inner).Install("live", "ns", lookup, vals)
	g.Expect(err).NotTo(HaveOccurred())
	for range 2 {
		_, err = newDigestClient(inner).Upgrade("live", "ns", lookup, vals, helmtest.DryRun)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(inner.dryRuns).To(Equal(7))

	t.Log("a missing release is reported as such, and remembered until an install")
	c = newDigestClient(inner)
	inner.gets = 0
	for range 2 {
		_, err = c.Get("none")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	}
	g.Expect(inner.gets).To(Equal(1))
	_, err = c.Install("none", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Get("none")
	g.Expect(err).NotTo(HaveOccurred())
}

package actionpath

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

func TestReleaseMemo(t *testing.T) {
	g := NewWithT(t)
	lib := newFakeReleaseClient()
	chrt, vals := helmtest.Chart(nil), map[string]interface{}{"greeting": "hi"}
	_, err := lib.Install("web", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	ac := stack(t.Context(), target{}, lib, []Layer{{Name: "release memo", Wrap: rememberRelease}})

	lib.gets = 0
	for range 3 {
		rel, err := ac.Get("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rel.Version).To(Equal(1))
	}
	g.Expect(lib.gets).To(Equal(1)) // read once

	t.Log("a write to storage by anyone below or above forgets it")
	cur, err := lib.cfg.Releases.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	updated := *cur
	updated.Labels = map[string]string{"x": "y"}
	g.Expect(lib.cfg.Releases.Update(&updated)).To(Succeed())
	rel, err := ac.Get("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Labels).To(HaveKeyWithValue("x", "y"))
	g.Expect(lib.gets).To(Equal(2))

	t.Log("an upgrade stores a revision; the next read sees it")
	_, err = ac.Upgrade("web", "ns", chrt, map[string]interface{}{"greeting": "bonjour"})
	g.Expect(err).NotTo(HaveOccurred())
	rel, err = ac.Get("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(2))

	t.Log("a missing release is remembered as missing, until an install")
	for range 2 {
		_, err = ac.Get("none")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	}
	g.Expect(lib.gets).To(Equal(4))
	_, err = ac.Install("none", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.Get("none")
	g.Expect(err).NotTo(HaveOccurred())
}

package helmstorage

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// countingDriver counts the queries that reach a release storage driver.
type countingDriver struct {
	driver.Driver
	queries int
}

func (d *countingDriver) Query(labels map[string]string) ([]*release.Release, error) {
	d.queries++
	return d.Driver.Query(labels)
}

func TestRecordsMemo(t *testing.T) {
	g := NewWithT(t)
	below := &countingDriver{Driver: driver.NewMemory()}
	forgot := 0
	memo := NewMemo(below)
	memo.OnWrite(func() { forgot++ })
	records := storage.Init(memo)
	rev := func(v int, st release.Status) *release.Release {
		return &release.Release{Name: "web", Namespace: "ns", Version: v, Info: &release.Info{Status: st}}
	}
	g.Expect(below.Create("sh.helm.release.v1.web.v1", rev(1, release.StatusSuperseded))).To(Succeed())
	g.Expect(below.Create("sh.helm.release.v1.web.v2", rev(2, release.StatusDeployed))).To(Succeed())

	t.Log("Helm's reads of one release within an action: one query")
	last, err := records.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last.Version).To(Equal(2))
	deployed, err := records.Deployed("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deployed.Version).To(Equal(2))
	history, err := records.History("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history).To(HaveLen(2))
	g.Expect(below.queries).To(Equal(1))

	t.Log("a status no record has is not found, as the driver says it")
	_, err = memo.Query(map[string]string{"name": "web", "owner": "helm", "status": "pending-upgrade"})
	g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	g.Expect(below.queries).To(Equal(1))

	t.Log("a write forgets the list and what the action client read; the next read sees it")
	g.Expect(records.Create(rev(3, release.StatusPendingUpgrade))).To(Succeed())
	g.Expect(forgot).To(Equal(1))
	last, err = records.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last.Version).To(Equal(3))
	g.Expect(below.queries).To(Equal(2))
	pending, err := memo.Query(map[string]string{"name": "web", "owner": "helm", "status": "pending-upgrade"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pending).To(HaveLen(1))
	g.Expect(below.queries).To(Equal(2))

	t.Log("a release with no records is remembered as none, until a write")
	for range 2 {
		_, err = records.History("api")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	}
	g.Expect(below.queries).To(Equal(3))

	t.Log("queries of no one release go to the driver")
	all, err := memo.Query(map[string]string{"owner": "helm"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(HaveLen(3))
	g.Expect(below.queries).To(Equal(4))
}

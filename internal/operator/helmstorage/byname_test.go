package helmstorage

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// countingGets counts the reads by name and the queries that reach a
// release storage driver.
type countingGets struct {
	countingDriver
	gets int
}

func (d *countingGets) Get(key string) (*release.Release, error) {
	d.gets++
	return d.Driver.Get(key)
}

// staticIndex is a record index that holds what a test says.
type staticIndex struct {
	versions []int
	err      error
}

func (i *staticIndex) Versions(context.Context, string, string) ([]int, error) {
	return i.versions, i.err
}

func TestRecordsReadByName(t *testing.T) {
	rev := func(v int, st release.Status) *release.Release {
		return &release.Release{Name: "web", Namespace: "ns", Version: v, Info: &release.Info{Status: st}}
	}
	setup := func(t *testing.T, stored int, index *staticIndex) (*WithT, *countingGets, *storage.Storage) {
		g := NewWithT(t)
		below := &countingGets{countingDriver: countingDriver{Driver: driver.NewMemory()}}
		for v := 1; v <= stored; v++ {
			st := release.StatusSuperseded
			if v == stored {
				st = release.StatusDeployed
			}
			g.Expect(below.Driver.Create(recordKey("web", v), rev(v, st))).To(Succeed())
		}
		return g, below, storage.Init(NewIndexedMemo(context.Background(), below, index, "ns"))
	}

	t.Run("an index that agrees: one GET per record and one for the next revision, no list", func(t *testing.T) {
		g, below, records := setup(t, 2, &staticIndex{versions: []int{2, 1}})
		last, err := records.Last("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Version).To(Equal(2))
		deployed, err := records.Deployed("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(deployed.Version).To(Equal(2))
		superseded, err := records.Query(map[string]string{"name": "web", "owner": "helm", "status": "superseded"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(superseded).To(HaveLen(1))
		g.Expect(below.gets).To(Equal(3))
		g.Expect(below.queries).To(BeZero())
	})

	t.Run("no records: one GET of the first revision", func(t *testing.T) {
		g, below, records := setup(t, 0, &staticIndex{})
		_, err := records.History("web")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
		g.Expect(below.gets).To(Equal(1))
		g.Expect(below.queries).To(BeZero())
	})

	t.Run("an index that lags a new revision: the list", func(t *testing.T) {
		g, below, records := setup(t, 2, &staticIndex{versions: []int{1}})
		last, err := records.Last("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Version).To(Equal(2))
		g.Expect(below.queries).To(Equal(1))
	})

	t.Run("an index that lags the first revision: the list", func(t *testing.T) {
		g, below, records := setup(t, 1, &staticIndex{})
		last, err := records.Last("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Version).To(Equal(1))
		g.Expect(below.queries).To(Equal(1))
	})

	t.Run("an index that holds a deleted revision: the list", func(t *testing.T) {
		g, below, records := setup(t, 2, &staticIndex{versions: []int{1, 2}})
		_, err := below.Delete(recordKey("web", 1))
		g.Expect(err).NotTo(HaveOccurred())
		history, err := records.History("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history).To(HaveLen(1))
		g.Expect(below.queries).To(Equal(1))
	})

	t.Run("more records than MaxRecordsByName: the list", func(t *testing.T) {
		g, below, records := setup(t, MaxRecordsByName+1, &staticIndex{versions: []int{1, 2, 3, 4}})
		history, err := records.History("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history).To(HaveLen(MaxRecordsByName + 1))
		g.Expect(below.gets).To(BeZero())
		g.Expect(below.queries).To(Equal(1))
	})

	t.Run("an index that fails: the list", func(t *testing.T) {
		g, below, records := setup(t, 1, &staticIndex{err: errors.New("cache not started")})
		last, err := records.Last("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Version).To(Equal(1))
		g.Expect(below.queries).To(Equal(1))
	})
}

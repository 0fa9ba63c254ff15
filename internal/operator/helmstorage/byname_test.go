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

// staticIndex is a record index that holds what a test says, with no
// resourceVersions.
type staticIndex struct {
	versions []int
	err      error
}

func (i *staticIndex) Records(context.Context, string, string) ([]IndexedRecord, error) {
	records := make([]IndexedRecord, 0, len(i.versions))
	for _, v := range i.versions {
		records = append(records, IndexedRecord{Version: v})
	}
	return records, i.err
}

// rev is revision v of release ns/web, in status st.
func rev(v int, st release.Status) *release.Release {
	return &release.Release{Name: "web", Namespace: "ns", Version: v, Info: &release.Info{Status: st}}
}

// storedRevisions is a driver holding revisions 1 to n of release ns/web,
// the last one deployed, the others superseded.
func storedRevisions(g *WithT, n int) *countingGets {
	below := &countingGets{countingDriver: countingDriver{Driver: driver.NewMemory()}}
	for v := 1; v <= n; v++ {
		st := release.StatusSuperseded
		if v == n {
			st = release.StatusDeployed
		}
		g.Expect(below.Driver.Create(recordKey("web", v), rev(v, st))).To(Succeed())
	}
	return below
}

func TestRecordsReadByName(t *testing.T) {
	setup := func(t *testing.T, stored int, index *staticIndex) (*WithT, *countingGets, *storage.Storage) {
		g := NewWithT(t)
		below := storedRevisions(g, stored)
		return g, below, storage.Init(NewIndexedMemo(context.Background(), below, index, nil, "ns"))
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

// TestFirstInstallTakesTheIndexsWord: the absence of the records of a
// release this process never stored is taken from the index without a
// read; if a record was stored meanwhile, the API server refuses the first
// record's create, and every later read of the release (the failed
// install's clean-up starts with one) is refused too, so that nothing of
// that release is deleted. A release this process stored is read.
func TestFirstInstallTakesTheIndexsWord(t *testing.T) {
	pending := func(v int) *release.Release { return rev(v, release.StatusPendingInstall) }
	setup := func(stored int, own *OwnRecords) (*countingGets, *storage.Storage) {
		below := &countingGets{countingDriver: countingDriver{Driver: driver.NewMemory()}}
		for v := 1; v <= stored; v++ {
			if err := below.Create(recordKey("web", v), pending(v)); err != nil {
				t.Fatal(err)
			}
		}
		return below, storage.Init(NewIndexedMemo(context.Background(), below, &staticIndex{}, own, "ns"))
	}

	t.Run("no record anywhere: no read, and the install stores its record", func(t *testing.T) {
		g := NewWithT(t)
		own := &OwnRecords{}
		below, records := setup(0, own)
		_, err := records.History("web")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
		g.Expect(below.gets).To(BeZero())
		g.Expect(records.Create(pending(1))).To(Succeed())
		latest, _ := own.latest("ns", "web")
		g.Expect(latest).To(Equal(1))
	})

	t.Run("a record the index had not seen: the create and every later read refused", func(t *testing.T) {
		g := NewWithT(t)
		below, records := setup(1, &OwnRecords{})
		_, err := records.History("web")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
		g.Expect(records.Create(pending(1))).To(MatchError(driver.ErrReleaseExists))
		_, err = records.History("web")
		g.Expect(err).To(MatchError(ErrUnseenRecord))
		_, err = records.Deployed("web")
		g.Expect(err).To(HaveOccurred())
		g.Expect(below.gets).To(BeZero())
		g.Expect(below.Driver.Get(recordKey("web", 1))).NotTo(BeNil(), "the record is still there")
	})

	t.Run("a release this process stored: its absence is read", func(t *testing.T) {
		g := NewWithT(t)
		own := &OwnRecords{}
		own.note("ns", "web", 1)
		below, records := setup(1, own)
		h, err := records.History("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h).To(HaveLen(1), "the record the index lags is found")
		g.Expect(below.gets).To(Equal(1))
	})
}

// TestOwnLastRecordTakesTheIndexsWord: when the index's latest revision of
// a release is the latest this process stored, the next revision is not
// read; a record stored since by anyone else makes the API server refuse
// the action's next record, and every later read of the release is
// refused. Any other latest revision, or a latest deleted since, and the
// next revision is read.
func TestOwnLastRecordTakesTheIndexsWord(t *testing.T) {
	setup := func(t *testing.T, stored, ownLatest int, index []int) (*WithT, *countingGets, *OwnRecords, *storage.Storage) {
		g := NewWithT(t)
		below := storedRevisions(g, stored)
		own := &OwnRecords{}
		if ownLatest > 0 {
			own.note("ns", "web", ownLatest)
		}
		return g, below, own, storage.Init(NewIndexedMemo(context.Background(), below, &staticIndex{versions: index}, own, "ns"))
	}

	t.Run("the index holds this process's last record: one GET per record, none for the next", func(t *testing.T) {
		g, below, own, records := setup(t, 2, 2, []int{1, 2})
		deployed, err := records.Deployed("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(deployed.Version).To(Equal(2))
		g.Expect(below.gets).To(Equal(2))
		g.Expect(below.queries).To(BeZero())
		g.Expect(records.Create(rev(3, release.StatusPendingUpgrade))).To(Succeed())
		latest, _ := own.latest("ns", "web")
		g.Expect(latest).To(Equal(3))
	})

	t.Run("a record stored since that the index lags: the next create and every later read refused", func(t *testing.T) {
		g, below, _, records := setup(t, 3, 2, []int{1, 2})
		last, err := records.Last("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Version).To(Equal(2))
		g.Expect(records.Create(rev(3, release.StatusPendingUpgrade))).To(MatchError(driver.ErrReleaseExists))
		_, err = records.History("web")
		g.Expect(err).To(MatchError(ErrUnseenRecord))
		r, err := below.Driver.Get(recordKey("web", 3))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Info.Status).To(Equal(release.StatusDeployed), "the other writer's record is left as it was")
	})

	t.Run("the index's latest is not this process's: the next revision is read", func(t *testing.T) {
		g, below, _, records := setup(t, 2, 1, []int{1, 2})
		_, err := records.Deployed("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(below.gets).To(Equal(3))
	})

	t.Run("this process's last record deleted since: the next revision is read", func(t *testing.T) {
		g, below, own, records := setup(t, 2, 2, []int{1})
		_, err := records.Delete("web", 2)
		g.Expect(err).NotTo(HaveOccurred())
		latest, ok := own.latest("ns", "web")
		g.Expect(ok).To(BeTrue())
		g.Expect(latest).To(BeZero())
		_, err = records.Deployed("web")
		g.Expect(err).To(HaveOccurred(), "revision 1 is superseded, none is deployed")
		g.Expect(below.gets).To(Equal(2), "revision 1, then the next one")
	})
}

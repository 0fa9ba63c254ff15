package helmstorage

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	prelease "github.com/acme/platform-operator/internal/operator/release"
)

// countingWrites counts the reads by name and the writes that reach a
// release storage driver.
type countingWrites struct {
	countingGets
	creates, updates, deletes int
}

func (d *countingWrites) Create(key string, rls *release.Release) error {
	d.creates++
	return d.Driver.Create(key, rls)
}

func (d *countingWrites) Update(key string, rls *release.Release) error {
	d.updates++
	return d.Driver.Update(key, rls)
}

func (d *countingWrites) Delete(key string) (*release.Release, error) {
	d.deletes++
	return d.Driver.Delete(key)
}

// TestFirstInstallHoldsItsPendingRecord: the pending record of the first
// install of a release this process never stored is held in memory, after
// one read confirms there is no record, and the install's outcome is
// stored with one create; reads through the memo see the held record.
func TestFirstInstallHoldsItsPendingRecord(t *testing.T) {
	setup := func(own *OwnRecords) (*countingWrites, *Memo, *storage.Storage) {
		below := &countingWrites{countingGets: countingGets{countingDriver: countingDriver{Driver: driver.NewMemory()}}}
		memo := NewIndexedMemo(context.Background(), below, &staticIndex{}, own, "ns")
		return below, memo, storage.Init(memo)
	}
	firstRead := func(g *WithT, records *storage.Storage) {
		_, err := records.History("web")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	}

	t.Run("held after one read, stored once with the outcome", func(t *testing.T) {
		g := NewWithT(t)
		own := &OwnRecords{}
		below, memo, records := setup(own)
		forgot := 0
		memo.OnWrite(func() { forgot++ })
		firstRead(g, records)

		g.Expect(records.Create(rev(1, release.StatusPendingInstall))).To(Succeed())
		g.Expect(below.gets).To(Equal(1), "the read that confirms there is no record")
		g.Expect(below.creates).To(BeZero())
		g.Expect(forgot).To(Equal(1), "the layers above forget that there was none")
		last, err := records.Last("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Info.Status).To(Equal(release.StatusPendingInstall))
		got, err := records.Get("web", 1)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Info.Status).To(Equal(release.StatusPendingInstall))
		_, err = records.Deployed("web")
		g.Expect(err).To(HaveOccurred())
		_, err = below.Driver.Get(recordKey("web", 1))
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound), "nothing stored yet")

		g.Expect(records.Update(rev(1, release.StatusDeployed))).To(Succeed())
		g.Expect(below.creates).To(Equal(1))
		g.Expect(below.updates).To(BeZero())
		stored, err := below.Driver.Get(recordKey("web", 1))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Info.Status).To(Equal(release.StatusDeployed))
		latest, _ := own.latest("ns", "web")
		g.Expect(latest).To(Equal(1))
		deployed, err := records.Deployed("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(deployed.Version).To(Equal(1))
	})

	t.Run("a second outcome is an update", func(t *testing.T) {
		g := NewWithT(t)
		below, _, records := setup(&OwnRecords{})
		firstRead(g, records)
		g.Expect(records.Create(rev(1, release.StatusPendingInstall))).To(Succeed())
		g.Expect(records.Update(rev(1, release.StatusFailed))).To(Succeed())
		g.Expect(records.Update(rev(1, release.StatusDeployed))).To(Succeed())
		g.Expect(below.creates).To(Equal(1))
		g.Expect(below.updates).To(Equal(1))
	})

	t.Run("deleted while held: nothing sent, nothing left", func(t *testing.T) {
		g := NewWithT(t)
		below, _, records := setup(&OwnRecords{})
		firstRead(g, records)
		g.Expect(records.Create(rev(1, release.StatusPendingInstall))).To(Succeed())
		gone, err := records.Delete("web", 1)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gone.Version).To(Equal(1))
		g.Expect(below.deletes).To(BeZero())
		_, err = records.History("web")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	})

	t.Run("a record too large for a Secret: refused before anything is sent", func(t *testing.T) {
		g := NewWithT(t)
		below, _, records := setup(&OwnRecords{})
		firstRead(g, records)
		noise := make([]byte, 1<<20)
		_, _ = rand.Read(noise)
		big := rev(1, release.StatusPendingInstall)
		big.Manifest = base64.StdEncoding.EncodeToString(noise)
		var tooLarge *prelease.RecordTooLargeError
		err := records.Create(big)
		g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "got %v", err)
		g.Expect(below.gets + below.creates).To(BeZero())
	})

	held := func(rls *release.Release) func(g *WithT, own *OwnRecords) {
		return func(g *WithT, own *OwnRecords) {
			below, _, records := setup(own)
			firstRead(g, records)
			g.Expect(records.Create(rls)).To(Succeed())
			g.Expect(below.creates).To(Equal(1), "stored at once")
		}
	}
	t.Run("a release with hooks: stored at once", func(t *testing.T) {
		rls := rev(1, release.StatusPendingInstall)
		rls.Hooks = []*release.Hook{{Name: "wait", Events: []release.HookEvent{release.HookPreInstall}}}
		held(rls)(NewWithT(t), &OwnRecords{})
	})
	t.Run("a revision stored by a shard: stored at once", func(t *testing.T) {
		rls := rev(1, release.StatusPendingInstall)
		rls.Labels = map[string]string{prelease.ShardLabel: "b"}
		held(rls)(NewWithT(t), &OwnRecords{})
	})
	t.Run("a release this process stored before: stored at once", func(t *testing.T) {
		own := &OwnRecords{}
		own.note("ns", "web", 1)
		own.deleted("ns", "web", 1)
		held(rev(1, release.StatusPendingInstall))(NewWithT(t), own)
	})
}

package helmstorage

import (
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	prelease "github.com/acme/platform-operator/internal/operator/release"
)

// A Helm install stores its first record as pending-install before it
// creates any object, and rewrites it as deployed (or failed) when it
// ends: two writes of the largest object of a release, each gzipped and
// each a watch event. For the first install of a release this process
// never stored, the memo holds that pending record in memory instead and
// stores the outcome with one create. What the pending record did, and
// what takes its place:
//
//   - It confirmed that no record exists before any object is touched (the
//     API server refuses the create). The memo reads the record's name
//     instead, from the API server, before Helm creates anything: a record
//     found refuses the install as the create did (driver.ErrReleaseExists,
//     and every later read of the release is refused, ErrUnseenRecord).
//   - It marked the release as in progress for anyone else about to act on
//     it. The only other actors on a release of this process are another
//     shard after a resource moves (so a revision stored with a shard is
//     never held) and a process that waits on hooks for minutes (so a
//     release with hooks is never held); a person running helm during the
//     install sees no release until it ends, rather than a pending one.
//   - It was what a killed process left behind, for the stale-pending
//     unlock (actionpath/pending.go). A held record dies with the process;
//     the objects created meanwhile carry Helm's ownership metadata, so the
//     next install adopts them.
//   - Its size was checked before any object was created. The held record
//     is checked the same way (prelease.CheckRecord) when it is held.
//
// A record stored by someone else between the read and the final create
// makes the API server refuse that create; Helm only logs it, the memo
// refuses every later read of the release, and the next reconcile reads
// the records anew.

// mayHoldFirst reports whether rls is a first install's pending record the
// memo may hold: revision 1 of a release whose absence was taken from the
// index (readByName), with no hooks and no shard.
func (d *Memo) mayHoldFirst(rls *release.Release) bool {
	if rls.Version != 1 || rls.Info == nil || rls.Info.Status != release.StatusPendingInstall ||
		len(rls.Hooks) > 0 || rls.Labels[prelease.ShardLabel] != "" {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first == nil && rls.Name == d.byName.unconfirmed
}

// holdFirst holds rls, the pending record named key, once the API server
// says there is no record of that name and the record would fit a Secret.
func (d *Memo) holdFirst(key string, rls *release.Release) error {
	if err := prelease.CheckRecord(rls); err != nil {
		return err
	}
	switch _, err := d.Driver.Get(key); {
	case err == nil:
		d.noteWrite(rls.Name, rls.Version, driver.ErrReleaseExists)
		return driver.ErrReleaseExists
	case !errors.Is(err, driver.ErrReleaseNotFound):
		return fmt.Errorf("create: failed to read %s: %w", key, err)
	}
	held := *rls
	info := *rls.Info
	held.Info = &info
	d.mu.Lock()
	d.first = &heldRecord{key: key, rls: &held}
	d.mu.Unlock()
	d.drop()
	return nil
}

// takeFirst returns the held first record named key and stops holding
// it; nil when none is held under key.
func (d *Memo) takeFirst(key string) *heldRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	first := d.first
	if first == nil || first.key != key {
		return nil
	}
	d.first = nil
	return first
}

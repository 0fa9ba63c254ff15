package helmstorage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// RecordIndex tells which revisions of a release have a record, from a
// cache of the records' metadata that may lag the API server.
type RecordIndex interface {
	// Versions returns the revisions of release's records in namespace
	// that the cache holds.
	Versions(ctx context.Context, namespace, release string) ([]int, error)
}

// MaxRecordsByName is the most records a release may have for the memo to
// read them by name: each costs one GET, where the list costs one request
// whatever the count.
const MaxRecordsByName = 3

// NewIndexedMemo returns d under a memo that reads a release's records
// by the names index holds, in namespace, when it can (see readByName).
// own, when set, are the releases of which this process stored records:
// the first install of any other is not confirmed by a read.
func NewIndexedMemo(ctx context.Context, d driver.Driver, index RecordIndex, own *OwnRecords, namespace string) *Memo {
	return &Memo{Driver: d, byName: byName{ctx: ctx, index: index, own: own, namespace: namespace}}
}

// byName is where a memo looks up the names of a release's records.
type byName struct {
	ctx       context.Context
	index     RecordIndex
	own       *OwnRecords
	namespace string
	// unconfirmed is the release whose absence was taken from the index
	// without a read; refused, that release once the API server refused
	// to store its first record because one exists (see readByName).
	unconfirmed, refused string
}

// OwnRecords are the releases, by namespace and name, of which this
// process stored a record since it started, each with the latest revision
// it stored. The zero value is ready to use; it is shared by every memo of
// the process.
type OwnRecords struct {
	mu sync.Mutex
	// releases holds the latest revision this process stored of each;
	// 0 once that revision was deleted (an uninstall, a record pruned).
	releases map[string]int
}

func (o *OwnRecords) note(namespace, name string, version int) {
	if o == nil {
		return
	}
	o.mu.Lock()
	if o.releases == nil {
		o.releases = map[string]int{}
	}
	o.releases[namespace+"/"+name] = max(o.releases[namespace+"/"+name], version)
	o.mu.Unlock()
}

// deleted notes that revision version of a release was deleted.
func (o *OwnRecords) deleted(namespace, name string, version int) {
	if o == nil {
		return
	}
	o.mu.Lock()
	if latest, ok := o.releases[namespace+"/"+name]; ok && version >= latest {
		o.releases[namespace+"/"+name] = 0
	}
	o.mu.Unlock()
}

// latest returns the latest revision of a release this process stored,
// 0 when it was deleted since, and whether it stored any.
func (o *OwnRecords) latest(namespace, name string) (int, bool) {
	if o == nil {
		return 0, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.releases[namespace+"/"+name]
	return v, ok
}

// ErrUnseenRecord is the answer to every read of a release's records
// after the API server refused its first record because one exists,
// which the runtime's cache had not seen: the action fails before it
// writes anything, its clean-up (the uninstall of a failed install, which
// starts by reading the records) deletes nothing, and the next reconcile
// reads the records anew.
var ErrUnseenRecord = errors.New("the release has a record the runtime's cache had not seen yet; retrying")

// readByName reads the records of release name one by one, by the names
// the index holds, and reports whether it could.
//
// Listing the records by label costs the API server a pass over every
// Secret of the namespace, so its cost grows with the releases there; a
// read by name costs the same at any count. The index is a cache, which
// can lag: what it returns is trusted only when the API server confirms
// it. Every revision it names must exist (one may have been deleted
// since), and the revision after the index's latest must not (a newer one
// than the index knows means it lags). Helm writes revisions one after the
// other and the cache sees the writes in order, so a cache that saw
// revision n saw every one before it. Any doubt (the index fails, holds
// more than MaxRecordsByName records, or the API server disagrees) and the
// memo lists the records instead. Every record returned is what the API
// server returned, never the cache's copy.
//
// The next revision is not read when the index's latest is the latest
// this process stored (OwnRecords), nor, for a release this process never
// stored, when the index holds none (a first install): the cache has seen
// this process's own last write, and a record stored since by anyone else
// (helm, another operator) makes the API server refuse the action's own
// next record, before the action changes any object. Then every later
// read of the release through this memo is refused (ErrUnseenRecord), so
// that a clean-up or a rollback of the failed action deletes and writes
// nothing, and the next reconcile reads anew.
func (d *Memo) readByName(name string) ([]*release.Release, bool) {
	if d.byName.index == nil {
		return nil, false
	}
	versions, err := d.byName.index.Versions(d.byName.ctx, d.byName.namespace, name)
	if err != nil || len(versions) > MaxRecordsByName {
		return nil, false
	}
	slices.Sort(versions)
	records := make([]*release.Release, 0, len(versions))
	for _, v := range versions {
		r, err := d.Get(recordKey(name, v))
		if err != nil {
			return nil, false // gone since the index saw it, or the read failed
		}
		records = append(records, r)
	}
	indexed := 0
	if len(versions) > 0 {
		indexed = versions[len(versions)-1]
	}
	if d.indexHasOurLastWrite(name, indexed) {
		d.byName.unconfirmed = name
		return records, true
	}
	// Last: Helm stores a new revision before it updates the one it
	// supersedes, so a write that raced the reads above shows here.
	if _, err := d.Get(recordKey(name, indexed+1)); !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, false // newer than the index knows, or the read failed
	}
	return records, true
}

// indexHasOurLastWrite reports whether the index, whose latest revision
// of release name is indexed, has seen the last record of it that this
// process wrote, so that the next revision need not be read.
func (d *Memo) indexHasOurLastWrite(name string, indexed int) bool {
	if d.byName.own == nil {
		return false // no record of this process's writes is kept
	}
	stored, own := d.byName.own.latest(d.byName.namespace, name)
	if !own {
		// Never stored by this process: the index's word that there is
		// no record is taken (a first install); any record is read.
		return indexed == 0
	}
	// Stored by this process: its latest revision is the index's latest,
	// unless that revision was deleted since (stored == 0).
	return stored > 0 && stored == indexed
}

// noteWrite notes a write of revision version of release name that ended
// in err: one stored is noted as this process's (OwnRecords), and a new
// record refused because it exists, after the memo took the index's word
// for the release (readByName), refuses every later read of the release
// (ErrUnseenRecord).
func (d *Memo) noteWrite(name string, version int, err error) {
	if err == nil {
		d.byName.own.note(d.byName.namespace, name, version)
		return
	}
	d.mu.Lock()
	if errors.Is(err, driver.ErrReleaseExists) && name == d.byName.unconfirmed {
		d.byName.refused = name
	}
	d.mu.Unlock()
}

// recordKey is the name of the record of revision version of release
// name, as Helm's storage names it.
func recordKey(name string, version int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version)
}

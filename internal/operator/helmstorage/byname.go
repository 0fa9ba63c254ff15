package helmstorage

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
func NewIndexedMemo(ctx context.Context, d driver.Driver, index RecordIndex, namespace string) *Memo {
	return &Memo{Driver: d, byName: byName{ctx: ctx, index: index, namespace: namespace}}
}

// byName is where a memo looks up the names of a release's records.
type byName struct {
	ctx       context.Context
	index     RecordIndex
	namespace string
}

// readByName reads the records of release name one by one, by the names
// the index holds, and reports whether it could.
//
// Listing the records by label costs the API server a pass over every
// Secret of the namespace, so its cost grows with the releases there; a
// read by name costs the same at any count. The index is a cache, which
// can lag: what it returns is trusted only when the API server confirms
// it. Every revision it names must exist (one may have been deleted
// since), and, read after them, the revision after the index's latest
// must not (a newer one than the index knows means it lags). Helm writes revisions one
// after the other and the cache sees the writes in order, so a cache that
// saw revision n saw every one before it. Any doubt (the index fails,
// holds more than MaxRecordsByName records, or the API server disagrees)
// and the memo lists the records instead. Every record returned is what
// the API server returned, never the cache's copy.
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
	next := 1
	if len(versions) > 0 {
		next = versions[len(versions)-1] + 1
	}
	// Last: Helm stores a new revision before it updates the one it
	// supersedes, so a write that raced the reads above shows here.
	if _, err := d.Get(recordKey(name, next)); !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, false // newer than the index knows, or the read failed
	}
	return records, true
}

// recordKey is the name of the record of revision version of release
// name, as Helm's storage names it.
func recordKey(name string, version int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version)
}

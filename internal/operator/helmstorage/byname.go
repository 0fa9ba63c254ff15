package helmstorage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"

	prelease "github.com/acme/platform-operator/internal/operator/release"
)

// RecordIndex tells which revisions of a release have a record, from a
// cache of the records' metadata that may lag the API server.
type RecordIndex interface {
	// Records returns the revisions of release's records in namespace
	// that the cache holds, each with the resourceVersion it holds.
	Records(ctx context.Context, namespace, release string) ([]IndexedRecord, error)
}

// IndexedRecord is a record as the index holds it.
type IndexedRecord struct {
	Version         int
	ResourceVersion string
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
// it stored, and the records this process wrote, held compactly. The zero
// value is ready to use; it is shared by every memo of the process and by
// the Secrets drivers that write the records.
type OwnRecords struct {
	mu sync.Mutex
	// releases holds the latest revision this process stored of each;
	// 0 once that revision was deleted (an uninstall, a record pruned).
	releases map[string]int
	// written holds, by namespace/Secret name, each record as this
	// process's last write of it left it (see Memo.readByName).
	written map[string]writtenRecord
}

// writtenRecord is a record as the API server returned it from a write.
type writtenRecord struct {
	resourceVersion string
	parts           prelease.RecordParts
	labels          map[string]string
}

// keepWritten holds s, a record as the API server returned it from this
// process's write. A record of another encoding than the runtime's is
// not held, and a write whose answer cannot be held drops what was.
func (o *OwnRecords) keepWritten(s *corev1.Secret) {
	if o == nil || s == nil {
		return
	}
	parts, ok := prelease.SplitRecord(s.Data["release"])
	o.mu.Lock()
	defer o.mu.Unlock()
	key := s.Namespace + "/" + s.Name
	if !ok || s.ResourceVersion == "" {
		delete(o.written, key)
		return
	}
	if o.written == nil {
		o.written = map[string]writtenRecord{}
	}
	labels := userLabels(s.Labels)
	if len(labels) == 0 {
		labels = nil // most records: no map held
	}
	o.written[key] = writtenRecord{resourceVersion: s.ResourceVersion, parts: parts, labels: labels}
}

// forgetWritten drops the record named name in namespace.
func (o *OwnRecords) forgetWritten(namespace, name string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	delete(o.written, namespace+"/"+name)
	o.mu.Unlock()
}

// readWritten returns the record named name in namespace as this
// process's last write left it, when that write gave it resourceVersion;
// false otherwise.
func (o *OwnRecords) readWritten(namespace, name, resourceVersion string) (*release.Release, bool) {
	if o == nil || resourceVersion == "" {
		return nil, false
	}
	o.mu.Lock()
	w, ok := o.written[namespace+"/"+name]
	o.mu.Unlock()
	if !ok || w.resourceVersion != resourceVersion {
		return nil, false
	}
	r, ok := w.parts.Decode()
	if !ok {
		return nil, false
	}
	r.Labels = make(map[string]string, len(w.labels)) // as Secrets.Get hands them on
	maps.Copy(r.Labels, w.labels)
	return r, true
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
// A record this process wrote is not read at all while the index shows
// the resourceVersion the API server gave that write (OwnRecords holds
// each as the write returned it): the record is then what was written,
// and the read is answered from it. A record the index shows at another
// version (written since by anyone, this process's own later write not
// yet seen) is read.
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
	indexedRecords, err := d.byName.index.Records(d.byName.ctx, d.byName.namespace, name)
	if err != nil || len(indexedRecords) > MaxRecordsByName {
		return nil, false
	}
	slices.SortFunc(indexedRecords, func(a, b IndexedRecord) int { return a.Version - b.Version })
	records := make([]*release.Release, 0, len(indexedRecords))
	for _, ir := range indexedRecords {
		key := recordKey(name, ir.Version)
		r, ok := d.byName.own.readWritten(d.byName.namespace, key, ir.ResourceVersion)
		if !ok {
			if r, err = d.Get(key); err != nil {
				return nil, false // gone since the index saw it, or the read failed
			}
		}
		records = append(records, r)
	}
	indexed := 0
	if len(indexedRecords) > 0 {
		indexed = indexedRecords[len(indexedRecords)-1].Version
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

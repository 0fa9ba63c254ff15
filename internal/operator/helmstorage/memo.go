// Package helmstorage is the release storage the runtime gives Helm: the
// Secrets of the release namespace, written as Helm's driver writes them
// but gzipped at a faster level (secrets.go), under a check that refuses a
// new record too large for a Secret before it is sent (recordsize.go), and
// a memo that reads each release's records once per action client, by
// name when the runtime's cache knows them, and from this process's own
// write of a record when the cache shows it unchanged since (byname.go).
package helmstorage

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// Memo is a release storage driver that lists the records of a release
// once and answers every query of that release from the list, until a
// write through it.
//
// Helm asks for a release's records again and again within one action (the
// latest revision and the deployed one, in the dry-run and again in the
// upgrade, the history before it stores a revision), and each is a list of
// Secrets by label, which the API server answers by going over every
// Secret of the release namespace. The first query lists all records of
// the release; every later query of that release, whatever labels it adds
// (the status), is answered from that list.
//
// The first query reads the records by name when the memo has a record
// index (see readByName), and lists them otherwise.
//
// Every write (by Helm, or by the action path: unlocking, recording the
// owner or the digest) drops the list and tells the functions given to
// OnWrite, so that nothing above ever sees a revision that storage no
// longer holds, or misses one this action client stored. Writes by another
// process between two reads are not seen, as with any read-then-write of
// Helm's: storing a revision whose number another process took fails, and
// the next reconcile reads anew.
//
// A Memo lives as long as one action client: one reconcile of one custom
// resource.
type Memo struct {
	driver.Driver

	byName byName // zero: the records are listed

	mu      sync.Mutex
	name    string             // the release whose records are held; "" when none are
	records []*release.Release // empty: none stored
	onWrite []func()
}

// NewMemo returns d under a memo that lists a release's records.
func NewMemo(d driver.Driver) *Memo {
	return &Memo{Driver: d}
}

// OnWrite calls f after every write through d.
func (d *Memo) OnWrite(f func()) {
	d.mu.Lock()
	d.onWrite = append(d.onWrite, f)
	d.mu.Unlock()
}

// Query returns the records whose labels match labels. A query of one
// release's records (Helm's labels owner=helm and name, and any others)
// is answered from the release's list.
func (d *Memo) Query(labels map[string]string) ([]*release.Release, error) {
	name, ok := labels["name"]
	if !ok || name == "" || labels["owner"] != "helm" {
		return d.Driver.Query(labels)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if name == d.byName.refused {
		return nil, fmt.Errorf("release %s: %w", name, ErrUnseenRecord)
	}
	if d.name != name {
		all, ok := d.readByName(name)
		if !ok {
			var err error
			all, err = d.Driver.Query(map[string]string{"name": name, "owner": "helm"})
			if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
				return nil, err
			}
		}
		d.name, d.records = name, all
	}
	var matched []*release.Release
	for _, r := range d.records {
		if labelsMatch(recordLabels(r), labels) {
			matched = append(matched, r)
		}
	}
	if len(matched) == 0 {
		return nil, driver.ErrReleaseNotFound // what the drivers answer
	}
	return matched, nil
}

// Create stores a record and forgets what was read.
func (d *Memo) Create(key string, rls *release.Release) error {
	defer d.drop()
	err := d.Driver.Create(key, rls)
	d.noteWrite(rls.Name, rls.Version, err)
	return err
}

// Update stores a record and forgets what was read.
func (d *Memo) Update(key string, rls *release.Release) error {
	defer d.drop()
	err := d.Driver.Update(key, rls)
	d.noteWrite(rls.Name, rls.Version, err)
	return err
}

// Delete removes a record and forgets what was read.
func (d *Memo) Delete(key string) (*release.Release, error) {
	defer d.drop()
	d.byName.own.forgetWritten(d.byName.namespace, key)
	rls, err := d.Driver.Delete(key)
	if err == nil && rls != nil {
		d.byName.own.deleted(d.byName.namespace, rls.Name, rls.Version)
	}
	return rls, err
}

// drop forgets the held list and tells the OnWrite functions.
func (d *Memo) drop() {
	d.mu.Lock()
	d.name, d.records = "", nil
	onWrite := d.onWrite
	d.mu.Unlock()
	for _, f := range onWrite {
		f()
	}
}

// recordLabels returns the labels a driver matches a record's query
// against: the storage labels Helm derives from the record (name, owner,
// status, version), under the labels the driver returned with it (the
// Secrets driver returns the stored labels, those four included, as they
// were when the record was written).
func recordLabels(r *release.Release) map[string]string {
	l := map[string]string{"name": r.Name, "owner": "helm", "version": strconv.Itoa(r.Version)}
	if r.Info != nil {
		l["status"] = r.Info.Status.String()
	}
	for k, v := range r.Labels {
		l[k] = v
	}
	return l
}

// labelsMatch reports whether have has every key of want with its value.
func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

package helmruntime

import (
	"context"
	"errors"
	"strconv"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// rememberRelease is the layer that reads the release from storage once
// per reconcile, at two levels:
//
//   - the action client's Get (the latest revision): the library's
//     reconciler, the ownership check, the digest check and the
//     stale-pending check all ask for it; each Get would also ask the API
//     server whether it is reachable;
//   - the storage driver's queries of the release's records: Helm asks for
//     them again and again within one action (the latest revision and the
//     deployed one, in the dry-run and again in the upgrade, the history
//     before it stores a revision), and each is a list of Secrets by label,
//     which the API server answers by going over every Secret of the
//     release namespace. The first query lists all records of the release;
//     every later query of that release, whatever labels it adds (the
//     status), is answered from that list.
//
// Every write to the release's storage, by Helm or by a layer above
// (unlocking, recording the owner or the digest), makes both forget what
// they read, so no layer and no step of Helm's ever sees a revision that
// storage no longer holds, or misses one this reconcile stored. Writes by
// another process between two reads of one reconcile are seen by neither,
// as with any read-then-write of Helm's: storing a revision whose number
// another process took fails, and the next reconcile reads anew.
func rememberRelease(_ context.Context, _ target, below actionClient) (actionClient, error) {
	m := &releaseMemo{actionClient: below}
	if cfg := below.Config(); cfg != nil && cfg.Releases != nil {
		cfg.Releases.Driver = &recordsMemo{Driver: cfg.Releases.Driver, forget: m.forget}
	}
	return m, nil
}

// releaseMemo remembers the latest revision of one release, or that there
// is none.
type releaseMemo struct {
	actionClient

	mu   sync.Mutex
	read bool
	name string
	rel  *release.Release
	err  error // nil or driver.ErrReleaseNotFound
}

// Get returns the latest revision of name, read once.
func (c *releaseMemo) Get(name string, opts ...helmclient.GetOption) (*release.Release, error) {
	if len(opts) > 0 { // a specific version, say: not what is remembered
		return c.actionClient.Get(name, opts...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read && c.name == name {
		return c.rel, c.err
	}
	rel, err := c.actionClient.Get(name)
	if err == nil || errors.Is(err, driver.ErrReleaseNotFound) {
		c.read, c.name, c.rel, c.err = true, name, rel, err
	}
	return rel, err
}

// forget drops what was read.
func (c *releaseMemo) forget() {
	c.mu.Lock()
	c.read, c.name, c.rel, c.err = false, "", nil, nil
	c.mu.Unlock()
}

// recordsMemo is a release storage driver that lists the records of a
// release once and answers every query of that release from the list,
// until a write through it. It calls forget after every write.
type recordsMemo struct {
	driver.Driver
	forget func()

	mu      sync.Mutex
	name    string             // the release whose records are held; "" when none are
	records []*release.Release // empty: none stored
}

// Query returns the records whose labels match labels. A query of one
// release's records (Helm's labels owner=helm and name, and any others)
// is answered from the release's list.
func (d *recordsMemo) Query(labels map[string]string) ([]*release.Release, error) {
	name, ok := labels["name"]
	if !ok || name == "" || labels["owner"] != "helm" {
		return d.Driver.Query(labels)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.name != name {
		all, err := d.Driver.Query(map[string]string{"name": name, "owner": "helm"})
		if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return nil, err
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
func (d *recordsMemo) Create(key string, rls *release.Release) error {
	defer d.drop()
	return d.Driver.Create(key, rls)
}

// Update stores a record and forgets what was read.
func (d *recordsMemo) Update(key string, rls *release.Release) error {
	defer d.drop()
	return d.Driver.Update(key, rls)
}

// Delete removes a record and forgets what was read.
func (d *recordsMemo) Delete(key string) (*release.Release, error) {
	defer d.drop()
	return d.Driver.Delete(key)
}

// drop forgets the held list and what the action client read.
func (d *recordsMemo) drop() {
	d.mu.Lock()
	d.name, d.records = "", nil
	d.mu.Unlock()
	d.forget()
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

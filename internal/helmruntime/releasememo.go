package helmruntime

import (
	"context"
	"errors"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// rememberRelease is the layer that reads the latest revision of the
// release from storage once per reconcile. The library's reconciler, the
// ownership check, the digest check and the stale-pending check all ask
// for it; each read would list and decode every stored revision. Every
// write to the release's storage, by Helm or by a layer above (unlocking,
// recording the owner or the digest), makes it forget what it read, so no
// layer ever sees a revision that storage no longer holds.
func rememberRelease(_ context.Context, _ target, below actionClient) (actionClient, error) {
	m := &releaseMemo{actionClient: below}
	if cfg := below.Config(); cfg != nil && cfg.Releases != nil {
		cfg.Releases.Driver = forgetOnWrite{Driver: cfg.Releases.Driver, forget: m.forget}
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

// forgetOnWrite is a release storage driver that calls forget after every
// write.
type forgetOnWrite struct {
	driver.Driver
	forget func()
}

func (d forgetOnWrite) Create(key string, rls *release.Release) error {
	defer d.forget()
	return d.Driver.Create(key, rls)
}

func (d forgetOnWrite) Update(key string, rls *release.Release) error {
	defer d.forget()
	return d.Driver.Update(key, rls)
}

func (d forgetOnWrite) Delete(key string) (*release.Release, error) {
	defer d.forget()
	return d.Driver.Delete(key)
}

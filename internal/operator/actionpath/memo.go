package actionpath

import (
	"context"
	"errors"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/acme/platform-operator/internal/operator/helmstorage"
)

// rememberRelease is the layer that reads the latest revision of the
// release once per reconcile: the library's reconciler, the ownership
// check, the digest check and the stale-pending check all ask for it, and
// each Get would also ask the API server whether it is reachable. (The
// storage driver's queries of the release's records are read once by the
// storage memo the config builder installs, helmstorage.Memo.)
//
// Every write to the release's storage, by Helm or by a layer above
// (unlocking, recording the owner or the digest), goes through that memo,
// which makes this one forget what it read: no layer ever sees a revision
// that storage no longer holds, or misses one this reconcile stored.
func rememberRelease(_ context.Context, _ target, below actionClient) actionClient {
	m := &releaseMemo{actionClient: below}
	if cfg := below.Config(); cfg != nil && cfg.Releases != nil {
		if d, ok := cfg.Releases.Driver.(*helmstorage.Memo); ok {
			d.OnWrite(m.forget)
		}
	}
	return m
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

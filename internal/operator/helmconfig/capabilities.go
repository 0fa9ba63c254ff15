package helmconfig

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/client-go/discovery"
)

// CapabilitiesMaxAge is how long the actions on one kind's releases share
// one view of the API server's capabilities (its version and the API
// versions it serves, .Capabilities in templates) before the next action
// fetches it again.
//
// Helm fetches it anew for every action, discovery cache invalidated: two
// discovery documents and the version, per install, upgrade and dry-run.
// A chart that installs CRDs from its crds/ directory still sees them at
// once (the action path drops the shared view around such installs); an API that appears otherwise is
// seen by the actions that start up to this long after it. Releases of
// charts that read .Capabilities are not left behind: the capabilities are
// part of their digest (see release.Digest), so their next reconcile
// renders them again.
const CapabilitiesMaxAge = 30 * time.Second

// Capabilities is the view of the API server's capabilities shared by
// the actions on one kind's releases (each kind has its own, built with its
// reconciler).
type Capabilities struct {
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	caps    *chartutil.Capabilities
	fetched time.Time
}

func NewCapabilities(maxAge time.Duration) *Capabilities {
	return &Capabilities{maxAge: maxAge, now: time.Now}
}

// Get returns a copy of the capabilities, fetched through dc when none
// were fetched in the last maxAge. Helm may change the copy.
func (c *Capabilities) Get(dc discovery.CachedDiscoveryInterface) (*chartutil.Capabilities, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refresh(dc); err != nil {
		return nil, err
	}
	return &chartutil.Capabilities{
		KubeVersion: c.caps.KubeVersion,
		APIVersions: slices.Clone(c.caps.APIVersions),
		HelmVersion: c.caps.HelmVersion,
	}, nil
}

// Reachable answers Helm's check that the API server is reachable, which
// every action makes before its first request (Get, Install, Upgrade and
// their dry-runs, Rollback, Uninstall: one GET /version each, two or three
// per reconcile). A view fetched in the last maxAge is an answer from the
// API server that recent; an older one is fetched again through dc, and
// its error is the check's. A server lost since fails the action's first
// request instead, with the request's error.
func (c *Capabilities) Reachable(dc discovery.CachedDiscoveryInterface) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refresh(dc)
}

// refresh fetches the capabilities through dc unless they were fetched in
// the last maxAge. c.mu is held.
func (c *Capabilities) refresh(dc discovery.CachedDiscoveryInterface) error {
	if c.caps != nil && c.now().Sub(c.fetched) < c.maxAge {
		return nil
	}
	caps, err := fetchCapabilities(dc)
	if err != nil {
		return err
	}
	c.caps, c.fetched = caps, c.now()
	return nil
}

// Invalidate makes the next get fetch the capabilities again.
func (c *Capabilities) Invalidate() {
	c.mu.Lock()
	c.caps = nil
	c.mu.Unlock()
}

// fetchCapabilities is what Helm does when an action starts: the server's
// version and the API versions it serves, from fresh discovery. An
// aggregated API that does not answer costs its versions, not the action,
// as in Helm.
func fetchCapabilities(dc discovery.CachedDiscoveryInterface) (*chartutil.Capabilities, error) {
	dc.Invalidate()
	version, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("get the Kubernetes server version: %w", err)
	}
	apiVersions, err := action.GetVersionSet(dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	return &chartutil.Capabilities{
		APIVersions: apiVersions,
		KubeVersion: chartutil.KubeVersion{Version: version.GitVersion, Major: version.Major, Minor: version.Minor},
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}, nil
}

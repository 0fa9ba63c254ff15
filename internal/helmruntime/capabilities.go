package helmruntime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CapabilitiesMaxAge is how long the actions on one kind's releases share
// one view of the API server's capabilities (its version and the API
// versions it serves, .Capabilities in templates) before the next action
// fetches it again.
//
// Helm fetches it anew for every action, discovery cache invalidated: two
// discovery documents and the version, per install, upgrade and dry-run.
// A chart that installs CRDs from its crds/ directory still sees them at
// once (see capabilitiesActionClient.Install); an API that appears otherwise is
// seen by the actions that start up to this long after it. Releases of
// charts that read .Capabilities are not left behind: the capabilities are
// part of their digest (see [ReleaseDigest]), so their next reconcile
// renders them again.
const CapabilitiesMaxAge = 30 * time.Second

// capabilitiesCall matches templates that read the capabilities; only
// their digests depend on them.
var capabilitiesCall = regexp.MustCompile(`\.Capabilities\b`)

// capabilitiesCache is the view of the API server's capabilities shared by
// the actions on one kind's releases (each kind has its own, built with its
// reconciler).
type capabilitiesCache struct {
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	caps    *chartutil.Capabilities
	fetched time.Time
}

func newCapabilitiesCache(maxAge time.Duration) *capabilitiesCache {
	return &capabilitiesCache{maxAge: maxAge, now: time.Now}
}

// get returns a copy of the capabilities, fetched through dc when none
// were fetched in the last maxAge. Helm may change the copy.
func (c *capabilitiesCache) get(dc discovery.CachedDiscoveryInterface) (*chartutil.Capabilities, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caps == nil || c.now().Sub(c.fetched) >= c.maxAge {
		caps, err := fetchCapabilities(dc)
		if err != nil {
			return nil, err
		}
		c.caps, c.fetched = caps, c.now()
	}
	return &chartutil.Capabilities{
		KubeVersion: c.caps.KubeVersion,
		APIVersions: slices.Clone(c.caps.APIVersions),
		HelmVersion: c.caps.HelmVersion,
	}, nil
}

// invalidate makes the next get fetch the capabilities again.
func (c *capabilitiesCache) invalidate() {
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

// capabilitiesFingerprint identifies caps in release digests.
func capabilitiesFingerprint(caps *chartutil.Capabilities) string {
	if caps == nil {
		return "none"
	}
	versions := slices.Clone(caps.APIVersions)
	slices.Sort(versions)
	h := sha256.New()
	fmt.Fprintf(h, "kube %s\napis %d\n%s", caps.KubeVersion.Version, len(versions), strings.Join(versions, "\n"))
	return hex.EncodeToString(h.Sum(nil))
}

// capabilitiesConfigGetter hands every action configuration the shared
// capabilities, so that Helm does not fetch them itself.
type capabilitiesConfigGetter struct {
	inner helmclient.ActionConfigGetter
	cache *capabilitiesCache
}

var _ helmclient.ActionConfigGetter = (*capabilitiesConfigGetter)(nil)

// withSharedCapabilities returns acg whose configurations carry the
// capabilities of cache.
func withSharedCapabilities(acg helmclient.ActionConfigGetter, cache *capabilitiesCache) helmclient.ActionConfigGetter {
	return &capabilitiesConfigGetter{inner: acg, cache: cache}
}

// ActionConfigFor returns the action configuration of obj with the shared
// capabilities.
func (g *capabilitiesConfigGetter) ActionConfigFor(ctx context.Context, obj client.Object) (*action.Configuration, error) {
	cfg, err := g.inner.ActionConfigFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	dc, err := cfg.RESTClientGetter.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("get the discovery client: %w", err)
	}
	if cfg.Capabilities, err = g.cache.get(dc); err != nil {
		return nil, fmt.Errorf("get the API server's capabilities: %w", err)
	}
	return cfg, nil
}

// layer is the layer of the action path that keeps the capabilities
// right around installs and upgrades (see capabilitiesActionClient).
func (c *capabilitiesCache) layer(_ context.Context, _ target, below actionClient) (actionClient, error) {
	return &capabilitiesActionClient{actionClient: below, cache: c}, nil
}

// capabilitiesActionClient installs charts with CRDs on fresh
// capabilities, and drops the shared ones after every release that may
// have added APIs.
type capabilitiesActionClient struct {
	actionClient
	cache *capabilitiesCache
}

// Install installs the release. Helm installs a chart's crds/ before it
// renders the templates; those must see the new APIs, so Helm fetches
// the capabilities itself then.
func (c *capabilitiesActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	crds := chrt != nil && len(chrt.CRDObjects()) > 0
	if cfg := c.Config(); crds && cfg != nil {
		cfg.Capabilities = nil
	}
	rel, err := c.actionClient.Install(name, namespace, chrt, vals, opts...)
	if crds || addsAPIs(rel) {
		c.cache.invalidate()
	}
	return rel, err
}

// Upgrade upgrades the release.
func (c *capabilitiesActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	rel, err := c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
	if err == nil && addsAPIs(rel) {
		c.cache.invalidate()
	}
	return rel, err
}

// addsAPIs reports whether rel's manifest holds objects that add APIs to
// the server: CRDs and aggregated APIServices.
func addsAPIs(rel *release.Release) bool {
	return rel != nil && apiKind.MatchString(rel.Manifest)
}

var apiKind = regexp.MustCompile(`(?m)^kind:\s*(CustomResourceDefinition|APIService)\s*$`)

package actionpath

import (
	"context"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/prometheus/client_golang/prometheus"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	hrelease "helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/postrender"
	"github.com/acme/platform-operator/internal/operator/release"
)

// Results of the dry-run upgrades the library asks for.
const (
	// DryRunSkipped: the digest matched the deployed release's.
	DryRunSkipped = "skipped"
	// DryRunRendered: the dry-run went to Helm and the API server.
	DryRunRendered = "rendered"
)

// NewDryRunCounter returns the counter of the library's dry-run upgrades,
// per kind and result (helmruntime_dry_run_upgrades_total).
func NewDryRunCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "helmruntime_dry_run_upgrades_total",
		Help: "Dry-run upgrades the Helm reconciler asked for, by kind and result: skipped (the release digest was unchanged) or rendered.",
	}, []string{"kind", "result"})
}

// digests is the layer that records the digest of every install and
// upgrade on the release, and answers a dry-run upgrade whose digest
// equals the deployed release's with that release (see
// release.DigestLabel). The digest includes the kind's post-render
// patches (post), so that a change of them upgrades the releases.
func digests(charts *release.ChartDigests, post *postrender.Renderer, dryRuns *prometheus.CounterVec, kind string, log logr.Logger) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, t target, below actionClient) actionClient {
		return &digestActionClient{
			actionClient: below,
			charts:       charts,
			postRender:   post,
			dryRuns:      dryRuns,
			kind:         kind,
			owner:        string(t.obj.GetUID()),
			log:          log.WithName("release-digest").WithValues("namespace", t.obj.GetNamespace(), "name", t.obj.GetName()),
		}
	}
}

// digestActionClient records digests and skips unchanged dry-runs.
type digestActionClient struct {
	actionClient
	charts     *release.ChartDigests
	postRender *postrender.Renderer
	dryRuns    *prometheus.CounterVec
	kind       string
	owner      string // the custom resource's UID
	log        logr.Logger
}

// capabilities are the API server's capabilities the action renders with.
func (c *digestActionClient) capabilities() *chartutil.Capabilities {
	if cfg := c.Config(); cfg != nil {
		return cfg.Capabilities
	}
	return nil
}

// digest returns the digest of a release of chrt with vals, post-rendered
// with the kind's patches.
func (c *digestActionClient) digest(chrt *chart.Chart, vals map[string]interface{}) (string, bool, error) {
	d, ok, err := release.Digest(c.charts.Of(chrt), vals, c.capabilities())
	return c.postRender.Salt(d), ok, err
}

// Install installs the release and records its digest.
func (c *digestActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*hrelease.Release, error) {
	digest, _, err := c.digest(chrt, vals)
	if err != nil {
		return nil, err
	}
	return c.actionClient.Install(name, namespace, chrt, vals, append(opts, labelInstall(map[string]string{release.DigestLabel: digest}))...)
}

// Upgrade upgrades the release and records its digest.
func (c *digestActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	digest, _, err := c.digest(chrt, vals)
	if err != nil {
		return nil, err
	}
	return c.actionClient.Upgrade(name, namespace, chrt, vals, append(opts, labelUpgrade(map[string]string{release.DigestLabel: digest}))...)
}

// DryRunUpgrade returns the deployed release without rendering anything
// when the digest equals the deployed release's; a dry-run that renders
// the deployed manifest records the digest on the deployed release, so
// that the next one is skipped.
//
// A rendering that differs from the deployed manifest in text only (see
// manifest.SameObjects: a release operator-sdk's Helm operator installed
// from the same chart and values) is answered with the deployed manifest,
// so that the library sees no change and adopts the release as it is: no
// new revision, no object rewritten.
//
// A changed digest renders, though the library upgrades after most such
// dry-runs and renders the same again. The library (getReleaseState) uses
// the dry-run for two things, and a changed digest answers neither:
//   - whether to upgrade at all: its manifest against the deployed one.
//     A digest changes without the manifest when the spec changes a value
//     no template reads, the server's capabilities change, an older
//     operator or another one recorded it, or a new chart renders the
//     same; then the library repairs drift (Reconcile) and stores no
//     revision, where an upgrade would store one, run the chart's upgrade
//     hooks and, for kinds with overrideValues, record ValueOverridden
//     Events.
//   - where a failure is reported: a render error, an object of an
//     unknown kind, a conflict with an object of another release, or a
//     confinement or record-size refusal fails the dry-run, so the
//     resource is Irreconcilable (ErrorGettingReleaseState, ReleaseFailed
//     Unknown, an UpgradeDryRunFailed Event) and Helm is not asked to
//     upgrade; failing the upgrade instead reports a failed upgrade
//     (ReleaseFailed True with UpgradeError, Irreconcilable with
//     ReconcileError, the upgrade backoff).
//
// Helm's Upgrade renders on its own and takes no rendering from outside,
// so the upgrade cannot reuse the dry-run's. TestReleaseDigestSkip and
// TestReleaseDigestRenderError (helmruntime) hold both; what the render
// costs is in docs/benchmarks.md ("The dry-run before an upgrade").
func (c *digestActionClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	digest, skippable, err := c.digest(chrt, vals)
	if err != nil {
		return nil, err
	}
	cur, err := c.Get(name)
	if err != nil || cur.Info == nil || cur.Info.Status != hrelease.StatusDeployed {
		c.dryRuns.WithLabelValues(c.kind, DryRunRendered).Inc()
		return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
	}
	if skippable && cur.Labels[release.DigestLabel] == digest {
		c.dryRuns.WithLabelValues(c.kind, DryRunSkipped).Inc()
		c.log.V(1).Info("Release digest unchanged; dry-run upgrade skipped", "release", name, "version", cur.Version)
		return cur, nil
	}
	c.dryRuns.WithLabelValues(c.kind, DryRunRendered).Inc()
	rel, err := c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
	if err != nil {
		return rel, err
	}
	if rel.Manifest != cur.Manifest {
		same, err := manifest.SameObjects(rel.Manifest, cur.Manifest, c.owner)
		if err != nil {
			c.log.Info("Could not compare the rendered manifest with the deployed one; upgrading", "release", name, "error", err.Error())
		}
		if !same {
			return rel, nil
		}
		c.log.Info("Release renders the objects it has deployed, in other text (installed by another operator); adopted without an upgrade", "release", name, "version", cur.Version)
		adopted := *rel
		adopted.Manifest = cur.Manifest
		rel = &adopted
	}
	if !skippable {
		return rel, nil
	}
	// Same objects, other digest (a release installed before the runtime
	// recorded digests, by another operator, or a new chart that renders
	// the same). Record that on the release, so that the next dry-run is
	// skipped.
	if _, err := relabel(c.Config(), cur, map[string]string{release.DigestLabel: digest}); err != nil {
		c.log.Info("Could not record the release digest; the next reconcile runs the dry-run again", "release", cur.Name, "error", err.Error())
	}
	return rel, nil
}

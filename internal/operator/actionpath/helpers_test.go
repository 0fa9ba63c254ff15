package actionpath

import (
	"context"
	"fmt"
	"maps"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/helmconfig"
	"github.com/acme/platform-operator/internal/operator/helmstorage"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// Helpers and fakes of the action path's tests.

// newTestKind returns what the path of kind is built from, for tests that
// build action paths without a manager: no API client, Events dropped.
func newTestKind(kind string) Kind {
	return Kind{
		Kind:             kind,
		Log:              logr.Discard(),
		Recorder:         &record.FakeRecorder{}, // no channel: Events are dropped
		ReleaseNamespace: watchconfig.ReleaseNamespaceMapper(false, ""),
		Activity:         NewActivity(clock.RealClock{}),
		Charts:           &release.ChartDigests{},
		DryRuns:          NewDryRunCounter(),
		Capabilities:     helmconfig.NewCapabilities(helmconfig.CapabilitiesMaxAge),
		StaleAfter:       DefaultStalePendingTimeout,
	}
}

// layerOf returns the layer named name of k's path (see Layers).
func layerOf(k Kind, name string) Layer {
	for _, l := range Layers(k) {
		if l.Name == name {
			return l
		}
	}
	panic("no layer " + name)
}

// getterOf returns a getter whose action client is always ac.
func getterOf(ac helmclient.ActionInterface) helmclient.ActionClientGetter {
	return helmclient.ActionClientGetterFunc(func(context.Context, client.Object) (helmclient.ActionInterface, error) {
		return ac, nil
	})
}

// fakeReleaseClient is an action client over Helm's in-memory release
// storage. Its "rendering" is the template of the chart's first file with
// the greeting value appended, so tests control whether a dry-run renders
// the deployed manifest.
type fakeReleaseClient struct {
	helmclient.ActionInterface // only the methods below are called
	cfg                        *action.Configuration
	gets, dryRuns, upgrades    int
}

// newFakeReleaseClient returns a client whose storage is Helm's in-memory
// driver under the memo helmconfig installs on every action configuration.
func newFakeReleaseClient() *fakeReleaseClient {
	return &fakeReleaseClient{cfg: &action.Configuration{Releases: storage.Init(helmstorage.NewMemo(driver.NewMemory()))}}
}

func render(chrt *chart.Chart, vals map[string]interface{}) string {
	return fmt.Sprintf("%s|%v", chrt.Templates[0].Data, vals["greeting"])
}

func (f *fakeReleaseClient) Config() *action.Configuration { return f.cfg }

func (f *fakeReleaseClient) Get(name string, _ ...helmclient.GetOption) (*hrelease.Release, error) {
	f.gets++
	return f.cfg.Releases.Last(name)
}

func (f *fakeReleaseClient) Install(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*hrelease.Release, error) {
	i := action.NewInstall(f.cfg)
	for _, o := range opts {
		if err := o(i); err != nil {
			return nil, err
		}
	}
	rel := &hrelease.Release{Name: name, Namespace: ns, Version: 1, Chart: chrt, Config: vals, Manifest: render(chrt, vals),
		Info: &hrelease.Info{Status: hrelease.StatusDeployed}, Labels: maps.Clone(i.Labels)}
	return rel, f.cfg.Releases.Create(rel)
}

func (f *fakeReleaseClient) Upgrade(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	u := action.NewUpgrade(f.cfg)
	for _, o := range opts {
		if err := o(u); err != nil {
			return nil, err
		}
	}
	if u.DryRun {
		f.dryRuns++
		return &hrelease.Release{Name: name, Namespace: ns, Manifest: render(chrt, vals), Info: &hrelease.Info{Status: hrelease.StatusPendingUpgrade}}, nil
	}
	f.upgrades++
	cur, err := f.cfg.Releases.Last(name)
	if err != nil {
		return nil, err
	}
	cur.Info.Status = hrelease.StatusSuperseded
	labels := maps.Clone(cur.Labels)
	maps.Copy(labels, u.Labels)
	rel := &hrelease.Release{Name: name, Namespace: ns, Version: cur.Version + 1, Chart: chrt, Config: vals, Manifest: render(chrt, vals),
		Info: &hrelease.Info{Status: hrelease.StatusDeployed}, Labels: labels}
	return rel, f.cfg.Releases.Create(rel)
}

// newDigestClient wraps inner like ActionClientFor does, one per
// reconcile: the digest layer over the release memo.
func newDigestClient(inner helmclient.ActionInterface) helmclient.ActionInterface {
	k := newTestKind("Test")
	return stack(context.Background(), target{obj: &corev1.ConfigMap{}}, inner, []Layer{layerOf(k, "digest"), layerOf(k, "release memo")})
}

// probeLayer records, in calls, each method of the action client that
// reaches it.
func probeLayer(calls *[]string) Layer {
	return Layer{Name: "probe", Wrap: func(_ context.Context, _ target, below actionClient) actionClient {
		return &probe{actionClient: below, calls: calls}
	}}
}

type probe struct {
	actionClient
	calls *[]string
}

func (p *probe) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	*p.calls = append(*p.calls, "Upgrade")
	return p.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
}

func (p *probe) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	*p.calls = append(*p.calls, "DryRunUpgrade")
	return p.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
}

// failingClient fails every action with err.
type failingClient struct {
	helmclient.ActionInterface
	err error
}

func (f failingClient) Install(string, string, *chart.Chart, map[string]interface{}, ...helmclient.InstallOption) (*hrelease.Release, error) {
	return nil, f.err
}

func (f failingClient) Upgrade(string, string, *chart.Chart, map[string]interface{}, ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	return nil, f.err
}

func (f failingClient) Uninstall(string, ...helmclient.UninstallOption) (*hrelease.UninstallReleaseResponse, error) {
	return nil, f.err
}

func (f failingClient) Config() *action.Configuration { return nil }

func install(ac helmclient.ActionInterface) error {
	_, err := ac.Install("web", "ns", helmtest.Chart(nil), nil)
	return err
}

func upgrade(ac helmclient.ActionInterface) error {
	_, err := ac.Upgrade("web", "ns", helmtest.Chart(nil), nil)
	return err
}

func dryRunUpgrade(ac helmclient.ActionInterface) error {
	_, err := ac.Upgrade("web", "ns", helmtest.Chart(nil), nil, helmtest.DryRun)
	return err
}

func uninstall(ac helmclient.ActionInterface) error {
	_, err := ac.Uninstall("web")
	return err
}

// blockingClient holds each action until release is closed, so a test can
// look at the activity while it runs.
type blockingClient struct {
	*fakeReleaseClient
	started chan string
	release chan struct{}
}

func (b blockingClient) hold(what string) {
	b.started <- what
	<-b.release
}

func (b blockingClient) Install(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*hrelease.Release, error) {
	b.hold("install")
	return b.fakeReleaseClient.Install(name, ns, chrt, vals, opts...)
}

func (b blockingClient) Upgrade(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	b.hold("upgrade")
	return b.fakeReleaseClient.Upgrade(name, ns, chrt, vals, opts...)
}

// statusRecorder is a client whose status patches are recorded; the
// runtime writes nothing else through it here.
type statusRecorder struct {
	client.Client
	patched []client.Object
}

func (s *statusRecorder) Status() client.SubResourceWriter { return statusWriter{s: s} }

// statusWriter records patches; nothing else is called.
type statusWriter struct {
	client.SubResourceWriter
	s *statusRecorder
}

func (w statusWriter) Patch(_ context.Context, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
	w.s.patched = append(w.s.patched, obj.DeepCopyObject().(client.Object))
	return nil
}

// recordingActionClient records the namespaces Install and Upgrade receive.
type recordingActionClient struct {
	helmclient.ActionInterface // nil: other methods are not called
	installNS, upgradeNS       string
	// manifest is the manifest of the releases returned.
	manifest string
	// cfg is returned by Config; capsAtInstall records its capabilities
	// when Install is called.
	cfg           action.Configuration
	capsAtInstall *chartutil.Capabilities
}

func (r *recordingActionClient) Config() *action.Configuration { return &r.cfg }

func (r *recordingActionClient) Install(name, ns string, _ *chart.Chart, _ map[string]interface{}, _ ...helmclient.InstallOption) (*hrelease.Release, error) {
	r.installNS = ns
	r.capsAtInstall = r.cfg.Capabilities
	return &hrelease.Release{Name: name, Namespace: ns, Manifest: r.manifest}, nil
}

func (r *recordingActionClient) Upgrade(name, ns string, _ *chart.Chart, _ map[string]interface{}, _ ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	r.upgradeNS = ns
	return &hrelease.Release{Name: name, Namespace: ns, Manifest: r.manifest}, nil
}

var (
	widgetGVK = schema.GroupVersionKind{Group: "test.acme.com", Version: "v1", Kind: "Widget"}
	tenantGVK = schema.GroupVersionKind{Group: "test.acme.com", Version: "v1", Kind: "Tenant"}
)

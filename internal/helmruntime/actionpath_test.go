package helmruntime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// probeLayer records, in calls, each method of the action client that
// reaches it.
func probeLayer(calls *[]string) layer {
	return func(_ context.Context, _ target, below actionClient) (actionClient, error) {
		return &probe{actionClient: below, calls: calls}, nil
	}
}

type probe struct {
	actionClient
	calls *[]string
}

func (p *probe) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	*p.calls = append(*p.calls, "Upgrade")
	return p.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
}

func (p *probe) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	*p.calls = append(*p.calls, "DryRunUpgrade")
	return p.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
}

func TestSplitDryRuns(t *testing.T) {
	g := NewWithT(t)
	lib := newFakeReleaseClient()
	var calls []string
	ac, err := stack(t.Context(), target{obj: newCR("Widget", "ns", "web", nil, nil), namespace: "ns"}, lib, []layer{probeLayer(&calls)})
	g.Expect(err).NotTo(HaveOccurred())
	chrt, vals := digestChart(nil), map[string]interface{}{"greeting": "hi"}
	_, err = ac.Install("web", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())

	_, err = ac.Upgrade("web", "ns", chrt, vals, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls).To(Equal([]string{"DryRunUpgrade"}))
	g.Expect(lib.dryRuns).To(Equal(1)) // the library still gets the option
	_, err = ac.Upgrade("web", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls).To(Equal([]string{"DryRunUpgrade", "Upgrade"}))
	g.Expect(lib.upgrades).To(Equal(1))

	boom := errors.New("bad option")
	_, err = ac.Upgrade("web", "ns", chrt, vals, func(*action.Upgrade) error { return boom })
	g.Expect(err).To(MatchError(boom))
	g.Expect(calls).To(HaveLen(2)) // an option that fails reaches no layer
}

func TestReleaseMemo(t *testing.T) {
	g := NewWithT(t)
	lib := newFakeReleaseClient()
	chrt, vals := digestChart(nil), map[string]interface{}{"greeting": "hi"}
	_, err := lib.Install("web", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	ac, err := stack(t.Context(), target{}, lib, []layer{rememberRelease})
	g.Expect(err).NotTo(HaveOccurred())

	lib.gets = 0
	for range 3 {
		rel, err := ac.Get("web")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rel.Version).To(Equal(1))
	}
	g.Expect(lib.gets).To(Equal(1)) // read once

	t.Log("a write to storage by anyone below or above forgets it")
	cur, err := lib.cfg.Releases.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	updated := *cur
	updated.Labels = map[string]string{"x": "y"}
	g.Expect(lib.cfg.Releases.Update(&updated)).To(Succeed())
	rel, err := ac.Get("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Labels).To(HaveKeyWithValue("x", "y"))
	g.Expect(lib.gets).To(Equal(2))

	t.Log("an upgrade stores a revision; the next read sees it")
	_, err = ac.Upgrade("web", "ns", chrt, map[string]interface{}{"greeting": "bonjour"})
	g.Expect(err).NotTo(HaveOccurred())
	rel, err = ac.Get("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(2))

	t.Log("a missing release is remembered as missing, until an install")
	for range 2 {
		_, err = ac.Get("none")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	}
	g.Expect(lib.gets).To(Equal(4))
	_, err = ac.Install("none", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.Get("none")
	g.Expect(err).NotTo(HaveOccurred())
}

// countingDriver counts the queries that reach a release storage driver.
type countingDriver struct {
	driver.Driver
	queries int
}

func (d *countingDriver) Query(labels map[string]string) ([]*release.Release, error) {
	d.queries++
	return d.Driver.Query(labels)
}

func TestRecordsMemo(t *testing.T) {
	g := NewWithT(t)
	below := &countingDriver{Driver: driver.NewMemory()}
	forgot := 0
	memo := &recordsMemo{Driver: below, forget: func() { forgot++ }}
	records := storage.Init(memo)
	rev := func(v int, st release.Status) *release.Release {
		return &release.Release{Name: "web", Namespace: "ns", Version: v, Info: &release.Info{Status: st}}
	}
	g.Expect(below.Create("sh.helm.release.v1.web.v1", rev(1, release.StatusSuperseded))).To(Succeed())
	g.Expect(below.Create("sh.helm.release.v1.web.v2", rev(2, release.StatusDeployed))).To(Succeed())

	t.Log("Helm's reads of one release within an action: one query")
	last, err := records.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last.Version).To(Equal(2))
	deployed, err := records.Deployed("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deployed.Version).To(Equal(2))
	history, err := records.History("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history).To(HaveLen(2))
	g.Expect(below.queries).To(Equal(1))

	t.Log("a status no record has is not found, as the driver says it")
	_, err = memo.Query(map[string]string{"name": "web", "owner": "helm", "status": "pending-upgrade"})
	g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	g.Expect(below.queries).To(Equal(1))

	t.Log("a write forgets the list and what the action client read; the next read sees it")
	g.Expect(records.Create(rev(3, release.StatusPendingUpgrade))).To(Succeed())
	g.Expect(forgot).To(Equal(1))
	last, err = records.Last("web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last.Version).To(Equal(3))
	g.Expect(below.queries).To(Equal(2))
	pending, err := memo.Query(map[string]string{"name": "web", "owner": "helm", "status": "pending-upgrade"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pending).To(HaveLen(1))
	g.Expect(below.queries).To(Equal(2))

	t.Log("a release with no records is remembered as none, until a write")
	for range 2 {
		_, err = records.History("api")
		g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))
	}
	g.Expect(below.queries).To(Equal(3))

	t.Log("queries of no one release go to the driver")
	all, err := memo.Query(map[string]string{"owner": "helm"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(HaveLen(3))
	g.Expect(below.queries).To(Equal(4))
}

// failingClient fails every action with err.
type failingClient struct {
	helmclient.ActionInterface
	err error
}

func (f failingClient) Install(string, string, *chart.Chart, map[string]interface{}, ...helmclient.InstallOption) (*release.Release, error) {
	return nil, f.err
}

func (f failingClient) Upgrade(string, string, *chart.Chart, map[string]interface{}, ...helmclient.UpgradeOption) (*release.Release, error) {
	return nil, f.err
}

func (f failingClient) Uninstall(string, ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	return nil, f.err
}

func (f failingClient) Config() *action.Configuration { return nil }

func TestFailureEvents(t *testing.T) {
	cr := newCR("Widget", "ns", "web", nil, nil)
	refusal := &ReleaseConflictError{Release: "web", Namespace: "ns", Claimant: "Widget"}
	cases := []struct {
		name string
		// err is what every action below the layer fails with.
		err error
		// act runs one action through the path.
		act func(ac helmclient.ActionInterface) error
		// want is the Event, "" for none.
		want string
	}{
		{name: "failed install", err: errors.New("boom"), act: install, want: "Warning InstallFailed Install of release ns/web failed (retried with backoff): boom"},
		{name: "failed upgrade", err: errors.New("boom"), act: upgrade, want: "Warning UpgradeFailed Upgrade of release ns/web failed (retried with backoff): boom"},
		{name: "failed render", err: errors.New("boom"), act: dryRunUpgrade, want: "Warning UpgradeDryRunFailed Rendering release ns/web for the current spec failed (retried with backoff): boom"},
		{name: "failed uninstall", err: errors.New("boom"), act: uninstall, want: "Warning UninstallFailed Uninstall of release ns/web failed (retried with backoff): boom"},
		// Nothing to uninstall is no failure.
		{name: "uninstall of no release", err: driver.ErrReleaseNotFound, act: uninstall},
		// The ownership layer reports its refusals with its own reason.
		{name: "refused install", err: refusal, act: install},
		{name: "refused render", err: refusal, act: dryRunUpgrade},
		{name: "success", act: install},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			k := newTestKind("Widget")
			rec := record.NewFakeRecorder(10)
			k.recorder = rec
			lib := helmclient.ActionInterface(failingClient{err: tc.err})
			if tc.err == nil {
				lib = newFakeReleaseClient()
			}
			ac, err := stack(t.Context(), target{obj: cr, namespace: "ns"}, lib, []layer{k.failureEvents})
			g.Expect(err).NotTo(HaveOccurred())
			if err := tc.act(ac); tc.err == nil {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(tc.err))
			}
			if tc.want == "" {
				g.Expect(rec.Events).To(BeEmpty())
				return
			}
			g.Expect(rec.Events).To(Receive(Equal(tc.want)))
		})
	}
}

func install(ac helmclient.ActionInterface) error {
	_, err := ac.Install("web", "ns", digestChart(nil), nil)
	return err
}

func upgrade(ac helmclient.ActionInterface) error {
	_, err := ac.Upgrade("web", "ns", digestChart(nil), nil)
	return err
}

func dryRunUpgrade(ac helmclient.ActionInterface) error {
	_, err := ac.Upgrade("web", "ns", digestChart(nil), nil, dryRun)
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

func (b blockingClient) Install(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	b.hold("install")
	return b.fakeReleaseClient.Install(name, ns, chrt, vals, opts...)
}

func (b blockingClient) Upgrade(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	b.hold("upgrade")
	return b.fakeReleaseClient.Upgrade(name, ns, chrt, vals, opts...)
}

func TestActivityTracksActionsNotDryRuns(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	a := newReleaseActivity(clk)
	a.elected()
	lib := blockingClient{fakeReleaseClient: newFakeReleaseClient(), started: make(chan string, 1), release: make(chan struct{})}
	ac, err := stack(t.Context(), target{obj: newCR("Widget", "ns", "web", nil, nil), namespace: "ns"}, lib, []layer{a.track})
	g.Expect(err).NotTo(HaveOccurred())
	chrt := digestChart(nil)

	done := make(chan error)
	go func() { _, err := ac.Install("web", "ns", chrt, nil); done <- err }()
	g.Eventually(lib.started).Should(Receive(Equal("install")))
	_, stale := a.staleness("ns/web", t0.Add(-time.Hour), time.Minute, false)
	g.Expect(stale).To(BeFalse(), "a release with an action running is never stale")
	close(lib.release)
	g.Eventually(done).Should(Receive(BeNil()))
	_, stale = a.staleness("ns/web", t0.Add(-time.Hour), time.Minute, false)
	g.Expect(stale).To(BeTrue())

	t.Log("a dry-run is not an action on the release")
	lib.release = make(chan struct{})
	close(lib.release)
	clk.SetTime(t0.Add(time.Minute))
	_, err = ac.Upgrade("web", "ns", chrt, nil, dryRun)
	g.Expect(err).NotTo(HaveOccurred())
	_, stale = a.staleness("ns/web", t0.Add(30*time.Second), time.Hour, false)
	g.Expect(stale).To(BeFalse(), "only the install's span counts as this process's own action")
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

func TestUnlockStale(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	cases := []struct {
		name string
		// status and started describe the latest stored revision.
		status  release.Status
		started time.Time
		// owner is the resource recorded on the release ("" : this one).
		owner string
		// wantStatus is the revision's status after the client is built.
		wantStatus release.Status
		wantEvent  bool
	}{
		// Started before this process leads (at t0): nobody can finish it.
		{name: "pending since before the leadership", status: release.StatusPendingUpgrade, started: t0.Add(-time.Minute), wantStatus: release.StatusFailed, wantEvent: true},
		// Started after: someone (a person with helm) may still be at it.
		{name: "pending, recent", status: release.StatusPendingInstall, started: t0.Add(time.Second), wantStatus: release.StatusPendingInstall},
		{name: "deployed", status: release.StatusDeployed, started: t0.Add(-time.Minute), wantStatus: release.StatusDeployed},
		// The ownership layer below hides another resource's release.
		{name: "pending release of another resource", status: release.StatusPendingUpgrade, started: t0.Add(-time.Minute), owner: "other", wantStatus: release.StatusPendingUpgrade},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clk := clocktesting.NewFakePassiveClock(t0)
			k := newTestKind("Widget")
			k.rt.activity = newReleaseActivity(clk)
			k.rt.activity.elected()
			clk.SetTime(t0.Add(2 * time.Minute))
			rec := record.NewFakeRecorder(10)
			status := &statusRecorder{}
			k.recorder, k.client = rec, status

			cr := newCR("Widget", "ns", "web", nil, nil)
			cr.SetGroupVersionKind(widget)
			ownerName := "web"
			if tc.owner != "" {
				ownerName = tc.owner
			}
			lib := newFakeReleaseClient()
			owner := releaseOwner{GroupKind: widget.GroupKind(), Namespace: "ns", Name: ownerName}
			g.Expect(lib.cfg.Releases.Create(&release.Release{
				Name: "web", Namespace: "ns", Version: 3, Labels: owner.labels(),
				Info: &release.Info{Status: tc.status, LastDeployed: helmtime.Time{Time: tc.started}},
			})).To(Succeed())

			ac, err := stack(t.Context(), target{obj: cr, namespace: "ns"}, lib, []layer{k.unlockStale, k.ownership, rememberRelease})
			g.Expect(err).NotTo(HaveOccurred())
			stored, err := lib.cfg.Releases.Last("web")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(stored.Info.Status).To(Equal(tc.wantStatus))
			if !tc.wantEvent {
				g.Expect(rec.Events).To(BeEmpty())
				g.Expect(status.patched).To(BeEmpty())
				return
			}
			g.Expect(stored.Info.Description).To(HavePrefix("Unlocked by the operator: revision 3 of release ns/web was left pending-upgrade"))
			g.Expect(rec.Events).To(Receive(HavePrefix("Warning PendingReleaseUnlocked Unlocked: revision 3")))
			g.Expect(status.patched).To(HaveLen(1))
			conds, _, _ := unstructured.NestedSlice(status.patched[0].(*unstructured.Unstructured).Object, "status", "conditions")
			g.Expect(conds).To(ContainElement(HaveKeyWithValue("type", ConditionRecovered)))

			t.Log("the same reconcile reads the unlocked revision, not the remembered pending one")
			rel, err := ac.Get("web")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rel.Info.Status).To(Equal(release.StatusFailed))
			g.Expect(strings.Contains(rel.Info.Description, staleBeforeLeadership)).To(BeTrue())
		})
	}
}

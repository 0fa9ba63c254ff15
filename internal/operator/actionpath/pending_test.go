package actionpath

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hrelease "helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/release"
)

func TestUnlockStale(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	cases := []struct {
		name string
		// status and started describe the latest stored revision.
		status  hrelease.Status
		started time.Time
		// owner is the resource recorded on the release ("" : this one).
		owner string
		// wantStatus is the revision's status after the client is built.
		wantStatus hrelease.Status
		wantEvent  bool
	}{
		// Started before this process leads (at t0): nobody can finish it.
		{name: "pending since before the leadership", status: hrelease.StatusPendingUpgrade, started: t0.Add(-time.Minute), wantStatus: hrelease.StatusFailed, wantEvent: true},
		// Started after: someone (a person with helm) may still be at it.
		{name: "pending, recent", status: hrelease.StatusPendingInstall, started: t0.Add(time.Second), wantStatus: hrelease.StatusPendingInstall},
		{name: "deployed", status: hrelease.StatusDeployed, started: t0.Add(-time.Minute), wantStatus: hrelease.StatusDeployed},
		// The ownership layer below hides another resource's release.
		{name: "pending release of another resource", status: hrelease.StatusPendingUpgrade, started: t0.Add(-time.Minute), owner: "other", wantStatus: hrelease.StatusPendingUpgrade},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clk := clocktesting.NewFakePassiveClock(t0)
			k := newTestKind("Widget")
			k.Activity = NewActivity(clk)
			k.Activity.Elected()
			clk.SetTime(t0.Add(2 * time.Minute))
			rec := record.NewFakeRecorder(10)
			status := &statusRecorder{}
			k.Recorder, k.Status = rec, status

			cr := helmtest.CR("Widget", "ns", "web", nil, nil)
			cr.SetGroupVersionKind(widget)
			ownerName := "web"
			if tc.owner != "" {
				ownerName = tc.owner
			}
			lib := newFakeReleaseClient()
			owner := release.Owner{GroupKind: widget.GroupKind(), Namespace: "ns", Name: ownerName}
			g.Expect(lib.cfg.Releases.Create(&hrelease.Release{
				Name: "web", Namespace: "ns", Version: 3, Labels: owner.Labels(),
				Info: &hrelease.Info{Status: tc.status, LastDeployed: helmtime.Time{Time: tc.started}},
			})).To(Succeed())

			// The path of the client is the ownership layer over the memo;
			// building it runs the stale-pending step through both.
			acg := &getter{
				base:   getterOf(lib),
				nsFor:  k.ReleaseNamespace,
				unlock: newStaleUnlocker(k.Log, k.Recorder, k.Status, k.Activity, k.ShardID, k.StaleAfter),
				layers: []Layer{layerOf(k, "ownership"), layerOf(k, "release memo")},
			}
			ac, err := acg.ActionClientFor(t.Context(), cr)
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
			g.Expect(rel.Info.Status).To(Equal(hrelease.StatusFailed))
			g.Expect(strings.Contains(rel.Info.Description, staleBeforeLeadership)).To(BeTrue())
		})
	}
}

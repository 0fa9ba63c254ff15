package actionpath

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/tools/record"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/release"
)

func TestFailureEvents(t *testing.T) {
	cr := helmtest.CR("Widget", "ns", "web", nil, nil)
	refusal := &release.ConflictError{Release: "web", Namespace: "ns", Claimant: "Widget"}
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
			k.Recorder = rec
			lib := helmclient.ActionInterface(failingClient{err: tc.err})
			if tc.err == nil {
				lib = newFakeReleaseClient()
			}
			ac := stack(t.Context(), target{obj: cr, namespace: "ns"}, lib, []Layer{layerOf(k, "failure events")})
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

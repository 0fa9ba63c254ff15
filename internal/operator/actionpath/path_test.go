package actionpath

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

func TestSplitDryRuns(t *testing.T) {
	g := NewWithT(t)
	lib := newFakeReleaseClient()
	var calls []string
	ac := stack(t.Context(), target{obj: helmtest.CR("Widget", "ns", "web", nil, nil), namespace: "ns"}, lib, []Layer{probeLayer(&calls)})
	chrt, vals := helmtest.Chart(nil), map[string]interface{}{"greeting": "hi"}
	_, err := ac.Install("web", "ns", chrt, vals)
	g.Expect(err).NotTo(HaveOccurred())

	_, err = ac.Upgrade("web", "ns", chrt, vals, helmtest.DryRun)
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

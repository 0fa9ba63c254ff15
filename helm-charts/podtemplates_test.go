package helmcharts_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/acme/platform-operator/internal/gen/chartrender"
)

// TestPodTemplatesUnchanged pins the Pod templates the charts render for
// their samples' specs. An operator upgrade re-renders every release with
// the new charts: a Pod template that differs in any byte (a reordered
// env, a changed checksum/config) rolls the Pods of every resource of the
// kind. When a change is meant to do that, say so in the change and pin
// the new digests; when it is not, make the template render what it did.
//
// Changed on purpose: the Pods an ingress NetworkPolicy of the chart
// selects carry platform.acme.com/own-ingress-policy (the WebApp database,
// an Nginx with networkPolicy.enabled), so a tenant's namespace-wide
// allowances no longer widen their policy; those Pods roll once.
func TestPodTemplatesUnchanged(t *testing.T) {
	cases := []struct {
		name   string
		render func() (*chartrender.Result, error)
		kind   string
		object string
		digest string
	}{
		{"nginx", func() (*chartrender.Result, error) { return renderNginx("") }, "Deployment", nginxRelease, "d390391c773741ef"},
		{"nginx, all features", func() (*chartrender.Result, error) { return renderNginx(allFeatures) }, "Deployment", nginxRelease, "30ae2d04e7dcbbd0"},
		{"webapp app", func() (*chartrender.Result, error) { return renderWebApp("") }, "Deployment", webAppRelease, "e90e5a0c0fb81139"},
		{"webapp database", func() (*chartrender.Result, error) { return renderWebApp("") }, "StatefulSet", webAppDB, "19a5146851b15a82"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := tc.render()
			g.Expect(err).NotTo(HaveOccurred())
			o := r.Get(tc.kind, tc.object)
			g.Expect(o).NotTo(BeNil())
			b, err := json.Marshal(field(g, o, "spec", "template"))
			g.Expect(err).NotTo(HaveOccurred())
			sum := sha256.Sum256(b)
			g.Expect(hex.EncodeToString(sum[:])[:16]).To(Equal(tc.digest), "the Pod template of %s %s changed: every Pod of the kind would roll at upgrade", tc.kind, tc.object)
		})
	}
}

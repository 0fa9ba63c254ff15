package uninstall

import (
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestDecideConversion(t *testing.T) {
	webhook := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	none := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	cases := []struct {
		name       string
		conversion *apiextensionsv1.CustomResourceConversion
		stored     int  // objects of the kind in the cluster
		limited    bool // the run was limited by --selector
		wantReset  bool
		wantWhy    string // part of the message; empty: no message
	}{
		// Nothing stored: nothing needs converting, and a webhook nobody
		// serves would make every read in another version fail.
		{"webhook, nothing stored", webhook, 0, false, true, "conversion set to None: no object of its kind is stored"},
		// Stored objects would be shown in other versions without the
		// webhook's renames: kept.
		{"webhook, one stored", webhook, 1, false, false, "conversion webhook kept: an object of its kind is stored"},
		{"webhook, several stored", webhook, 3, false, false, "conversion webhook kept: 3 objects of its kind are stored"},
		// A limited run does not know about the others: kept, whatever it
		// counted.
		{"webhook, limited", webhook, 0, true, false, "limited by --selector"},
		// No webhook: nothing to decide, nothing said.
		{"none", none, 0, false, false, ""},
		{"no conversion", nil, 0, false, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := crd("web.acme.com", "WebApp", "webapps", "v1alpha1", "v1beta1")
			c.Spec.Conversion = tc.conversion
			d := DecideConversion(&c, tc.stored, tc.limited)
			g.Expect(d.Reset).To(Equal(tc.wantReset))
			if tc.wantWhy == "" {
				g.Expect(d.Why).To(BeEmpty())
				return
			}
			g.Expect(d.Why).To(HavePrefix("webapps.web.acme.com: "))
			g.Expect(d.Why).To(ContainSubstring(tc.wantWhy))
		})
	}
}

package admission

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestPinSet(t *testing.T) {
	const pin = "platform.acme.com/chart-version"
	for _, tc := range []struct {
		name string
		// old and edits are the annotations before and after the update.
		old, edits map[string]string
		want       bool
	}{
		{name: "no annotations"},
		{name: "kept", old: map[string]string{pin: "0.1.0"}, edits: map[string]string{pin: "0.1.0", "note": "b"}},
		{name: "removed: back to the default, nothing to check", old: map[string]string{pin: "0.1.0"}},
		{name: "a remediation annotation is not the pin", edits: map[string]string{"platform.acme.com/remediation": "none"}},
		{name: "added", edits: map[string]string{pin: "0.1.0"}, want: true},
		{name: "edited", old: map[string]string{pin: "0.1.0"}, edits: map[string]string{pin: "0.2.0"}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(pinSet(annotatedNginx(tc.old), annotatedNginx(tc.edits))).To(Equal(tc.want))
		})
	}
}

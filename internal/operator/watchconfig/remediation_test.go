package watchconfig

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestRemediationFor(t *testing.T) {
	kind := Remediation{ReadyTimeout: 2 * time.Minute, Strategy: RemediateRollback}
	tests := []struct {
		name        string
		annotations map[string]string
		want        Remediation
		wantErr     string
	}{
		{"none set", nil, kind, ""},
		{"timeout and strategy", map[string]string{ReadyTimeoutAnnotation: "90s", RemediationAnnotation: "none"}, Remediation{ReadyTimeout: 90 * time.Second, Strategy: RemediateNone}, ""},
		{"not a duration", map[string]string{ReadyTimeoutAnnotation: "soon"}, kind, `annotation platform.acme.com/ready-timeout: "soon" is not a duration`},
		{"zero", map[string]string{ReadyTimeoutAnnotation: "0"}, kind, `"0" is outside 10s to 24h`},
		{"negative", map[string]string{ReadyTimeoutAnnotation: "-5m"}, kind, `"-5m" is outside 10s to 24h`},
		{"too long", map[string]string{ReadyTimeoutAnnotation: "999h"}, kind, `"999h" is outside 10s to 24h`},
		{"unknown strategy", map[string]string{RemediationAnnotation: "uninstall"}, kind, `annotation platform.acme.com/remediation: "uninstall" is not one of rollback, none`},
		{"retries", map[string]string{RetriesAnnotation: "2"}, Remediation{ReadyTimeout: 2 * time.Minute, Strategy: RemediateRollback, Retries: 2}, ""},
		{"too many retries", map[string]string{RetriesAnnotation: "11"}, kind, `annotation platform.acme.com/remediation-retries: "11" is not a number from 0 to 10`},
		{"tests", map[string]string{TestAnnotation: "true"}, Remediation{ReadyTimeout: 2 * time.Minute, Strategy: RemediateRollback, Test: true}, ""},
		{"tests not a bool", map[string]string{TestAnnotation: "yes please"}, kind, `annotation platform.acme.com/test: "yes please" is not true or false`},
		{"uninstall installs", map[string]string{InstallRemediationAnnotation: "uninstall"}, Remediation{ReadyTimeout: 2 * time.Minute, Strategy: RemediateRollback, UninstallInstalls: true}, ""},
		{"unknown install remediation", map[string]string{InstallRemediationAnnotation: "delete"}, kind, `annotation platform.acme.com/remediation-install: "delete" is not one of keep, uninstall`},
		{"empty strategy", map[string]string{RemediationAnnotation: ""}, kind, `annotation platform.acme.com/remediation: "" is not one of rollback, none`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := kind.For(tc.annotations)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestLoadRemediation(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "watches.yaml")
	g.Expect(os.WriteFile(path, []byte(`
- {group: a.example.com, version: v1, kind: A, chart: c}
- {group: a.example.com, version: v1, kind: B, chart: c, remediation: {readyTimeout: 1m, strategy: none, retries: 3, test: true, install: uninstall}}
`), 0o600)).To(Succeed())
	got, err := LoadRemediation(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]Remediation{DefaultRemediation(), {ReadyTimeout: time.Minute, Strategy: RemediateNone, Retries: 3, Test: true, UninstallInstalls: true}}))

	for body, want := range map[string]string{
		`[{kind: A, remediation: {readyTimeout: 0s}}]`:    `entry 0 (A): remediation: readyTimeout: "0s" is outside 10s to 24h`,
		`[{kind: A, remediation: {strategy: uninstall}}]`: `entry 0 (A): remediation: strategy: "uninstall" is not one of rollback, none`,
		`[{kind: A, remediation: {readyTimout: 1m}}]`:     `unknown field "readyTimout"`,
	} {
		g.Expect(os.WriteFile(path, []byte(body), 0o600)).To(Succeed())
		_, err := LoadRemediation(path)
		g.Expect(err).To(MatchError(ContainSubstring(want)), body)
	}
}

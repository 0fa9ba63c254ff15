package watchconfig

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseFieldPath(t *testing.T) {
	g := NewWithT(t)
	p, err := ParseFieldPath("spec.template.spec.containers[*].resources")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal(FieldPath{{Key: "spec"}, {Key: "template"}, {Key: "spec"}, {Key: "containers", Select: "*", HasSelect: true}, {Key: "resources"}}))
	p, err = ParseFieldPath("metadata.annotations[example.com/owner]")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p[1]).To(Equal(FieldStep{Key: "annotations", Select: "example.com/owner", HasSelect: true}))
	for _, bad := range []string{"", "spec.", ".spec", "spec..x", "a[", "a[]", "a[x]b"} {
		_, err := ParseFieldPath(bad)
		g.Expect(err).To(HaveOccurred(), bad)
	}
}

func TestLoadDrift(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "watches.yaml")
		g.Expect(os.WriteFile(p, []byte(s), 0o600)).To(Succeed())
		return p
	}
	ds, err := LoadDrift(write(`
- {group: a, version: v1, kind: A, chart: c}
- group: a
  version: v1
  kind: B
  chart: c
  drift:
    mode: warn
    ignore:
    - {kind: Deployment, paths: [spec.replicas]}
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ds).To(Equal([]Drift{
		{Mode: DriftRepair},
		{Mode: DriftWarn, Ignore: []DriftIgnore{{Kind: "Deployment", Paths: []string{"spec.replicas"}}}},
	}))

	_, err = LoadDrift(write(`[{kind: A, drift: {mode: fix}}]`))
	g.Expect(err).To(MatchError(ContainSubstring(`drift mode "fix" is not one of repair, warn, off`)))
	_, err = LoadDrift(write(`[{kind: A, drift: {ignore: [{paths: [a..b]}]}}]`))
	g.Expect(err).To(MatchError(And(ContainSubstring("kind must be set"), ContainSubstring(`path "a..b"`))))
}

func TestParseDriftIgnores(t *testing.T) {
	g := NewWithT(t)
	rules, err := ParseDriftIgnores(`[{kind: Deployment, name: web, paths: ["spec.template.spec.containers[*].resources"]}]`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules[0].Matches("apps", "Deployment", "web")).To(BeTrue())
	g.Expect(rules[0].Matches("apps", "Deployment", "api")).To(BeFalse())
	_, err = ParseDriftIgnores(`[{kind: Deployment, path: [x]}]`)
	g.Expect(err).To(HaveOccurred(), "an unknown field is refused")
}

func TestIgnoredFields(t *testing.T) {
	g := NewWithT(t)
	p := filepath.Join(t.TempDir(), "watches.yaml")
	g.Expect(os.WriteFile(p, []byte(`
- {group: a, version: v1, kind: A, chart: c, dryRunOption: server, drift: {mode: warn}, selector: {}}
- {group: a, version: v1, kind: B, chart: c, reconcilePeriod: 1m, maxConcurrentReconciles: 2, overrideValues: {}, watchDependentResources: false, blacklist: []}
`), 0o600)).To(Succeed())
	msgs, err := IgnoredFields(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msgs).To(HaveLen(2))
	g.Expect(msgs[0]).To(HavePrefix(`entry 0 (A): field "dryRunOption" is not read by this operator; the dry-run upgrade`))
	g.Expect(msgs[1]).To(Equal(`entry 1 (B): field "blacklist" is not read by this operator`))
}

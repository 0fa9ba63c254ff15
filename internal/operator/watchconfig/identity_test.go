package watchconfig

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestLoadServiceAccountNames(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "watches.yaml")
	g.Expect(os.WriteFile(path, []byte(`
- {group: a.example.com, version: v1, kind: A, chart: c}
- {group: a.example.com, version: v1, kind: B, chart: c, serviceAccountName: release-deployer}
`), 0o600)).To(Succeed())
	got, err := LoadServiceAccountNames(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]string{"", "release-deployer"}))

	g.Expect(os.WriteFile(path, []byte(`[{kind: A, serviceAccountName: "Release Deployer"}]`), 0o600)).To(Succeed())
	_, err = LoadServiceAccountNames(path)
	g.Expect(err).To(MatchError(ContainSubstring(`entry 0 (A): serviceAccountName: "Release Deployer" is not a ServiceAccount name`)))

	ignored, err := IgnoredFields(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ignored).To(BeEmpty(), "the runtime reads the field")
}

package watchconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadReadsTheShippedFile: the repository's watches.yaml loads with
// one value of each field per entry.
func TestLoadReadsTheShippedFile(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join("..", "..", "..")
	for _, name := range []string{"nginx", "webapp", "namespace-tenant"} {
		if err := os.Symlink(mustAbs(t, filepath.Join(root, "helm-charts", name)), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "watches.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "watches.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), "chart: helm-charts/", "chart: "+dir+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, EnvOf(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	n := len(f.Watches)
	if n != 3 {
		t.Fatalf("want 3 entries, got %d", n)
	}
	for name, got := range map[string]int{"drift": len(f.Drifts), "images": len(f.Images), "confinement": len(f.Confinements),
		"remediation": len(f.Remediations), "serviceAccountName": len(f.ServiceAccounts), "crds": len(f.CRDPolicies), "postRender": len(f.PostRenders),
		"chartVersions": len(f.Versions), "rollout": len(f.Rollouts)} {
		if got != n {
			t.Errorf("%s: %d values for %d entries", name, got, n)
		}
	}
	if len(f.Ignored) != 0 {
		t.Errorf("ignored: %v", f.Ignored)
	}
}

// TestLoadNamesTheFile: a field wrong in one entry fails the file, and
// the error names it.
func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "watches.yaml")
	if err := os.WriteFile(path, []byte("- group: a\n  version: v1\n  kind: A\n  chart: missing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, EnvOf(nil, nil))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("want an error naming %s, got %v", path, err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

package testkit

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// CopyTree copies the files and directories names (relative to src) into
// dst, for a test that runs a generator on a copy of the repository.
func CopyTree(t testing.TB, src, dst string, names ...string) {
	t.Helper()
	for _, name := range names {
		err := filepath.WalkDir(filepath.Join(src, name), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// KindgenFiles are what `make kind` reads and writes.
var KindgenFiles = []string{"config", "helm-charts", "watches.yaml", "PROJECT"}

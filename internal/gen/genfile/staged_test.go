package genfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func write(t *testing.T, file, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStagedCarriesOverWhatGenChanged(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "config", "a.yaml"), "a")
	write(t, filepath.Join(root, "config", "gone.yaml"), "gone")
	write(t, filepath.Join(root, "config", "same.yaml"), "same")
	write(t, filepath.Join(root, "other.txt"), "not staged")
	changed, err := Staged(root, []string{"config", "watches.yaml"}, func(stage string) error {
		g.Expect(read(t, filepath.Join(stage, "config", "a.yaml"))).To(Equal("a"))
		g.Expect(filepath.Join(stage, "other.txt")).NotTo(BeAnExistingFile())
		write(t, filepath.Join(stage, "config", "a.yaml"), "A")
		write(t, filepath.Join(stage, "config", "new", "b.yaml"), "b")
		write(t, filepath.Join(stage, "watches.yaml"), "w")
		return os.Remove(filepath.Join(stage, "config", "gone.yaml"))
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(Equal([]string{"config/a.yaml", "config/gone.yaml", "config/new/b.yaml", "watches.yaml"}))
	g.Expect(read(t, filepath.Join(root, "config", "a.yaml"))).To(Equal("A"))
	g.Expect(read(t, filepath.Join(root, "config", "new", "b.yaml"))).To(Equal("b"))
	g.Expect(read(t, filepath.Join(root, "watches.yaml"))).To(Equal("w"))
	g.Expect(filepath.Join(root, "config", "gone.yaml")).NotTo(BeAnExistingFile())
	entries, err := os.ReadDir(filepath.Join(root, "config"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(3), "no temporary file is left beside the replaced ones")
}

func TestStagedFailureChangesNothing(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "config", "a.yaml"), "a")
	boom := errors.New("boom")
	changed, err := Staged(root, []string{"config"}, func(stage string) error {
		write(t, filepath.Join(stage, "config", "a.yaml"), "half")
		write(t, filepath.Join(stage, "config", "b.yaml"), "b")
		return boom
	})
	g.Expect(err).To(MatchError(boom))
	g.Expect(changed).To(BeEmpty())
	g.Expect(read(t, filepath.Join(root, "config", "a.yaml"))).To(Equal("a"))
	g.Expect(filepath.Join(root, "config", "b.yaml")).NotTo(BeAnExistingFile())
}

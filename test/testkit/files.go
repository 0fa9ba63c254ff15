package testkit

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
			info, err := d.Info()
			if err != nil {
				return err
			}
			// Scripts stay executable.
			return os.WriteFile(filepath.Join(dst, rel), data, info.Mode().Perm())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Snapshot reads every file under names (relative to root) into a map
// from its path to its content, to compare a tree before and after.
func Snapshot(t testing.TB, root string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		err := filepath.WalkDir(filepath.Join(root, name), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			out[rel] = string(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// ShellLines returns the command lines of the n-th (from 0) ```sh block
// of a markdown file, as a reader would copy them: blank lines and whole
// comment lines left out.
func ShellLines(t testing.TB, file string, n int) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(data), "```sh\n")
	if len(blocks) <= n+1 {
		t.Fatalf("%s has no sh block %d", file, n)
	}
	block, _, _ := strings.Cut(blocks[n+1], "```")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// Changed lists the files whose content differs between two snapshots,
// a file gone from after marked "(removed)".
func Changed(before, after map[string]string) []string {
	var out []string
	for name, data := range after {
		if old, ok := before[name]; !ok || old != data {
			out = append(out, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			out = append(out, name+" (removed)")
		}
	}
	slices.Sort(out)
	return out
}

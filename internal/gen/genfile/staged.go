package genfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Staged runs gen on a copy of the paths under root (files or directories,
// relative to root) and, only when gen succeeds, carries what it changed
// over to root: each new or changed file replaced whole (written beside it,
// then renamed over it), each file gen deleted removed. When gen fails, root
// is left exactly as it was. It returns the files it changed, sorted,
// relative to root with forward slashes.
func Staged(root string, paths []string, gen func(stage string) error) ([]string, error) {
	stage, err := os.MkdirTemp("", "genfile-stage-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	for _, p := range paths {
		if err := copyTree(filepath.Join(root, p), filepath.Join(stage, p)); err != nil {
			return nil, err
		}
	}
	if err := gen(stage); err != nil {
		return nil, err
	}
	before, err := files(root, paths)
	if err != nil {
		return nil, err
	}
	after, err := files(stage, paths)
	if err != nil {
		return nil, err
	}
	var changed []string
	for rel := range after {
		data, err := os.ReadFile(filepath.Join(stage, rel))
		if err != nil {
			return nil, err
		}
		if before[rel] {
			old, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				return nil, err
			}
			if bytes.Equal(old, data) {
				continue
			}
		}
		if err := Replace(filepath.Join(root, rel), data); err != nil {
			return nil, err
		}
		changed = append(changed, filepath.ToSlash(rel))
	}
	for rel := range before {
		if !after[rel] {
			if err := os.Remove(filepath.Join(root, rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			changed = append(changed, filepath.ToSlash(rel))
		}
	}
	sort.Strings(changed)
	return changed, nil
}

// Replace writes data to file whole: into a temporary file beside it,
// renamed over it, so that a reader sees the old content or the new and
// nothing between.
func Replace(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// files lists the regular files under paths of dir, relative to dir.
func files(dir string, paths []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, p := range paths {
		err := filepath.WalkDir(filepath.Join(dir, p), func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			out[rel] = true
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// copyTree copies the regular files and directories under src to dst; a
// missing src copies nothing.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == src {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		default:
			return fmt.Errorf("%s: not a regular file or directory", path)
		}
	})
}

package crdgen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// Options says where generation reads and writes. Paths are slash-separated
// and relative to Root, except KindsFile which may also be absolute.
type Options struct {
	// Root is the repository root; chart paths in the kinds file are
	// relative to it.
	Root string
	// KindsFile is the kinds config, e.g. config/crd/kinds.yaml.
	KindsFile string
	// OutDir receives one CRD file per kind, e.g. config/crd/bases.
	OutDir string
	// Kustomization is the kustomization file listing every CRD in OutDir,
	// e.g. config/crd/kustomization.yaml; empty to not produce one.
	Kustomization string
}

// Result is what a generation run would write. Nothing is written until
// Write is called, so the same run serves `make manifests` and the
// up-to-date check.
type Result struct {
	// Files maps paths relative to Root to their content.
	Files map[string][]byte
	// Remove lists files under OutDir that crdgen generated earlier and no
	// kind produces any more (relative to Root).
	Remove []string
}

// Generate converts every kind's chart schema into its CRD, validates it and
// returns the files to write. Errors of all kinds are reported together.
func Generate(opts Options) (*Result, error) {
	kindsFile := opts.KindsFile
	if !filepath.IsAbs(kindsFile) {
		kindsFile = filepath.Join(opts.Root, filepath.FromSlash(kindsFile))
	}
	kinds, err := apikinds.LoadKinds(kindsFile)
	if err != nil {
		return nil, err
	}
	res := &Result{Files: map[string][]byte{}}
	var errs []error
	for i := range kinds {
		k := &kinds[i]
		name, content, err := generateKind(opts.Root, opts.OutDir, k)
		if err != nil {
			errs = append(errs, fmt.Errorf("kind %s: %w", k.Kind, err))
			continue
		}
		res.Files[name] = content
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Look at what is already in OutDir: stale generated files go, and
	// hand-written CRDs stay and are listed in the kustomization.
	existing, err := os.ReadDir(filepath.Join(opts.Root, filepath.FromSlash(opts.OutDir)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var crds []string
	for name := range res.Files {
		crds = append(crds, name)
	}
	for _, e := range existing {
		if e.IsDir() || !isYAML(e.Name()) {
			continue
		}
		rel := path.Join(opts.OutDir, e.Name())
		if _, ours := res.Files[rel]; ours {
			continue
		}
		generated, err := isGenerated(filepath.Join(opts.Root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		if generated {
			res.Remove = append(res.Remove, rel)
		} else {
			crds = append(crds, rel)
		}
	}
	sort.Strings(res.Remove)

	if opts.Kustomization != "" {
		content, err := kustomization(path.Dir(opts.Kustomization), crds)
		if err != nil {
			return nil, err
		}
		res.Files[opts.Kustomization] = content
	}
	return res, nil
}

func generateKind(root, outDir string, k *apikinds.Kind) (string, []byte, error) {
	schemaFile := k.SchemaPath()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(schemaFile)))
	if err != nil {
		return "", nil, err
	}
	spec, err := ConvertSchema(data)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", schemaFile, err)
	}
	if err := checkReserved(root, k, spec); err != nil {
		return "", nil, err
	}
	addValuesFrom(k, spec)
	crd := BuildCRD(k, spec)
	if err := addVersions(crd, k); err != nil {
		return "", nil, fmt.Errorf("%s: %w", schemaFile, err)
	}
	if err := ValidateCRD(crd); err != nil {
		return "", nil, err
	}
	content, err := RenderCRD(crd, schemaFile)
	if err != nil {
		return "", nil, err
	}
	return path.Join(outDir, k.FileName()), content, nil
}

func kustomization(dir string, files []string) ([]byte, error) {
	sort.Strings(files)
	var b bytes.Buffer
	b.WriteString(generatedHeader + ". DO NOT EDIT.\n" +
		"# crdgen owns this file and lists every CRD in bases/: the ones it generates from\n" +
		"# charts (config/crd/kinds.yaml) and any hand-written one. To add a CRD, put it in\n" +
		"# bases/ and run `make manifests`.\n" +
		"apiVersion: kustomize.config.k8s.io/v1beta1\n" +
		"kind: Kustomization\n" +
		"resources:\n")
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs to list in %s", path.Join(dir, "kustomization.yaml"))
	}
	for _, f := range files {
		rel, err := filepath.Rel(filepath.FromSlash(dir), filepath.FromSlash(f))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "- %s\n", filepath.ToSlash(rel))
	}
	return b.Bytes(), nil
}

func isYAML(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

func isGenerated(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(generatedHeader))
	n, _ := f.Read(head)
	return string(head[:n]) == generatedHeader, nil
}

// Write writes the result under root and deletes the stale generated files.
// Files whose content is unchanged are not touched.
func (r *Result) Write(root string) error {
	for _, name := range r.sortedFiles() {
		file := filepath.Join(root, filepath.FromSlash(name))
		if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, r.Files[name]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, r.Files[name], 0o644); err != nil {
			return err
		}
	}
	for _, name := range r.Remove {
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Stale lists, relative to root, the files whose content on disk differs
// from the result (or is missing), and the generated files that should be
// deleted. It is empty when the committed output is up to date.
func (r *Result) Stale(root string) []string {
	var stale []string
	for _, name := range r.sortedFiles() {
		old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(old, r.Files[name]) {
			stale = append(stale, name)
		}
	}
	return append(stale, r.Remove...)
}

func (r *Result) sortedFiles() []string {
	names := make([]string, 0, len(r.Files))
	for n := range r.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

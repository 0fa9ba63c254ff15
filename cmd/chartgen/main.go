// Command chartgen writes the operator's Helm chart (dist/chart) from what
// `make deploy` installs: Chart.yaml and the templates under
// dist/chart/templates/config, generated from config/default and
// config/prometheus. values.yaml and the chart's other templates are
// written by hand. `make manifests` runs it; --check (make
// verify-manifests) writes nothing and fails when the chart is stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acme/platform-operator/internal/gen/chartgen"
	"github.com/acme/platform-operator/internal/gen/genfile"
)

func main() {
	root := flag.String("root", ".", "repository root")
	version := flag.String("version", "", "the operator's version (the Makefile's VERSION): the chart's version and appVersion; empty keeps Chart.yaml's")
	check := flag.Bool("check", false, "write nothing; fail if the chart is stale")
	flag.Parse()
	if err := run(*root, chartgen.Dir, *version, *check); err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}

func run(root, chart, version string, check bool) error {
	files, err := chartgen.Generate(root, chartgen.Chart{Version: version})
	if err != nil {
		return err
	}
	dir := filepath.Join(root, chart)
	owned := []string{"Chart.yaml", chartgen.TemplatesDir, "files"}
	if check {
		var stale []string
		for _, p := range chartgen.Files(files) {
			current, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil || !bytes.Equal(current, files[p]) {
				stale = append(stale, p)
			}
		}
		existing, _ := filepath.Glob(filepath.Join(dir, chartgen.TemplatesDir, "*"))
		for _, f := range existing {
			rel, _ := filepath.Rel(dir, f)
			if _, ok := files[filepath.ToSlash(rel)]; !ok {
				stale = append(stale, rel+" (not generated)")
			}
		}
		if len(stale) > 0 {
			return fmt.Errorf("%s is stale (run make manifests): %v", chart, stale)
		}
		return nil
	}
	changed, err := genfile.Staged(dir, owned, func(stage string) error {
		for _, p := range owned[1:] {
			if err := os.RemoveAll(filepath.Join(stage, p)); err != nil {
				return err
			}
		}
		for p, data := range files {
			if err := genfile.Replace(filepath.Join(stage, p), data); err != nil {
				return err
			}
		}
		return nil
	})
	for _, p := range changed {
		fmt.Println("wrote", filepath.Join(chart, p))
	}
	return err
}

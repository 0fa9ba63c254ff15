// Command crdgen writes the CRD of every chart-backed kind from the chart's
// values.schema.json. `make manifests` runs it from the repository root.
//
//	go run ./cmd/crdgen [--root .] [--kinds config/crd/kinds.yaml] [--out config/crd/bases]
//	                    [--kustomization config/crd/kustomization.yaml] [--check]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/acme/platform-operator/internal/gen/crdgen"
)

func main() {
	opts := crdgen.Options{}
	flag.StringVar(&opts.Root, "root", ".", "repository root; the other paths and the charts' paths are relative to it")
	flag.StringVar(&opts.KindsFile, "kinds", "config/crd/kinds.yaml", "kinds config: one entry per chart-backed kind")
	flag.StringVar(&opts.OutDir, "out", "config/crd/bases", "directory for the generated CRDs")
	flag.StringVar(&opts.Kustomization, "kustomization", "config/crd/kustomization.yaml", "kustomization listing every CRD in --out (empty: don't write one)")
	check := flag.Bool("check", false, "write nothing; fail if the files on disk are not up to date")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "crdgen: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}

	res, err := crdgen.Generate(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crdgen: %v\n", err)
		os.Exit(1)
	}
	if *check {
		if stale := res.Stale(opts.Root); len(stale) > 0 {
			fmt.Fprintf(os.Stderr, "crdgen: out of date (run make manifests): %q\n", stale)
			os.Exit(1)
		}
		return
	}
	if err := res.Write(opts.Root); err != nil {
		fmt.Fprintf(os.Stderr, "crdgen: %v\n", err)
		os.Exit(1)
	}
}

// Command csvgen rewrites the owned-CRD section (display names,
// descriptions, created resources, spec and status descriptors) of the
// ClusterServiceVersion base from the CRDs, charts and samples. Run by
// `make manifests`; --check only reports whether the file is up to date.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/acme/platform-operator/internal/gen/csvgen"
)

func main() {
	p := csvgen.DefaultPaths(".")
	flag.StringVar(&p.Root, "root", p.Root, "repository root")
	flag.StringVar(&p.CSV, "csv", p.CSV, "ClusterServiceVersion base to update")
	check := flag.Bool("check", false, "do not write; exit 1 when the CSV base is stale")
	flag.Parse()

	out, changed, err := csvgen.Generate(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "csvgen:", err)
		os.Exit(1)
	}
	if *check {
		if changed {
			fmt.Fprintf(os.Stderr, "csvgen: %s is stale; run make manifests\n", p.CSV)
			os.Exit(1)
		}
		return
	}
	if changed {
		if err := os.WriteFile(p.CSV, out, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "csvgen:", err)
			os.Exit(1)
		}
	}
}

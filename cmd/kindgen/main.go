// Command kindgen makes a Helm chart in helm-charts/ one of the operator's
// APIs (docs/adding-a-kind.md). `make kind CHART=... GROUP=... KIND=...`
// runs it from the repository root.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/acme/platform-operator/internal/gen/kindgen"
)

func main() {
	o := kindgen.Options{Log: os.Stdout}
	flag.StringVar(&o.Root, "root", ".", "repository root")
	flag.StringVar(&o.Chart, "chart", "", "chart directory under helm-charts/, e.g. helm-charts/podinfo")
	flag.StringVar(&o.Group, "group", "", "API group, e.g. apps.acme.com")
	flag.StringVar(&o.Version, "version", "v1alpha1", "API version")
	flag.StringVar(&o.Kind, "kind", "", "kind, UpperCamelCase, e.g. Podinfo")
	flag.StringVar(&o.Plural, "plural", "", "resource name (default: the lower-case plural of the kind)")
	flag.BoolVar(&o.ClusterScoped, "cluster-scoped", false, "make the kind cluster-scoped")
	flag.BoolVar(&o.AllowOutside, "allow-outside", false, "write into the new watches.yaml entry the confinement allowance for what the chart places outside a resource's namespace")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "kindgen: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if err := kindgen.Run(o); err != nil {
		fmt.Fprintln(os.Stderr, "kindgen:", err)
		os.Exit(1)
	}
}

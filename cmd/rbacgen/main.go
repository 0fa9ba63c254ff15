// Command rbacgen writes the Helm runtime's RBAC rules that the charts
// need into config/rbac/role.yaml, between its BEGIN and END marker lines.
// `make manifests` runs it; --check (make verify-manifests) only fails when
// the file is stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acme/platform-operator/internal/rbacgen"
)

func main() {
	in := rbacgen.Input{}
	var role string
	flag.StringVar(&in.Root, "root", ".", "repository root; the other paths are relative to it")
	flag.StringVar(&in.Kinds, "kinds", "config/crd/kinds.yaml", "the chart-backed kinds")
	flag.StringVar(&in.Samples, "samples", "config/samples", "the sample resources the charts are rendered with")
	flag.StringVar(&role, "role", "config/rbac/role.yaml", "the ClusterRole file to update")
	check := flag.Bool("check", false, "write nothing; fail if the role file is stale")
	flag.Parse()
	if err := run(in, filepath.Join(in.Root, role), *check); err != nil {
		fmt.Fprintln(os.Stderr, "rbacgen:", err)
		os.Exit(1)
	}
}

func run(in rbacgen.Input, rolePath string, check bool) error {
	section, err := rbacgen.Section(in)
	if err != nil {
		return err
	}
	current, err := os.ReadFile(rolePath)
	if err != nil {
		return err
	}
	out, err := rbacgen.Splice(current, section)
	if err != nil {
		return fmt.Errorf("%s: %w", rolePath, err)
	}
	if bytes.Equal(out, current) {
		return nil
	}
	if check {
		return fmt.Errorf("%s is stale: run make manifests", rolePath)
	}
	return os.WriteFile(rolePath, out, 0o644)
}

// Command rbacgen writes the Helm runtime's RBAC rules that the charts
// need into config/rbac/role.yaml, between its BEGIN and END marker lines,
// and the ClusterRole a namespace's ServiceAccount needs for releases
// applied as it into config/rbac/release_deployer_role.yaml.
// `make manifests` runs it; --check (make verify-manifests) only fails when
// the file is stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acme/platform-operator/internal/gen/rbacgen"
)

func main() {
	in := rbacgen.Input{}
	var role, deployer string
	flag.StringVar(&in.Root, "root", ".", "repository root; the other paths are relative to it")
	flag.StringVar(&in.Kinds, "kinds", "config/crd/kinds.yaml", "the chart-backed kinds")
	flag.StringVar(&in.Samples, "samples", "config/samples", "the sample resources the charts are rendered with")
	flag.StringVar(&in.Watches, "watches", "watches.yaml", "the watches file, whose crds fields say what the runtime does with each chart's crds/")
	flag.StringVar(&role, "role", "config/rbac/role.yaml", "the ClusterRole file to update")
	flag.StringVar(&deployer, "deployer-role", "config/rbac/release_deployer_role.yaml", "the release deployer ClusterRole file to write")
	check := flag.Bool("check", false, "write nothing; fail if the role file is stale")
	flag.Parse()
	if err := run(in, filepath.Join(in.Root, role), filepath.Join(in.Root, deployer), *check); err != nil {
		fmt.Fprintln(os.Stderr, "rbacgen:", err)
		os.Exit(1)
	}
}

func run(in rbacgen.Input, rolePath, deployerPath string, check bool) error {
	roles, err := rbacgen.Generate(in)
	if err != nil {
		return err
	}
	current, err := os.ReadFile(rolePath)
	if err != nil {
		return err
	}
	out, err := rbacgen.Splice(current, roles.Section)
	if err != nil {
		return fmt.Errorf("%s: %w", rolePath, err)
	}
	if err := update(rolePath, out, check); err != nil {
		return err
	}
	return update(deployerPath, []byte(roles.Deployer), check)
}

// update writes content to path unless it holds it already; with check it
// only fails when it does not.
func update(path string, content []byte, check bool) error {
	current, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if bytes.Equal(current, content) {
		return nil
	}
	if check {
		return fmt.Errorf("%s is stale: run make manifests", path)
	}
	return os.WriteFile(path, content, 0o644)
}

package crdgen

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixtureOptions generates the testdata fixture kinds into dir.
func fixtureOptions(root string) Options {
	return Options{Root: root, KindsFile: "kinds.yaml", OutDir: "out/bases", Kustomization: "out/kustomization.yaml"}
}

// copyFixture copies testdata's kinds file and charts into a temporary root.
func copyFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{"kinds.yaml", "charts/demo/values.schema.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestGolden pins the complete output for the fixture chart, so any change
// in rendering shows up as a reviewable diff. Refresh with
// `go test ./internal/gen/crdgen -run TestGolden -update`.
func TestGolden(t *testing.T) {
	g := NewWithT(t)
	res, err := Generate(fixtureOptions("testdata"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Remove).To(BeEmpty())
	g.Expect(res.Files).To(HaveLen(2))
	for name, content := range res.Files {
		golden := filepath.Join("testdata", "golden", filepath.Base(name))
		if *update {
			g.Expect(os.WriteFile(golden, content, 0o644)).To(Succeed())
			continue
		}
		want, err := os.ReadFile(golden)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(content)).To(Equal(string(want)), "%s differs from %s; rerun with -update and review the diff", name, golden)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	g := NewWithT(t)
	first, err := Generate(fixtureOptions("testdata"))
	g.Expect(err).NotTo(HaveOccurred())
	for range 5 {
		again, err := Generate(fixtureOptions("testdata"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.Files).To(Equal(first.Files))
	}
}

// TestWriteAndStale covers the file handling: writing, the up-to-date
// check, pruning of stale generated CRDs, and hand-written CRDs being kept
// and listed in the kustomization.
func TestWriteAndStale(t *testing.T) {
	g := NewWithT(t)
	root := copyFixture(t)
	opts := fixtureOptions(root)
	bases := filepath.Join(root, "out", "bases")
	g.Expect(os.MkdirAll(bases, 0o755)).To(Succeed())
	// A CRD crdgen generated for a kind that has since been removed.
	g.Expect(os.WriteFile(filepath.Join(bases, "old.example.com_gones.yaml"),
		[]byte(generatedHeader+" from charts/gone/values.schema.json. DO NOT EDIT.\n---\n"), 0o644)).To(Succeed())
	// A hand-written CRD.
	g.Expect(os.WriteFile(filepath.Join(bases, "manual.example.com_things.yaml"), []byte("apiVersion: v1\n"), 0o644)).To(Succeed())

	res, err := Generate(opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Remove).To(Equal([]string{"out/bases/old.example.com_gones.yaml"}))
	g.Expect(res.Stale(root)).To(ConsistOf(
		"out/bases/demo.example.com_demos.yaml", "out/kustomization.yaml", "out/bases/old.example.com_gones.yaml"))
	g.Expect(string(res.Files["out/kustomization.yaml"])).To(HaveSuffix(
		"resources:\n- bases/demo.example.com_demos.yaml\n- bases/manual.example.com_things.yaml\n"))

	g.Expect(res.Write(root)).To(Succeed())
	g.Expect(filepath.Join(bases, "old.example.com_gones.yaml")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(bases, "manual.example.com_things.yaml")).To(BeAnExistingFile())

	res, err = Generate(opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Stale(root)).To(BeEmpty())

	// Editing a generated file by hand makes it stale.
	g.Expect(os.WriteFile(filepath.Join(bases, "demo.example.com_demos.yaml"), []byte("edited\n"), 0o644)).To(Succeed())
	g.Expect(res.Stale(root)).To(Equal([]string{"out/bases/demo.example.com_demos.yaml"}))
}

// TestGenerateReportsEveryKind makes sure a broken chart schema fails the
// run, naming the kind and the schema file, and nothing is half-produced.
func TestGenerateReportsEveryKind(t *testing.T) {
	g := NewWithT(t)
	root := copyFixture(t)
	g.Expect(os.WriteFile(filepath.Join(root, "charts/demo/values.schema.json"),
		[]byte(`{"type": "object", "properties": {"a": {"oneOf": []}}}`), 0o644)).To(Succeed())
	_, err := Generate(fixtureOptions(root))
	g.Expect(err).To(MatchError(And(
		ContainSubstring("kind Demo"),
		ContainSubstring("charts/demo/values.schema.json"),
		ContainSubstring("#/properties/a/oneOf"))))

	g.Expect(os.Remove(filepath.Join(root, "charts/demo/values.schema.json"))).To(Succeed())
	_, err = Generate(fixtureOptions(root))
	g.Expect(err).To(MatchError(ContainSubstring("no such file")))
}

// TestCommittedCRDsUpToDate regenerates the real kinds in memory and
// compares with what is committed under config/crd.
func TestCommittedCRDsUpToDate(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("..", "..", "..")
	kinds, err := apikinds.LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, k := range kinds {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(k.SchemaPath()))); os.IsNotExist(err) {
			t.Skipf("%s does not exist yet", k.SchemaPath())
		}
	}
	res, err := Generate(Options{Root: root, KindsFile: "config/crd/kinds.yaml", OutDir: "config/crd/bases", Kustomization: "config/crd/kustomization.yaml"})
	g.Expect(err).NotTo(HaveOccurred())
	if stale := res.Stale(root); len(stale) > 0 {
		t.Fatalf("generated CRDs are out of date, run make manifests: %s", strings.Join(stale, ", "))
	}
}

// Package layout checks the shape of the repository against what
// DEVELOPMENT.md and docs/architecture.md say of it: the three wings of the
// Go code, the layout table, and the files the architecture points to.
package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/acme/platform-operator/"

// root is the repository root, two levels up from this package.
const root = "../.."

// runtimeDirs are the runtime's wing: what runs in the operator's Pod.
var runtimeDirs = []string{"cmd/manager", "extensions", "internal/operator"}

// TestRuntimeImportsNoGeneratorOrDevTool keeps the wings apart: no
// non-test file of the runtime imports a package of internal/gen or
// internal/devtools.
func TestRuntimeImportsNoGeneratorOrDevTool(t *testing.T) {
	for _, dir := range runtimeDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, wing := range []string{"internal/gen/", "internal/devtools/"} {
					if strings.HasPrefix(path, module+wing) {
						rel, _ := filepath.Rel(root, p)
						t.Errorf("%s (runtime) imports %s", rel, path)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// section returns the text of a markdown file from heading to the next
// heading of the same level.
func section(t *testing.T, file, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no %q", file, heading)
	}
	s = s[i+len(heading)+2:]
	level := heading[:strings.Index(heading, " ")+1]
	if j := strings.Index(s, "\n"+level); j >= 0 {
		s = s[:j]
	}
	return s
}

var (
	tableRow  = regexp.MustCompile(`(?m)^\| ([^|]+) \|`)
	backticks = regexp.MustCompile("`([^`]+)`")
)

// packageDirs lists the directories holding Go packages under the
// repository's code roots, as slash paths from the root.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, top := range []string{"cmd", "internal", "extensions/internal", "test"} {
		entries, err := filepath.Glob(filepath.Join(root, top, "*", "*"))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range entries {
			if !strings.HasSuffix(e, ".go") {
				continue
			}
			d, _ := filepath.Rel(root, filepath.Dir(e))
			seen[filepath.ToSlash(d)] = true
		}
		if top == "internal" { // internal/<wing>/<package>
			entries, _ = filepath.Glob(filepath.Join(root, top, "*", "*", "*.go"))
			for _, e := range entries {
				d, _ := filepath.Rel(root, filepath.Dir(e))
				seen[filepath.ToSlash(d)] = true
			}
		}
		for d := range seen {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// TestDevelopmentLayoutTable checks DEVELOPMENT.md's repository layout
// against the tree: every path it names exists, and every Go package of
// cmd/, internal/, extensions/internal/ and test/ has a row.
func TestDevelopmentLayoutTable(t *testing.T) {
	layout := section(t, "DEVELOPMENT.md", "## Repository layout")
	listed := map[string]bool{}
	for _, row := range tableRow.FindAllStringSubmatch(layout, -1) {
		for _, m := range backticks.FindAllStringSubmatch(row[1], -1) {
			p := strings.TrimSuffix(m[1], "/")
			listed[p] = true
			matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil || len(matches) == 0 {
				t.Errorf("DEVELOPMENT.md's layout names %s, which is not in the tree", m[1])
			}
		}
	}
	if len(listed) == 0 {
		t.Fatal("DEVELOPMENT.md's layout has no rows")
	}
	for _, d := range packageDirs(t) {
		if !listed[d] && !listed[filepath.ToSlash(filepath.Dir(d))] {
			t.Errorf("DEVELOPMENT.md's layout has no row for the package %s", d)
		}
	}
}

// goFile matches a Go file path written in docs/architecture.md.
var goFile = regexp.MustCompile("`((?:[a-z0-9_]+/)*[a-z0-9_]+\\.go)`")

// shortRoots are where architecture.md's short paths (package/file.go)
// live.
var shortRoots = []string{"", "internal/operator", "internal/gen", "internal/devtools", "extensions/internal"}

// TestArchitecturePointers checks that every Go file docs/architecture.md
// names exists, and that "Where to look first" names a file for each
// concern a newcomer asks about first.
func TestArchitecturePointers(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range goFile.FindAllStringSubmatch(string(b), -1) {
		if !strings.Contains(m[1], "/") {
			continue // a file of the package the sentence is about
		}
		found := false
		for _, r := range shortRoots {
			if _, err := os.Stat(filepath.Join(root, r, filepath.FromSlash(m[1]))); err == nil {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/architecture.md names %s, which is not in the tree", m[1])
		}
	}
	first := section(t, "docs/architecture.md", "## Where each concern lives")
	i := strings.Index(first, "Where to look first")
	if i < 0 {
		t.Fatal(`docs/architecture.md has no "Where to look first"`)
	}
	first = first[i:]
	for _, concern := range []string{"rollback", "drift policy", "ownership", "the admission render check", "Ready", "secret rotation", "the CronScaler target"} {
		line := ""
		for _, l := range strings.Split(first, "\n") {
			if strings.HasPrefix(l, "- "+concern+":") {
				line = l
			}
		}
		if line == "" || !goFile.MatchString(line) {
			t.Errorf(`docs/architecture.md's "Where to look first" names no file for %s`, concern)
		}
	}
}

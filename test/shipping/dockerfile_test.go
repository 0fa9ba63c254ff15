// Package shipping checks, without a container engine, what can be checked
// of how the operator is shipped: that the Dockerfile copies paths that
// exist, builds the same binaries as `make build`, and that the deployment
// manifests start binaries the image contains.
package shipping

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

const root = "../.."

// dockerfile is what the tests need to know of the Dockerfile.
type dockerfile struct {
	copySources []string          // sources of COPY without --from, relative to the build context
	builds      map[string]string // binary name -> Go package, from `go build -o [DIR/]NAME PKG`
	outputs     map[string]string // binary name -> path the builder stage writes it to
	fromBuilder map[string]string // path in the builder stage -> path in the image
	builderDir  string            // WORKDIR of the builder stage, where the sources are copied
	imageFiles  []string          // absolute paths the final stage copies from the builder or context
	workdir     string            // WORKDIR of the final stage
}

var (
	goBuildRe   = regexp.MustCompile(`go build .*-o (\S+) (\./\S+)`)
	makeBuildRe = regexp.MustCompile(`go build -o \$\(LOCALBIN\)/(\S+) (\./\S+)`)
)

func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Join continuation lines.
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	d := dockerfile{builds: map[string]string{}, outputs: map[string]string{}, fromBuilder: map[string]string{}}
	d.builderDir = "/"
	stage := 0
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			stage++
		case "WORKDIR":
			d.workdir = fields[1]
			if stage == 1 {
				d.builderDir = fields[1]
			}
		case "RUN":
			if m := goBuildRe.FindStringSubmatch(line); m != nil {
				out := m[1]
				if !strings.HasPrefix(out, "/") {
					out = filepath.Join(d.builderDir, out)
				}
				d.builds[filepath.Base(out)] = m[2]
				d.outputs[filepath.Base(out)] = out
			}
		case "COPY":
			args := fields[1:]
			fromBuilder := false
			for len(args) > 0 && strings.HasPrefix(args[0], "--") {
				fromBuilder = fromBuilder || strings.HasPrefix(args[0], "--from")
				args = args[1:]
			}
			dest := args[len(args)-1]
			if !fromBuilder {
				d.copySources = append(d.copySources, args[:len(args)-1]...)
			} else {
				for _, src := range args[:len(args)-1] {
					d.fromBuilder[src] = dest
				}
			}
			if stage == 2 {
				if !strings.HasPrefix(dest, "/") {
					dest = filepath.Join(d.workdir, dest)
				}
				d.imageFiles = append(d.imageFiles, dest)
			}
		}
	}
	return d
}

// makeBuilds returns binary name -> package of the Makefile's build target.
func makeBuilds(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	inBuild := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "build:") {
			inBuild = true
			continue
		}
		if inBuild && !strings.HasPrefix(line, "\t") {
			break
		}
		if m := makeBuildRe.FindStringSubmatch(line); inBuild && m != nil {
			out[m[1]] = m[2]
		}
	}
	return out
}

// TestDockerfileCopiesExistingPaths: every file or directory the image
// build copies from the context exists and is not excluded by
// .dockerignore.
func TestDockerfileCopiesExistingPaths(t *testing.T) {
	g := NewWithT(t)
	d := parseDockerfile(t)
	g.Expect(d.copySources).NotTo(BeEmpty())
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, src := range d.copySources {
		_, err := os.Stat(filepath.Join(root, src))
		g.Expect(err).NotTo(HaveOccurred(), "Dockerfile copies %s", src)
		g.Expect(string(ignore)).To(ContainSubstring("!"+strings.TrimSuffix(src, "/")),
			".dockerignore must let %s into the build context", src)
	}
}

// TestDockerfileBuildsWhatMakeBuilds: the image builds exactly the
// binaries `make build` builds, from the same packages, and `make build`
// produces them.
func TestDockerfileBuildsWhatMakeBuilds(t *testing.T) {
	g := NewWithT(t)
	d := parseDockerfile(t)
	mb := makeBuilds(t)
	g.Expect(d.builds).NotTo(BeEmpty())
	g.Expect(d.builds).To(Equal(mb))

	out := t.TempDir()
	cmd := exec.Command("make", "build", "LOCALBIN="+out)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(b))
	for name := range d.builds {
		st, err := os.Stat(filepath.Join(out, name))
		g.Expect(err).NotTo(HaveOccurred(), "make build did not produce %s", name)
		g.Expect(st.Mode().Perm() & 0o111).NotTo(BeZero())
	}
}

// TestDockerfileCopiesTheBinaries: the final stage copies each binary the
// builder writes, as a file, to the path the manifests run. (Building
// `-o extensions` next to the extensions/ source directory once wrote the
// binary into that directory, and the image got the directory.)
func TestDockerfileCopiesTheBinaries(t *testing.T) {
	g := NewWithT(t)
	d := parseDockerfile(t)
	for name, out := range d.outputs {
		g.Expect(d.fromBuilder).To(HaveKeyWithValue(out, "/"+name), "the image must get %s from %s", "/"+name, out)
		for _, src := range d.copySources {
			dir := filepath.Join(d.builderDir, src)
			g.Expect(out == dir || strings.HasPrefix(out, dir+"/")).To(BeFalse(),
				"the builder writes %s onto the copied source %s", out, src)
		}
	}
}

// TestManagerManifestMatchesImage: the containers of the operator
// Deployment run binaries the image contains, and the watches file they
// are given is where the image puts it.
func TestManagerManifestMatchesImage(t *testing.T) {
	g := NewWithT(t)
	d := parseDockerfile(t)
	data, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var dep *appsv1.Deployment
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var probe struct{ Kind string }
		g.Expect(yaml.Unmarshal([]byte(doc), &probe)).To(Succeed())
		if probe.Kind == "Deployment" {
			dep = &appsv1.Deployment{}
			g.Expect(yaml.Unmarshal([]byte(doc), dep)).To(Succeed())
		}
	}
	g.Expect(dep).NotTo(BeNil())
	var commands []string
	for _, c := range dep.Spec.Template.Spec.Containers {
		g.Expect(c.Command).NotTo(BeEmpty(), "container %s", c.Name)
		commands = append(commands, c.Command[0])
		g.Expect(d.imageFiles).To(ContainElement(c.Command[0]), "container %s runs a binary the image lacks", c.Name)
		for _, a := range c.Args {
			for _, flag := range []string{"--watches-file=", "--kinds-file="} {
				if v, ok := strings.CutPrefix(a, flag); ok {
					g.Expect(d.imageFiles).To(ContainElement(v), "%s names a file the image lacks", flag)
				}
			}
		}
	}
	sort.Strings(commands)
	g.Expect(commands).To(ContainElement("/manager"))
}

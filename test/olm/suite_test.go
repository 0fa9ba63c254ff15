// Package olm installs the operator the way OLM users do, on a local
// cluster with a real node: OLM itself from source (hack/olm/olm.sh, the
// offline `operator-sdk olm install`), the bundle with `operator-sdk run
// bundle`, an upgrade with `operator-sdk run bundle-upgrade`, `operator-sdk
// cleanup`, and a file-based catalog with a CatalogSource and a
// Subscription. `make test-olm` builds the images and runs it; it needs root.
package olm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/acme/platform-operator/test/realnode"
)

const (
	// The operator's namespace, as the OLM instructions of docs/operations.md use it.
	operatorNamespace  = "platform-operator-system"
	operatorDeployment = "platform-operator-controller-manager"
	packageName        = "platform-operator"

	// hack/test-olm.sh builds the operator image as :dev; the suite makes
	// one image of it per bundle version, so an upgrade changes the Pod's
	// image as a real release does.
	devImage     = "localhost:5000/platform-operator:dev"
	operatorRepo = "localhost:5000/platform-operator"
	// Bundles are pushed to the registry's plain-HTTP name and given to
	// operator-sdk by its HTTPS name (tlsName): operator-sdk reads the
	// index image over HTTPS only.
	bundleRepo   = "localhost:5000/platform-operator-bundle"
	catalogImage = "localhost:5000/platform-operator-catalog:v0.1.0"
	// Where the node finds operator-sdk's decompression image of run
	// bundle-upgrade, registry.access.redhat.com/ubi9/ubi:9.7.
	upgradeDecompressionStandIn = "localhost:5000/ubi9/ubi:9.7"
	firstVersion                = "0.1.0"
	upgradeVersion              = "0.1.1"
	// The nginx stand-in again with one more label, so another digest:
	// the upgrade's RELATED_IMAGE_NGINX.
	nginxUpgradeImage = realnode.NginxRepo + ":" + realnode.NginxTag + "-r2"
	// The upgrade's operator image ships the nginx chart at this version,
	// as its default, and keeps the chart of the first version beside it
	// (chartVersions): the upgrade rolls the Nginx releases out in waves.
	nginxUpgradeChartVersion = "0.1.1"
)

var (
	cluster *realnode.Cluster
	// OLM's images built from source (make olm-images), from the Makefile.
	olmImage = envOr("OLM_IMG", "localhost:5000/operator-framework/olm:v0.36.0")
	opmImage = envOr("OPM_IMG", "localhost:5000/operator-framework/opm:v1.60.0")
	// operator-sdk's scorecard-test built from source (make scorecard-image).
	scorecardImage = envOr("SCORECARD_IMG", "localhost:5000/operator-framework/scorecard-test:v1.42.2")
	// The bundle images of both versions, built by the suite from config/,
	// by their HTTPS names.
	bundleImages = map[string]string{}
	// The operator image of each version and the operand images of the
	// bundles, by digest ("repository@sha256:..."), as the registry has
	// them: the bundles reference them so.
	operatorImages = map[string]string{}
	digests        = map[string]string{}
	// The version of the nginx chart in the repository, the first
	// version's default; setup reads it from its Chart.yaml.
	nginxChartVersion string
	// The RELATED_IMAGE_* variables each version's bundle is built with:
	// the upgrade moves nginx to another digest.
	relatedImages = map[string]map[string]string{
		firstVersion: {
			"RELATED_IMAGE_NGINX":          realnode.NginxImage,
			"RELATED_IMAGE_NGINX_EXPORTER": realnode.ExporterImage,
			"RELATED_IMAGE_POSTGRES":       realnode.PostgresImage,
		},
		upgradeVersion: {
			"RELATED_IMAGE_NGINX":          nginxUpgradeImage,
			"RELATED_IMAGE_NGINX_EXPORTER": realnode.ExporterImage,
			"RELATED_IMAGE_POSTGRES":       realnode.PostgresImage,
		},
	}
)

// tlsName is an image of the node's registry by the name of its HTTPS
// listener: localhost:5443 serves what was pushed to localhost:5000.
func tlsName(image string) string {
	return strings.Replace(image, "localhost:5000/", "localhost:5443/", 1)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	os.Exit(realnode.Main(m, "olm", "OLM_E2E", "make test-olm", setup, func() { dump("olm", operatorNamespace, "operators") }))
}

// setup pushes the images make test-olm built, builds the bundles of both
// versions, and installs OLM.
func setup(c *realnode.Cluster) error {
	cluster = c
	root := c.Root
	start := time.Now()
	// operator-sdk run bundle-upgrade has no --decompression-image flag: its
	// catalog Pod's init container always runs operator-sdk's default,
	// registry.access.redhat.com/ubi9/ubi:9.7, which cannot be pulled here.
	// The node pulls that name from its local registry (localcluster), where
	// the opm image, which has the sh, cat and gzip that container runs,
	// goes by that path.
	if out, err := exec.Command("docker", "tag", opmImage, upgradeDecompressionStandIn).CombinedOutput(); err != nil {
		return fmt.Errorf("docker tag %s: %w\n%s", upgradeDecompressionStandIn, err, out)
	}
	images := []string{olmImage, opmImage, scorecardImage, upgradeDecompressionStandIn,
		realnode.NginxImage, realnode.ExporterImage, realnode.AppImage, realnode.PostgresImage, nginxUpgradeImage}
	// One image per version, as a release has: the same binaries, a
	// version label, so the two have different digests. The same for the
	// nginx of the upgrade. The upgrade's operator image also ships a new
	// version of the nginx chart (upgradeCharts).
	charts, err := upgradeCharts(root)
	if err != nil {
		return err
	}
	defer os.RemoveAll(charts)
	relabel := map[string]imageBuild{nginxUpgradeImage: {dockerfile: fmt.Sprintf("FROM %s\nLABEL org.opencontainers.image.revision=2\n", realnode.NginxImage)}}
	for _, v := range []string{firstVersion, upgradeVersion} {
		img := operatorRepo + ":v" + v
		relabel[img] = imageBuild{dockerfile: fmt.Sprintf("FROM %s\nLABEL org.opencontainers.image.version=%s\n", devImage, v)}
		images = append(images, img)
	}
	up := relabel[operatorRepo+":v"+upgradeVersion]
	// /opt/platform-operator is where the Dockerfile puts watches.yaml
	// and the charts (the manager's working directory); the image has no
	// shell, so the new files come in by COPY.
	up.dockerfile += "COPY watches.yaml /opt/platform-operator/watches.yaml\nCOPY helm-charts/ /opt/platform-operator/helm-charts/\n"
	up.context = charts
	relabel[operatorRepo+":v"+upgradeVersion] = up
	for img, b := range relabel {
		if err := b.build(img); err != nil {
			return err
		}
	}
	if err := cluster.Push(images...); err != nil {
		return err
	}
	for _, img := range images {
		d, err := repoDigest(img)
		if err != nil {
			return err
		}
		digests[img] = d
	}
	for _, v := range []string{firstVersion, upgradeVersion} {
		operatorImages[v] = digests[operatorRepo+":v"+v]
		if err := buildBundle(root, v, operatorRepo+":v"+v, bundleRepo+":v"+v, relatedImages[v]); err != nil {
			return err
		}
		bundleImages[v] = tlsName(bundleRepo + ":v" + v)
	}
	fmt.Fprintf(os.Stderr, "olm: images and bundles in the node's registry after %s\n", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if out, err := olmScript("install"); err != nil {
		dump("olm")
		return fmt.Errorf("installing OLM: %w\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "olm: OLM installed (packageserver Succeeded) in %s\n", time.Since(start).Round(time.Millisecond))

	return nil
}

// imageBuild is an image the suite derives from one make test-olm built.
type imageBuild struct {
	// dockerfile is its Dockerfile.
	dockerfile string
	// context is the directory its COPY instructions read; "" for none.
	context string
}

// build runs docker build for the image tagged img.
func (b imageBuild) build(img string) error {
	args := []string{"build", "--network", "host", "-t", img}
	if b.context != "" {
		args = append(args, "-f", "-", b.context)
	} else {
		args = append(args, "-")
	}
	build := exec.Command("docker", args...)
	build.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	build.Stdin = strings.NewReader(b.dockerfile)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", img, err, out)
	}
	return nil
}

// chartVersionLine is the version line of a Chart.yaml.
var chartVersionLine = regexp.MustCompile(`(?m)^version: (\S+)$`)

// upgradeCharts writes, in a new directory it returns, what the upgrade's
// operator image ships beside the first's, laid out as the image has it:
// helm-charts/nginx, the repository's chart at version
// nginxUpgradeChartVersion (its rendered objects change through the
// helm.sh/chart label); helm-charts/versions/nginx-<first version>, the
// repository's chart as it is; and watches.yaml, the repository's with
// that previous version listed in the Nginx entry's chartVersions, as
// docs/upgrading.md says to ship one. It sets nginxChartVersion.
func upgradeCharts(root string) (string, error) {
	src := filepath.Join(root, "helm-charts", "nginx")
	chartYAML, err := os.ReadFile(filepath.Join(src, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	m := chartVersionLine.FindSubmatch(chartYAML)
	if m == nil {
		return "", fmt.Errorf("%s/Chart.yaml has no version line", src)
	}
	nginxChartVersion = string(m[1])
	if nginxChartVersion == nginxUpgradeChartVersion {
		return "", fmt.Errorf("the nginx chart is at %s already: the upgrade's chart needs another version", nginxUpgradeChartVersion)
	}
	previous := "helm-charts/versions/nginx-" + nginxChartVersion
	watches, err := os.ReadFile(filepath.Join(root, "watches.yaml"))
	if err != nil {
		return "", err
	}
	const nginxEntry = "\n  chart: helm-charts/nginx\n"
	if strings.Count(string(watches), nginxEntry) != 1 {
		return "", fmt.Errorf("watches.yaml: want one entry with chart helm-charts/nginx")
	}
	watches = []byte(strings.Replace(string(watches), nginxEntry, nginxEntry+"  chartVersions: ["+previous+"]\n", 1))

	dir, err := os.MkdirTemp("", "platform-operator-upgrade-")
	if err != nil {
		return "", err
	}
	write := func() error {
		if err := os.WriteFile(filepath.Join(dir, "watches.yaml"), watches, 0o644); err != nil {
			return err
		}
		for _, dst := range []string{filepath.Join(dir, "helm-charts", "nginx"), filepath.Join(dir, filepath.FromSlash(previous))} {
			if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
				return err
			}
		}
		bumped := chartVersionLine.ReplaceAll(chartYAML, []byte("version: "+nginxUpgradeChartVersion))
		return os.WriteFile(filepath.Join(dir, "helm-charts", "nginx", "Chart.yaml"), bumped, 0o644)
	}
	if err := write(); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// olmScript runs hack/olm/olm.sh with the images of this suite.
func olmScript(arg string) (string, error) {
	env := []string{"OLM_IMG=" + olmImage, "OPM_IMG=" + opmImage, "HELM=" + filepath.Join(cluster.Root, "bin", "helm")}
	return cluster.RunEnv(env, "", filepath.Join(cluster.Root, "hack", "olm", "olm.sh"), arg)
}

// repoDigest returns the pushed image by digest, "repository@sha256:...".
func repoDigest(image string) (string, error) {
	out, err := exec.Command("docker", "inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}", image).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker inspect %s: %w\n%s", image, err, out)
	}
	repo := image[:strings.LastIndex(image, ":")]
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, repo+"@") {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s has no digest in %s: %s", image, repo, out)
}

// relatedImageLine matches the value line that follows a RELATED_IMAGE_*
// variable's name in config/manager/manager.yaml.
var relatedImageLine = regexp.MustCompile(`(- name: (RELATED_IMAGE_[A-Z_]+)\n\s+value: )(\S+)`)

// buildBundle does what `make bundle USE_IMAGE_DIGESTS=true
// bundle-build bundle-push` does with IMG, VERSION and RELATED_IMAGE_*
// set, in a copy of config/ so the working tree stays as it is: set the
// manager's image and the operand images, generate the bundle with every
// image resolved to its digest in the node's registry, validate it, build
// and push its image.
func buildBundle(root, version, img, bundleImg string, related map[string]string) error {
	dir, err := os.MkdirTemp("", "platform-operator-bundle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.CopyFS(filepath.Join(dir, "config"), os.DirFS(filepath.Join(root, "config"))); err != nil {
		return err
	}
	project, err := os.ReadFile(filepath.Join(root, "PROJECT"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "PROJECT"), project, 0o644); err != nil {
		return err
	}
	manager := filepath.Join(dir, "config", "manager", "manager.yaml")
	b, err := os.ReadFile(manager)
	if err != nil {
		return err
	}
	b = relatedImageLine.ReplaceAllFunc(b, func(m []byte) []byte {
		sub := relatedImageLine.FindSubmatch(m)
		if v, ok := related[string(sub[2])]; ok {
			return append(append([]byte{}, sub[1]...), v...)
		}
		return m
	})
	if err := os.WriteFile(manager, b, 0o644); err != nil {
		return err
	}
	kustomize := filepath.Join(root, "bin", "kustomize")
	sdk := filepath.Join(root, "bin", "operator-sdk")
	steps := [][]string{
		{"sh", "-c", fmt.Sprintf("cd config/manager && %s edit set image controller=%s", kustomize, img)},
		{"sh", "-c", fmt.Sprintf("%s build config/manifests | %s generate bundle -q --overwrite --version %s --channels=alpha --default-channel=alpha --use-image-digests", kustomize, sdk, version)},
		{sdk, "bundle", "validate", "./bundle", "--select-optional", "suite=operatorframework"},
		{"docker", "build", "-f", "bundle.Dockerfile", "-t", bundleImg, "."},
		{"docker", "push", bundleImg},
	}
	for _, s := range steps {
		cmd := exec.Command(s[0], s[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("bundle %s: %v: %w\n%s", version, s, err, out)
		}
	}
	return nil
}

// operatorSDK runs bin/operator-sdk against the cluster, trusting the
// registry's HTTPS listener.
func operatorSDK(args ...string) (string, error) {
	return cluster.RunEnv([]string{"SSL_CERT_FILE=" + cluster.RegistryCA}, "", filepath.Join(cluster.Root, "bin", "operator-sdk"), args...)
}

// dump prints what OLM and the operator did in namespaces, for a failure.
func dump(namespaces ...string) {
	out, _ := cluster.Kubectl("get", "pods,jobs,csv,subscriptions,installplans,catalogsources", "-A", "-o", "wide")
	fmt.Fprintln(os.Stderr, out)
	for _, ns := range namespaces {
		out, _ = cluster.Kubectl("describe", "csv", "-n", ns)
		fmt.Fprintln(os.Stderr, out)
		out, _ = cluster.Kubectl("get", "events", "-n", ns, "--sort-by=.lastTimestamp")
		fmt.Fprintln(os.Stderr, out)
	}
	for _, d := range []struct{ ns, name string }{{"olm", "olm-operator"}, {"olm", "catalog-operator"}, {operatorNamespace, operatorDeployment}} {
		out, _ = cluster.Kubectl("logs", "-n", d.ns, "deployment/"+d.name, "--all-containers", "--tail=60")
		fmt.Fprintf(os.Stderr, "--- logs of %s/%s\n%s\n", d.ns, d.name, out)
	}
}

package shipping

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// relatedImageEnv returns the RELATED_IMAGE_* variables of a container.
func relatedImageEnv(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
			out[e.Name] = e.Value
		}
	}
	return out
}

// imageBlocks returns the values paths of every image block (a map with a
// repository and a tag) in vals.
func imageBlocks(vals map[string]interface{}, prefix string) []string {
	var out []string
	if _, ok := vals["repository"].(string); ok {
		if _, ok := vals["tag"].(string); ok {
			return []string{strings.TrimSuffix(prefix, ".")}
		}
	}
	for k, v := range vals {
		if m, ok := v.(map[string]interface{}); ok {
			out = append(out, imageBlocks(m, prefix+k+".")...)
		}
	}
	sort.Strings(out)
	return out
}

// TestRelatedImagesMatchChartDefaults: every image block of every chart
// has a default image in watches.yaml, from a RELATED_IMAGE_* variable of
// the operator's Deployment whose value is the chart's own default. An
// operator whose variables are unset (`make run`) and one deployed from
// config/ then render the same manifests, and a chart's image bump that
// forgets the variable, or the reverse, fails here.
func TestRelatedImagesMatchChartDefaults(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var dep *appsv1.Deployment
	for _, doc := range strings.Split(string(b), "\n---") {
		d := &appsv1.Deployment{}
		if yaml.Unmarshal([]byte(doc), d) == nil && d.Kind == "Deployment" {
			dep = d
		}
	}
	g.Expect(dep).NotTo(BeNil())
	containers := map[string]map[string]string{}
	for _, c := range dep.Spec.Template.Spec.Containers {
		containers[c.Name] = relatedImageEnv(c)
	}
	manager := containers["manager"]
	g.Expect(manager).To(HaveKeyWithValue("RELATED_IMAGE_OPERATOR", "controller:latest"),
		"the operator's own image, replaced by config/manager's kustomization")
	operands := map[string]string{}
	for k, v := range manager {
		if k != "RELATED_IMAGE_OPERATOR" {
			operands[k] = v
		}
	}
	g.Expect(containers["extensions"]).To(Equal(operands), "the admission check renders with the manager's default images")

	// Chart paths in watches.yaml are relative to the repository root.
	wd, err := os.Getwd()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.Chdir(root)).To(Succeed())
	defer func() { g.Expect(os.Chdir(wd)).To(Succeed()) }()
	ws, err := watches.Load("watches.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	env := watchconfig.EnvOf(operands, nil)
	defaults, err := watchconfig.LoadImageDefaults("watches.yaml", env)
	g.Expect(err).NotTo(HaveOccurred())

	// Which variable each default comes from.
	raw, err := os.ReadFile("watches.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var entries []struct {
		ImageDefaults map[string]string `json:"imageDefaults"`
	}
	g.Expect(yaml.Unmarshal(raw, &entries)).To(Succeed())

	used := map[string]bool{}
	for i, w := range ws {
		blocks := imageBlocks(w.Chart.Values, "")
		var paths []string
		for _, d := range defaults[i] {
			paths = append(paths, d.Path)
			block := w.Chart.Values
			for _, p := range strings.Split(d.Path, ".") {
				block, _ = block[p].(map[string]interface{})
			}
			chartDefault := release.Image{Repository: block["repository"].(string), Tag: block["tag"].(string), Digest: block["digest"].(string)}
			g.Expect(d.Image).To(Equal(chartDefault), "%s %s: the variable and the chart's default image differ", w.Kind, d.Path)
			v := strings.Trim(entries[i].ImageDefaults[d.Path], "${}")
			g.Expect(v).To(HavePrefix("RELATED_IMAGE_"), "%s %s: a default image comes from a RELATED_IMAGE_* variable", w.Kind, d.Path)
			used[v] = true
		}
		slices.Sort(paths)
		g.Expect(paths).To(Equal(blocks), "%s: every image block of %s has a default image, and only image blocks do", w.Kind, w.ChartPath)
	}
	for v := range operands {
		g.Expect(used).To(HaveKey(v), "%s is set on the operator but no watch uses it", v)
	}
}

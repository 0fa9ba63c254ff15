package actionpath

import (
	"os"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestLayerOrder pins the order of the action path's layers: the code's
// list (Layers), and the picture of it in docs/architecture.md, which
// names the stale-pending step first and then each layer with its file.
func TestLayerOrder(t *testing.T) {
	g := NewWithT(t)
	var names []string
	for _, l := range Layers(newTestKind("Widget")) {
		names = append(names, l.Name)
	}
	g.Expect(names).To(Equal([]string{
		"chart version",
		"uninstall wait",
		"upgrade backoff",
		"failure events",
		"rollback note",
		"activity",
		"ownership",
		"remediation",
		"chart tests",
		"digest",
		"post-render",
		"confinement",
		"post-render memo",
		"record size",
		"release memo",
		"drift policy",
		"repair stamp",
		"release namespace",
		"CRDs",
		"capabilities",
		"values schema",
		"chart copy",
	}))

	doc, err := os.ReadFile("../../../docs/architecture.md")
	g.Expect(err).NotTo(HaveOccurred())
	var chain string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.Contains(line, "step: unlock stale pending") {
			chain = line
		}
	}
	g.Expect(chain).NotTo(BeEmpty(), "docs/architecture.md draws the action path")
	var drawn []string
	for _, m := range regexp.MustCompile(`\[([^\]<]+)<br/>([a-z]+\.go)\]`).FindAllStringSubmatch(chain, -1) {
		g.Expect(m[2]).To(BeAnExistingFile(), "the file the picture names for %q", m[1])
		drawn = append(drawn, m[1])
	}
	g.Expect(drawn).To(Equal(append([]string{"step: unlock stale pending"}, names...)))
}

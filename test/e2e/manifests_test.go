package e2e

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestDeployManifestsAccepted checks that what `make deploy` applies is
// accepted by a real API server: every object passes validation and
// admission (server-side dry run) in the operator's namespace.
func TestDeployManifestsAccepted(t *testing.T) {
	g := NewWithT(t)
	// A dry run cannot create the namespace the other objects live in.
	createNamespace(t, "platform-operator-system")
	for _, dir := range []string{"config/default", "config/samples"} {
		args := []string{"apply", "--server-side", "--dry-run=server", "-k", dir}
		if dir == "config/samples" {
			args = append(args, "-n", "platform-operator-system")
		}
		out, err := kubectl(args...)
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", dir, out)
		g.Expect(out).To(ContainSubstring("(server dry run)"))
	}
}

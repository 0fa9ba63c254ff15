package e2e

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestDeployManifestsAccepted checks that what `make deploy` applies (the
// suite applied config/default for real), the two-shard layout of
// docs/sharding.md and the samples are accepted by a real API server:
// every object passes validation and admission.
func TestDeployManifestsAccepted(t *testing.T) {
	g := NewWithT(t)
	for _, dir := range []string{"config/default", "config/shards", "config/samples"} {
		args := []string{"apply", "--server-side", "--dry-run=server", "-k", dir}
		if dir == "config/samples" {
			args = append(args, "-n", operatorNamespace)
		}
		out, err := env.Kubectl(args...)
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", dir, out)
		g.Expect(out).To(ContainSubstring("(server dry run)"))
	}
}

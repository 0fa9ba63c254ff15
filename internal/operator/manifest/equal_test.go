package manifest

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The manifests of one release of the nginx chart with the same values:
// as operator-sdk v1.42.2's helm-operator stored it (Helm's text, owner
// references on the objects only), and as this operator renders it.
const ownerUID = "eca1e660-ce6a-4ef2-9636-85a15a5a73aa"

func TestSameObjects(t *testing.T) {
	g := NewWithT(t)
	sdk, err := os.ReadFile("testdata/operator-sdk-manifest.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	ours, err := os.ReadFile("testdata/rendered-manifest.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(ours)).NotTo(Equal(string(sdk)), "the texts differ")

	same, err := SameObjects(string(ours), string(sdk), ownerUID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeTrue())

	same, err = SameObjects(string(ours), string(sdk), "another-owner")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeFalse(), "owner references to anything else count")

	changed := strings.Replace(string(ours), "replicas: 1", "replicas: 2", 1)
	g.Expect(changed).NotTo(Equal(string(ours)))
	same, err = SameObjects(changed, string(sdk), ownerUID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeFalse(), "a changed field counts")

	same, err = SameObjects(string(ours), string(ours), ownerUID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeFalse(), "deployed owner references to the owner are in no rendered object")
	same, err = SameObjects("a: [", string(ours), ownerUID)
	g.Expect(err).NotTo(HaveOccurred(), "the rendered manifest is not parsed")
	g.Expect(same).To(BeFalse())

	_, err = SameObjects("a: [", string(sdk), ownerUID)
	g.Expect(err).To(HaveOccurred())
}

package helmconfig

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
)

// testCapabilities is a 30-second view of a fake API server's
// capabilities, on a clock the test moves with tick, and the count of the
// server's version reads.
func testCapabilities() (c *Capabilities, fake *discoveryfake.FakeDiscovery, dc discovery.CachedDiscoveryInterface, fetches func() int, tick func(time.Duration)) {
	fake, fetches = helmtest.Server()
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	c = NewCapabilities(30 * time.Second)
	c.now = func() time.Time { return now }
	return c, fake, memory.NewMemCacheClient(fake), fetches, func(d time.Duration) { now = now.Add(d) }
}

func TestCapabilitiesCache(t *testing.T) {
	g := NewWithT(t)
	c, fake, dc, fetches, tick := testCapabilities()

	caps, err := c.Get(dc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(caps.KubeVersion.Version).To(Equal("v1.35.4"))
	g.Expect(caps.APIVersions.Has("apps/v1")).To(BeTrue())
	g.Expect(caps.APIVersions.Has("apps/v1/Deployment")).To(BeTrue())
	g.Expect(fetches()).To(Equal(1))

	t.Log("within the max age: shared, and every caller gets its own copy")
	caps.APIVersions[0] = "changed/v1"
	tick(29 * time.Second)
	again, err := c.Get(dc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fetches()).To(Equal(1))
	g.Expect(again.APIVersions).NotTo(ContainElement("changed/v1"))

	t.Log("a new API is seen once the max age has passed")
	fake.Resources = append(fake.Resources, &metav1.APIResourceList{
		GroupVersion: "monitoring.example.com/v1",
		APIResources: []metav1.APIResource{{Name: "monitors", Kind: "Monitor", Namespaced: true}},
	})
	tick(time.Second)
	caps, err = c.Get(dc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fetches()).To(Equal(2))
	g.Expect(caps.APIVersions.Has("monitoring.example.com/v1")).To(BeTrue())

	t.Log("or at once after invalidate")
	c.Invalidate()
	_, err = c.Get(dc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fetches()).To(Equal(3))
}

// TestReachableFromCapabilities: Helm's check that the API server is
// reachable, made before every action, is answered by a view of the
// capabilities fetched in the last max age, and fetches one otherwise.
func TestReachableFromCapabilities(t *testing.T) {
	g := NewWithT(t)
	c, fake, dc, fetches, tick := testCapabilities()

	g.Expect(c.Reachable(dc)).To(Succeed())
	g.Expect(fetches()).To(Equal(1), "no view yet: fetched")
	_, err := c.Get(dc)
	g.Expect(err).NotTo(HaveOccurred())
	tick(29 * time.Second)
	g.Expect(c.Reachable(dc)).To(Succeed())
	g.Expect(fetches()).To(Equal(1), "the action's view and its check share one fetch")

	t.Log("an old view is fetched again, and a server that does not answer fails the check")
	tick(time.Second)
	fake.PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	g.Expect(c.Reachable(dc)).To(MatchError(ContainSubstring("get the Kubernetes server version")))
	g.Expect(c.Reachable(dc)).To(HaveOccurred(), "a failed fetch leaves no view to answer from")
}

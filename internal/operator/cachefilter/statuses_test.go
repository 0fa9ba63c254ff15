package cachefilter

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// nginxWithStatus is an Nginx as the API server returns it after an
// install: a status with conditions and the release's manifest.
func nginxWithStatus(uid, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicaCount": int64(1)},
		"status": map[string]any{
			"observedGeneration": int64(2),
			"conditions": []any{
				map[string]any{"type": "Deployed", "status": "True", "reason": "InstallSuccessful", "observedGeneration": int64(2)},
				map[string]any{"type": "Ready", "status": "False", "reason": "Progressing", "message": "Available: 0/1", "observedGeneration": int64(2)},
			},
			"deployedRelease": map[string]any{"name": "web", "manifest": strings.Repeat("kind: Deployment\n", 200)},
			"history":         []any{map[string]any{"revision": int64(1), "chartVersion": "0.1.0"}},
		},
	}}
	u.SetGroupVersionKind(nginxGVK)
	u.SetNamespace("team")
	u.SetName("web")
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(rv)
	return u
}

func TestStatusesRestoreTheVersionTheCacheHolds(t *testing.T) {
	g := NewWithT(t)
	statuses := NewStatuses()
	transform := CacheOptions(nil, []schema.GroupVersionKind{nginxGVK}, labels.Everything(), statuses).DefaultTransform
	whole := nginxWithStatus("u1", "7")

	out, err := transform(whole.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	cached := out.(*unstructured.Unstructured)
	g.Expect(cached.Object["status"]).NotTo(HaveKey("deployedRelease"), "the cache keeps a trimmed status")

	// Read from the cache, the status comes back whole, integers as int64
	// as from the API server.
	read := cached.DeepCopy()
	g.Expect(statuses.Restore(read)).To(BeTrue())
	g.Expect(read.Object).To(Equal(whole.Object))

	// client-go may transform an object it already transformed (a
	// resync): the kept status stays the whole one.
	_, err = transform(cached.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	read = cached.DeepCopy()
	g.Expect(statuses.Restore(read)).To(BeTrue())
	g.Expect(read.Object["status"]).To(Equal(whole.Object["status"]))

	// Another version, or a new resource of the same name, is not answered
	// with a status kept for another.
	for _, other := range []*unstructured.Unstructured{nginxWithStatus("u1", "8"), nginxWithStatus("u2", "7")} {
		read := cached.DeepCopy()
		read.SetUID(other.GetUID())
		read.SetResourceVersion(other.GetResourceVersion())
		g.Expect(statuses.Restore(read)).To(BeFalse())
		g.Expect(read.Object["status"]).To(Equal(cached.Object["status"]), "left as read")
	}

	// The cache moves on: the next version's status is kept instead.
	next := nginxWithStatus("u1", "9")
	next.Object["status"].(map[string]any)["observedGeneration"] = int64(3)
	_, err = transform(next.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	read = cached.DeepCopy()
	g.Expect(statuses.Restore(read)).To(BeFalse(), "the version before is no longer kept")
	read.SetResourceVersion("9")
	g.Expect(statuses.Restore(read)).To(BeTrue())
	g.Expect(read.Object["status"]).To(Equal(next.Object["status"]))

	// A resource without status is read without one.
	bare := nginxWithStatus("u3", "1")
	bare.SetName("bare")
	delete(bare.Object, "status")
	_, err = transform(bare.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	read = bare.DeepCopy()
	read.Object["status"] = map[string]any{"stale": true}
	g.Expect(statuses.Restore(read)).To(BeTrue())
	g.Expect(read.Object).NotTo(HaveKey("status"))

	statuses.Forget(nginxGVK, types.NamespacedName{Namespace: "team", Name: "web"})
	read = cached.DeepCopy()
	read.SetResourceVersion("9")
	g.Expect(statuses.Restore(read)).To(BeFalse(), "forgotten once deleted")
	g.Expect(len(statuses.kept)).To(Equal(1))
}

// Kept compressed, a status with its manifest costs a fraction of its JSON.
func TestStatusesKeepStatusesCompressed(t *testing.T) {
	g := NewWithT(t)
	statuses := NewStatuses()
	u := nginxWithStatus("u1", "1")
	statuses.keep(u)
	raw, err := json.Marshal(u.Object["status"])
	g.Expect(err).NotTo(HaveOccurred())
	k := statuses.kept[statusKey{nginxGVK, types.NamespacedName{Namespace: "team", Name: "web"}}]
	g.Expect(len(k.status)).To(BeNumerically("<", len(raw)/5), "%d bytes kept of %d", len(k.status), len(raw))
}

// A write of this process is read back from the API server until the
// cache holds it.
func TestStatusesAwaitThisProcessWrites(t *testing.T) {
	g := NewWithT(t)
	statuses := NewStatuses()
	transform := CacheOptions(nil, []schema.GroupVersionKind{nginxGVK}, labels.Everything(), statuses).DefaultTransform
	key := types.NamespacedName{Namespace: "team", Name: "web"}
	out, err := transform(nginxWithStatus("u1", "7"))
	g.Expect(err).NotTo(HaveOccurred())
	cached := out.(*unstructured.Unstructured)

	statuses.Wrote(nginxGVK, key, "8")
	g.Expect(statuses.Restore(cached.DeepCopy())).To(BeFalse(), "the cache holds 7, this process wrote 8")
	statuses.Settled(nginxGVK, key, "8")
	g.Expect(statuses.Restore(cached.DeepCopy())).To(BeFalse(), "the API server's 8 is not what the cache holds")

	out, err = transform(nginxWithStatus("u1", "8"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(statuses.Restore(out.(*unstructured.Unstructured).DeepCopy())).To(BeTrue(), "the cache got to 8")

	// A write the cache saw before it was noted is not awaited.
	out, err = transform(nginxWithStatus("u1", "9"))
	g.Expect(err).NotTo(HaveOccurred())
	statuses.Wrote(nginxGVK, key, "9")
	g.Expect(statuses.Restore(out.(*unstructured.Unstructured).DeepCopy())).To(BeTrue())

	// A write never seen (the watch restarted and listed a later version)
	// is awaited until a read from the API server finds what the cache holds.
	statuses.Wrote(nginxGVK, key, "10")
	out, err = transform(nginxWithStatus("u1", "11"))
	g.Expect(err).NotTo(HaveOccurred())
	latest := out.(*unstructured.Unstructured)
	g.Expect(statuses.Restore(latest.DeepCopy())).To(BeFalse())
	statuses.Settled(nginxGVK, key, "11")
	g.Expect(statuses.Restore(latest.DeepCopy())).To(BeTrue())
}

// nginxWithRenderedManifest is an Nginx whose status holds a rendered
// manifest of the nginx chart.
func nginxWithRenderedManifest(b *testing.B) *unstructured.Unstructured {
	b.Helper()
	manifest, err := os.ReadFile("../manifest/testdata/rendered-manifest.yaml")
	if err != nil {
		b.Fatal(err)
	}
	u := nginxWithStatus("u1", "1")
	u.Object["status"].(map[string]any)["deployedRelease"] = map[string]any{"name": "web", "manifest": string(manifest)}
	return u
}

// BenchmarkStatusesKeep is what the cache's transform adds per event of a
// custom resource whose status holds a rendered Nginx manifest.
func BenchmarkStatusesKeep(b *testing.B) {
	u := nginxWithRenderedManifest(b)
	statuses := NewStatuses()
	b.ReportAllocs()
	for i := range b.N {
		u.SetResourceVersion(strconv.Itoa(i))
		statuses.keep(u)
	}
	b.ReportMetric(float64(len(statuses.kept[statusKey{nginxGVK, types.NamespacedName{Namespace: "team", Name: "web"}}].status)), "bytes-kept")
}

// BenchmarkStatusesRestore is what a read of the resource costs.
func BenchmarkStatusesRestore(b *testing.B) {
	u := nginxWithRenderedManifest(b)
	statuses := NewStatuses()
	statuses.keep(u)
	b.ReportAllocs()
	for range b.N {
		if !statuses.Restore(u.DeepCopy()) {
			b.Fatal("not restored")
		}
	}
}

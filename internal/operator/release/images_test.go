package release

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
)

func TestParseImage(t *testing.T) {
	g := NewWithT(t)
	digest := "sha256:" + strings.Repeat("ab", 32)
	for ref, want := range map[string]Image{
		"nginxinc/nginx-unprivileged:1.27.3-alpine":    {Repository: "nginxinc/nginx-unprivileged", Tag: "1.27.3-alpine"},
		"localhost:5000/nginx:1.22":                    {Repository: "localhost:5000/nginx", Tag: "1.22"},
		"localhost:5000/nginx@" + digest:               {Repository: "localhost:5000/nginx", Digest: digest},
		"registry.acme.com/pg/postgres:17.2@" + digest: {Repository: "registry.acme.com/pg/postgres", Tag: "17.2", Digest: digest},
	} {
		img, err := ParseImage(ref)
		g.Expect(err).NotTo(HaveOccurred(), ref)
		g.Expect(img).To(Equal(want), ref)
	}
	g.Expect(Image{Repository: "r", Tag: "1", Digest: digest}.String()).To(Equal("r@" + digest))
	g.Expect(Image{Repository: "r", Tag: "1"}.String()).To(Equal("r:1"))

	for ref, msg := range map[string]string{
		"nginx":                      "neither a tag nor a digest",
		"localhost:5000/nginx":       "neither a tag nor a digest",
		"Nginx:1":                    "not a valid repository",
		"nginx:1@sha256:abc":         "64 lowercase hex digits",
		"nginx:-bad":                 "not a valid tag",
		":1":                         "not a valid repository",
		"nginx@md5:" + digest[7:]:    "64 lowercase hex digits",
		"localhost:5000/nginx:a b":   "not a valid tag",
		"nginx:1.0@" + digest + "@x": "64 lowercase hex digits",
	} {
		_, err := ParseImage(ref)
		g.Expect(err).To(MatchError(ContainSubstring(msg)), ref)
	}
}

// TestValuesComputeImageDefaults: an image block the spec leaves unset
// runs the default; one that sets any of repository, tag and digest keeps
// its choice, completed by the chart's defaults.
func TestValuesComputeImageDefaults(t *testing.T) {
	g := NewWithT(t)
	digest := "sha256:" + strings.Repeat("0f", 32)
	chrt := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"},
		Values: map[string]interface{}{
			"image":   map[string]interface{}{"repository": "nginx", "tag": "1.27", "digest": "", "pullPolicy": "IfNotPresent"},
			"metrics": map[string]interface{}{"image": map[string]interface{}{"repository": "exporter", "tag": "1.4", "digest": ""}},
		},
	}
	v := Values{Chart: chrt, Images: []ImageDefault{
		{Path: "image", Image: Image{Repository: "mirror/nginx", Digest: digest}},
		{Path: "metrics.image", Image: Image{Repository: "mirror/exporter", Tag: "1.5"}},
	}}
	image := func(vals map[string]interface{}, path ...string) map[string]interface{} {
		var cur interface{} = vals
		for _, p := range path {
			cur = cur.(map[string]interface{})[p]
		}
		return cur.(map[string]interface{})
	}

	t.Log("unset blocks run the defaults; a digest default keeps the chart's tag for labels")
	vals, err := v.Compute(map[string]interface{}{"image": map[string]interface{}{"pullPolicy": "Always"}}, Placeholder, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(image(vals, "image")).To(Equal(map[string]interface{}{"repository": "mirror/nginx", "tag": "1.27", "digest": digest, "pullPolicy": "Always"}))
	g.Expect(image(vals, "metrics", "image")).To(Equal(map[string]interface{}{"repository": "mirror/exporter", "tag": "1.5", "digest": ""}))

	t.Log("a spec that sets only a tag keeps the chart's repository, not the default's")
	vals, err = v.Compute(map[string]interface{}{"image": map[string]interface{}{"tag": "1.25"}}, Placeholder, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(image(vals, "image")).To(Equal(map[string]interface{}{"repository": "nginx", "tag": "1.25", "digest": "", "pullPolicy": "IfNotPresent"}))

	t.Log("no defaults: the chart's own")
	vals, err = Values{Chart: chrt}.Compute(nil, Placeholder, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(image(vals, "image")["repository"]).To(Equal("nginx"))

	t.Log("a block that is not a map is an error, not a panic")
	_, err = v.Compute(map[string]interface{}{"metrics": "off"}, Placeholder, nil)
	g.Expect(err).To(MatchError(ContainSubstring("image default metrics.image")))
}

func TestKeepImages(t *testing.T) {
	g := NewWithT(t)
	vals := map[string]interface{}{
		"image":   map[string]interface{}{"repository": "new", "tag": "2", "pullPolicy": "Always"},
		"metrics": map[string]interface{}{"image": map[string]interface{}{"repository": "mine", "tag": "1"}},
	}
	stored := map[string]interface{}{
		"image":   map[string]interface{}{"repository": "old", "tag": "1", "digest": "", "pullPolicy": "IfNotPresent"},
		"metrics": map[string]interface{}{"image": map[string]interface{}{"repository": "stored", "tag": "0"}},
	}
	// Only the blocks that took the operator's default keep what ran.
	kept, err := KeepImages(vals, stored, []string{"image"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept["image"]).To(Equal(map[string]interface{}{"repository": "old", "tag": "1", "digest": "", "pullPolicy": "Always"}))
	g.Expect(kept["metrics"]).To(Equal(map[string]interface{}{"image": map[string]interface{}{"repository": "mine", "tag": "1"}}))
	g.Expect(vals["image"]).To(HaveKeyWithValue("repository", "new"), "vals is not changed")
	// A block the record does not hold stays.
	kept, err = KeepImages(vals, map[string]interface{}{}, []string{"metrics.image"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept["metrics"]).To(Equal(map[string]interface{}{"image": map[string]interface{}{"repository": "mine", "tag": "1"}}))
}

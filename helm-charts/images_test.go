package helmcharts_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestImagesByDigest: an image block with a digest renders
// repository@digest, without the tag; a digest that is not sha256 is
// refused by the schema.
func TestImagesByDigest(t *testing.T) {
	g := NewWithT(t)
	digest := "sha256:" + strings.Repeat("5a", 32)

	r, err := renderNginx(`
image: {repository: mirror.local/nginx, digest: ` + digest + `}
metrics: {enabled: true, image: {repository: mirror.local/exporter, tag: "1.5", digest: ` + digest + `}}
`)
	g.Expect(err).NotTo(HaveOccurred())
	d := r.Get("Deployment", nginxRelease)
	g.Expect(container(g, d, "nginx")["image"]).To(Equal("mirror.local/nginx@" + digest))
	g.Expect(container(g, d, "metrics")["image"]).To(Equal("mirror.local/exporter@" + digest))

	r, err = renderNginx(`image: {repository: mirror.local/nginx, tag: "1.27"}`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(container(g, r.Get("Deployment", nginxRelease), "nginx")["image"]).To(Equal("mirror.local/nginx:1.27"))

	_, err = renderNginx(`image: {digest: "md5:abc"}`)
	g.Expect(err).To(MatchError(ContainSubstring("digest")))

	r, err = renderWebApp(`database: {image: {repository: mirror.local/postgres, digest: ` + digest + `}}`)
	g.Expect(err).NotTo(HaveOccurred())
	sts := r.OfKind("StatefulSet")
	g.Expect(sts).To(HaveLen(1))
	g.Expect(container(g, sts[0], "postgres")["image"]).To(Equal("mirror.local/postgres@" + digest))
}

package watchconfig

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/acme/platform-operator/internal/operator/release"
)

func TestLoadImageDefaults(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "watches.yaml")
	write := func(s string) string {
		g.Expect(os.WriteFile(path, []byte(s), 0o600)).To(Succeed())
		return path
	}
	env := EnvOf(map[string]string{
		"RELATED_IMAGE_NGINX":    "mirror.local:5000/nginx:1.27",
		"RELATED_IMAGE_EXPORTER": "mirror.local:5000/exporter@sha256:" + sha,
		"RELATED_IMAGE_BAD":      "Nginx",
	}, nil)

	ds, err := LoadImageDefaults(write(`
- kind: Nginx
  imageDefaults:
    metrics.image: $RELATED_IMAGE_EXPORTER
    image: ${RELATED_IMAGE_NGINX}
- kind: Plain
- kind: Unset
  imageDefaults: {image: $RELATED_IMAGE_UNSET}
`), env)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ds).To(Equal([][]release.ImageDefault{
		{
			{Path: "image", Image: release.Image{Repository: "mirror.local:5000/nginx", Tag: "1.27"}},
			{Path: "metrics.image", Image: release.Image{Repository: "mirror.local:5000/exporter", Digest: "sha256:" + sha}},
		},
		nil,
		nil, // an unset variable leaves the chart's default
	}))

	_, err = LoadImageDefaults(write(`[{kind: A, imageDefaults: {image: $RELATED_IMAGE_BAD}}]`), env)
	g.Expect(err).To(MatchError(ContainSubstring(`entry 0 (A): imageDefaults image: $RELATED_IMAGE_BAD: image "Nginx"`)))
	_, err = LoadImageDefaults(write(`[{kind: A, imageDefaults: {"image.": x:1}}]`), env)
	g.Expect(err).To(MatchError(ContainSubstring(`"image." is not a values path`)))

	ignored, err := IgnoredFields(write(`[{kind: A, imageDefaults: {image: x:1}}]`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ignored).To(BeEmpty())
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

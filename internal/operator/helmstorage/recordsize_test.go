package helmstorage

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	prelease "github.com/acme/platform-operator/internal/operator/release"
)

// TestLimitRecordSize: a record over the limit is refused before it
// reaches the driver below; a small one, and any update, pass.
func TestLimitRecordSize(t *testing.T) {
	g := NewWithT(t)
	below := driver.NewMemory()
	d := LimitRecordSize(below)
	rev := func(v int, greeting string) *release.Release {
		return &release.Release{Name: "web", Namespace: "ns", Version: v, Info: &release.Info{Status: release.StatusPendingInstall},
			Config: map[string]interface{}{"greeting": greeting}, Manifest: "greeting: " + greeting}
	}
	// 1.5 MB of random base64 text: about 1.1 MB gzipped.
	b := make([]byte, 750_000)
	_, err := rand.Read(b)
	g.Expect(err).NotTo(HaveOccurred())
	big := base64.StdEncoding.EncodeToString(b)

	err = d.Create("sh.helm.release.v1.web.v1", rev(1, big))
	var tooLarge *prelease.RecordTooLargeError
	g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "%v", err)
	g.Expect(tooLarge.Release).To(Equal("web"))
	g.Expect(tooLarge.Size).To(BeNumerically(">", prelease.MaxRecordSize))
	_, err = below.Get("sh.helm.release.v1.web.v1")
	g.Expect(err).To(MatchError(driver.ErrReleaseNotFound), "nothing reached the driver")

	g.Expect(d.Create("sh.helm.release.v1.web.v1", rev(1, "hello"))).To(Succeed())
	g.Expect(d.Update("sh.helm.release.v1.web.v1", rev(1, big))).To(Succeed(), "updates are not measured")
	g.Expect(d.Name()).To(Equal(below.Name()))
}

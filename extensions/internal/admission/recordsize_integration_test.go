package admission

import (
	"crypto/rand"
	"encoding/base64"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWebhookRefusesTooLargeRelease: a WebApp whose config holds 1.5 MB
// of data that does not compress, which Helm could never store in its
// release record (one Secret, at most 1 MiB), is refused at apply with the
// record's size and the value that makes it, on create and on a spec edit;
// one whose config is large but fits is admitted.
func TestWebhookRefusesTooLargeRelease(t *testing.T) {
	g := NewWithT(t)
	c := adminClient(t)
	defer startWebhook(t)()
	ctx := t.Context()
	ns := newNamespace(t, c)

	// text returns n characters of base64 of random bytes: 6 bits each.
	text := func(n int) string {
		b := make([]byte, n*3/4)
		_, err := rand.Read(b)
		g.Expect(err).NotTo(HaveOccurred())
		return base64.StdEncoding.EncodeToString(b)
	}
	webapp := func(name, data string) *unstructured.Unstructured {
		return obj(ns, "WebApp", name, map[string]any{
			"deploymentTier": "dev", "webAppImage": "app:1", "webAppHostname": name + "." + ns + ".example.com",
			"config": map[string]any{"data.txt": data},
		})
	}

	t.Run("1.5 MB of config", func(t *testing.T) {
		g := NewWithT(t)
		huge := webapp("huge", text(1_500_000))
		refused(g, c.Create(ctx, huge),
			`WebApp.web.acme.com "huge" is invalid: spec: Too long: the record of release huge in namespace `+ns+` would be `,
			"bytes, over the 1048576 bytes (1 MiB) a Secret may hold: Helm stores each revision of a release in one Secret, so this spec can never be installed or upgraded",
			"the largest values are config (1500015 bytes), ",
			"make them smaller, or keep large data in a ConfigMap or Secret of its own")
		g.Expect(len(refusedMessage(c.Create(ctx, huge)))).To(BeNumerically("<", 2000), "the value itself is not in the answer")
		err := c.Get(ctx, client.ObjectKeyFromObject(huge), huge)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing stored: %v", err)
	})

	t.Run("large config that fits; an edit that makes it too large", func(t *testing.T) {
		g := NewWithT(t)
		large := webapp("large", text(200_000))
		g.Expect(c.Create(ctx, large)).To(Succeed())
		g.Expect(unstructured.SetNestedField(large.Object, text(1_500_000), "spec", "config", "data.txt")).To(Succeed())
		refused(g, c.Update(ctx, large), "spec: Too long: the record of release large in namespace "+ns+" would be ")
	})
}

// refusedMessage is the message of a refusal.
func refusedMessage(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

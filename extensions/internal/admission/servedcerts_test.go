package admission

import (
	"crypto/tls"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
)

func TestServedCertsChoose(t *testing.T) {
	oldCrt, oldKey := selfSigned(t)
	newCrt, newKey := selfSigned(t)
	both := append(append([]byte{}, oldCrt...), newCrt...)
	for _, tc := range []struct {
		name    string
		bundles map[string][][]byte
		want    []byte
	}{
		{name: "no caBundle known: the newest", want: newCrt},
		{name: "the caBundle trusts the old one", bundles: map[string][][]byte{"a": {oldCrt}}, want: oldCrt},
		{name: "the caBundle trusts the new one", bundles: map[string][][]byte{"a": {newCrt}}, want: newCrt},
		{name: "a caBundle of both CAs", bundles: map[string][][]byte{"a": {both}}, want: newCrt},
		{name: "the most webhooks", bundles: map[string][][]byte{"a": {oldCrt}, "b": {oldCrt}, "c": {newCrt}}, want: oldCrt},
		{name: "as many: the newest", bundles: map[string][][]byte{"a": {oldCrt}, "b": {newCrt}}, want: newCrt},
		{name: "trusted by none: the newest", bundles: map[string][][]byte{"a": {[]byte("not PEM")}}, want: newCrt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newServedCerts(logr.Discard())
			_, err := s.GetCertificate(&tls.ClientHelloInfo{})
			g.Expect(err).To(HaveOccurred(), "nothing to serve before the Secret")
			g.Expect(s.add(oldCrt, oldKey)).To(Succeed())
			g.Expect(s.ready).To(BeClosed())
			g.Expect(s.add(newCrt, newKey)).To(Succeed())
			g.Expect(s.add(oldCrt, oldKey)).To(Succeed(), "seen again: still the older")
			for name, b := range tc.bundles {
				s.setBundles(name, b)
			}
			got, err := s.GetCertificate(&tls.ClientHelloInfo{})
			g.Expect(err).NotTo(HaveOccurred())
			want, err := tls.X509KeyPair(tc.want, oldKey) // the key is not compared
			if err != nil {
				want, err = tls.X509KeyPair(tc.want, newKey)
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Certificate[0]).To(Equal(want.Certificate[0]))
		})
	}
	t.Run("not a key pair", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(newServedCerts(logr.Discard()).add(oldCrt, newKey)).NotTo(Succeed())
	})
}

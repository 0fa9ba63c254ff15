package admission

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change turns the defaults into the options under test.
		change func(*Options)
		// want is a part of the error; empty: valid.
		want string
	}{
		{name: "off by default", change: func(*Options) {}},
		{name: "off ignores the rest", change: func(o *Options) { o.Certs = "bogus" }},
		{name: "self-issued", change: func(o *Options) { o.Port = DefaultPort }},
		{name: "provided", change: func(o *Options) { o.Port = DefaultPort; o.Certs = CertsProvided; o.Secret = "" }},
		{name: "not a port", change: func(o *Options) { o.Port = 70000 }, want: "is not a port"},
		{name: "unknown certificate source", change: func(o *Options) { o.Port = DefaultPort; o.Certs = "cert-manager" },
			want: `--admission-certs must be "self", "secret" or "provided"`},
		{name: "a Secret's", change: func(o *Options) { o.Port = DefaultPort; o.Certs = CertsSecret }},
		{name: "a Secret's without a Service", change: func(o *Options) { o.Port = DefaultPort; o.Certs = CertsSecret; o.Service = "" },
			want: "--admission-certs=secret needs"},
		{name: "self-issued without a Secret", change: func(o *Options) { o.Port = DefaultPort; o.Secret = "" },
			want: "--admission-certs=self needs"},
		{name: "a certificate too short-lived", change: func(o *Options) { o.Port = DefaultPort; o.CertValidity = time.Second },
			want: "shorter than a minute"},
		{name: "no certificate directory", change: func(o *Options) { o.Port = DefaultPort; o.CertDir = "" },
			want: "--admission-cert-dir is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := DefaultOptions()
			tc.change(&o)
			err := o.Validate()
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

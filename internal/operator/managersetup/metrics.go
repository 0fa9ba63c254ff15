package managersetup

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsOptions returns controller-runtime metrics server options, the
// same for both processes, for an
// endpoint on bindAddress ("0" disables it). When secure, metrics are
// served over HTTPS and only to clients whose token may "get" the /metrics
// non-resource URL (the certificate is self-signed unless a CertDir is
// set); otherwise over plain HTTP, for local runs. HTTP/2 is off unless
// enabled, against HTTP/2 stream-reset attacks.
func metricsOptions(bindAddress string, secure, enableHTTP2 bool) metricsserver.Options {
	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	o := metricsserver.Options{
		BindAddress:   bindAddress,
		SecureServing: secure,
		TLSOpts:       tlsOpts,
	}
	if secure {
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

package localcluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// credentials are the keys and certificates a fresh cluster needs: a CA, the
// API server's serving certificate signed by it, and the key pair used to
// sign and verify service account tokens.
type credentials struct {
	caCert     string // PEM file: the CA that signed the serving certificate
	serverCert string // PEM file: kube-apiserver serving certificate
	serverKey  string // PEM file: its private key
	saKey      string // PEM file: service account signing key (private)
	saPub      string // PEM file: service account verification key (public)

	// The aggregation layer: kube-apiserver proxies requests for an
	// APIService (OLM's packageserver, metrics-server) with this client
	// certificate, and the aggregated server trusts the identity headers it
	// sets because frontProxyCA, published in the kube-system
	// extension-apiserver-authentication ConfigMap, signed it.
	frontProxyCA  string // PEM file: the CA of the proxy client certificate
	proxyClient   string // PEM file: kube-apiserver's client certificate (CN front-proxy-client)
	proxyClientKy string // PEM file: its private key
}

// The real node's registry's HTTPS certificate and key, in the state dir.
const (
	registryCertFile = "registry-tls.crt"
	registryKeyFile  = "registry-tls.key"
)

// frontProxyClientName is the only client name aggregated API servers accept
// identity headers from (--requestheader-allowed-names).
const frontProxyClientName = "front-proxy-client"

// writeCredentials generates new credentials into dir.
func writeCredentials(dir string) (credentials, error) {
	c := credentials{
		caCert:     filepath.Join(dir, "ca.crt"),
		serverCert: filepath.Join(dir, "apiserver.crt"),
		serverKey:  filepath.Join(dir, "apiserver.key"),
		saKey:      filepath.Join(dir, "sa.key"),
		saPub:      filepath.Join(dir, "sa.pub"),

		frontProxyCA:  filepath.Join(dir, "front-proxy-ca.crt"),
		proxyClient:   filepath.Join(dir, "front-proxy-client.crt"),
		proxyClientKy: filepath.Join(dir, "front-proxy-client.key"),
	}
	now := time.Now()

	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, fmt.Errorf("generating CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "platform-operator-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("signing CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, fmt.Errorf("parsing CA certificate: %w", err)
	}

	srvKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, fmt.Errorf("generating serving key: %w", err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP), net.ParseIP(NodeIP)},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("signing serving certificate: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, fmt.Errorf("generating service account key: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return c, fmt.Errorf("encoding service account public key: %w", err)
	}

	fpCAKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, fmt.Errorf("generating front proxy CA key: %w", err)
	}
	fpCATmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(3),
		Subject:               pkix.Name{CommonName: "platform-operator-local-front-proxy-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	fpCADER, err := x509.CreateCertificate(rand.Reader, fpCATmpl, fpCATmpl, &fpCAKey.PublicKey, fpCAKey)
	if err != nil {
		return c, fmt.Errorf("signing front proxy CA certificate: %w", err)
	}
	fpCA, err := x509.ParseCertificate(fpCADER)
	if err != nil {
		return c, fmt.Errorf("parsing front proxy CA certificate: %w", err)
	}
	proxyKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, fmt.Errorf("generating proxy client key: %w", err)
	}
	proxyDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(4),
		Subject:      pkix.Name{CommonName: frontProxyClientName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, fpCA, &proxyKey.PublicKey, fpCAKey)
	if err != nil {
		return c, fmt.Errorf("signing proxy client certificate: %w", err)
	}

	regKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, fmt.Errorf("generating registry key: %w", err)
	}
	regDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(5),
		Subject:      pkix.Name{CommonName: "registry"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}, ca, &regKey.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("signing registry certificate: %w", err)
	}

	for _, f := range []struct {
		path, kind string
		der        []byte
	}{
		{filepath.Join(dir, registryCertFile), "CERTIFICATE", regDER},
		{filepath.Join(dir, registryKeyFile), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(regKey)},
		{c.frontProxyCA, "CERTIFICATE", fpCADER},
		{c.proxyClient, "CERTIFICATE", proxyDER},
		{c.proxyClientKy, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(proxyKey)},
		{c.caCert, "CERTIFICATE", caDER},
		{c.serverCert, "CERTIFICATE", srvDER},
		{c.serverKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(srvKey)},
		{c.saKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)},
		{c.saPub, "PUBLIC KEY", saPub},
	} {
		data := pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der})
		if err := os.WriteFile(f.path, data, 0o600); err != nil {
			return c, fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return c, nil
}

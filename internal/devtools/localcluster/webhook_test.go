package localcluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The certificates serve 127.0.0.1 and localhost, a TLS client trusting
// only the CA accepts them, and a second call keeps them.
func TestWebhookCerts(t *testing.T) {
	state := t.TempDir()
	dir, caPEM, err := WebhookCerts(state, "127.0.0.1:9443")
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(state, WebhookDir) {
		t.Errorf("cert dir %s, want %s", dir, filepath.Join(state, WebhookDir))
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil || !bytes.Equal(onDisk, caPEM) {
		t.Fatalf("ca.crt is not the returned CA (%v)", err)
	}

	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	for _, name := range []string{"127.0.0.1", "localhost"} {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: name})
		if err != nil {
			t.Errorf("TLS to the webhook as %s: %v", name, err)
			continue
		}
		c.Close()
	}

	crt, _ := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if _, again, err := WebhookCerts(state, "127.0.0.1:9443"); err != nil || !bytes.Equal(again, caPEM) {
		t.Errorf("second call issued a new CA (%v)", err)
	}
	if crt2, _ := os.ReadFile(filepath.Join(dir, "tls.crt")); !bytes.Equal(crt, crt2) {
		t.Error("second call issued a new serving certificate")
	}

	// Another address, or a certificate about to expire, is issued again.
	_, other, err := WebhookCerts(state, "127.0.0.2:9443")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other, caPEM) {
		t.Error("a new address kept the old certificates")
	}
	if _, err := reuseWebhookCerts(dir, "127.0.0.2", time.Now()); err != nil {
		t.Errorf("the new certificates do not serve 127.0.0.2: %v", err)
	}
	if _, err := reuseWebhookCerts(dir, "127.0.0.2", time.Now().Add(webhookValidity)); err == nil {
		t.Error("certificates about to expire would be kept")
	}
}

// Every webhook of the shipped configuration calls the URL with the CA,
// none a Service, and the rest of each webhook is kept.
func TestWebhookConfiguration(t *testing.T) {
	data, err := os.ReadFile("../../../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ca := []byte("-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n")
	c, err := webhookConfiguration(data, "127.0.0.1:9443", ca)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != WebhookConfigurationName {
		t.Errorf("name %q, want %q", c.Name, WebhookConfigurationName)
	}
	if len(c.Webhooks) != 4 {
		t.Errorf("%d webhooks, want the 4 of the manifest", len(c.Webhooks))
	}
	for _, w := range c.Webhooks {
		cc := w.ClientConfig
		if cc.Service != nil {
			t.Errorf("%s: still calls Service %s", w.Name, cc.Service.Name)
		}
		if cc.URL == nil || *cc.URL != "https://127.0.0.1:9443/validate" {
			t.Errorf("%s: url %v, want https://127.0.0.1:9443/validate", w.Name, cc.URL)
		}
		if !bytes.Equal(cc.CABundle, ca) {
			t.Errorf("%s: caBundle %q, want the CA", w.Name, cc.CABundle)
		}
		if len(w.Rules) == 0 || len(w.MatchConditions) == 0 || w.FailurePolicy == nil {
			t.Errorf("%s: rules, matchConditions or failurePolicy lost", w.Name)
		}
	}
	if _, err := webhookConfiguration([]byte("kind: ConfigMap\n"), "127.0.0.1:9443", ca); err == nil {
		t.Error("a manifest without a ValidatingWebhookConfiguration was accepted")
	}
}

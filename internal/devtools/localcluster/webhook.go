package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The admission webhook of a sidecar run on this machine (make run): the
// local cluster's API server is a process on this machine too, so it can
// call the sidecar on loopback by URL, with a CA of our own in the caBundle.
// A cluster elsewhere cannot, and gets no such configuration.
const (
	// WebhookConfigurationName names the ValidatingWebhookConfiguration
	// RegisterWebhook applies, apart from the one make deploy installs.
	WebhookConfigurationName = "platform-operator-make-run"
	// WebhookDir is the directory in the state dir with the webhook's CA
	// (ca.crt) and serving certificate (tls.crt, tls.key), the layout the
	// sidecar's --admission-cert-dir expects.
	WebhookDir = "webhook"

	webhookFieldOwner = "platform-operator-make-run"
	webhookPath       = "/validate" // when the manifest's service names none
	// A certificate that expires within this is issued again.
	webhookRenewBefore = 7 * 24 * time.Hour
	webhookValidity    = 365 * 24 * time.Hour
)

// RegisterWebhook makes the cluster of kubeconfig call the sidecar's
// admission webhook at address (host:port, e.g. 127.0.0.1:9443): it issues
// the certificates (WebhookCerts) and applies the webhook configuration of
// the manifests file, rewritten to call https://address (ApplyWebhook). It
// returns the directory of the serving certificate. The conversion webhook
// of the CRDs in conversionCRDs (files) is pointed at the same address
// (ApplyConversion).
func RegisterWebhook(ctx context.Context, kubeconfig, stateDir, manifests, address string, conversionCRDs []string) (certDir string, err error) {
	certDir, caPEM, err := WebhookCerts(stateDir, address)
	if err != nil {
		return "", err
	}
	if err := ApplyWebhook(ctx, kubeconfig, manifests, address, caPEM); err != nil {
		return "", err
	}
	if err := ApplyConversion(ctx, kubeconfig, address, caPEM, conversionCRDs); err != nil {
		return "", err
	}
	return certDir, nil
}

// UnregisterWebhook deletes the configuration RegisterWebhook applied, if
// there is one.
func UnregisterWebhook(ctx context.Context, kubeconfig string) error {
	cs, err := Clientset(kubeconfig)
	if err != nil {
		return err
	}
	err = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, WebhookConfigurationName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ValidatingWebhookConfiguration %s: %w", WebhookConfigurationName, err)
	}
	return nil
}

// WebhookCerts returns <stateDir>/webhook, holding a CA (ca.crt) and a
// serving certificate it signed (tls.crt, tls.key) valid for the host of
// address and localhost, and the CA's PEM. Certificates already there are
// kept when they still fit: they match, verify for the host and are not
// about to expire. Otherwise both are issued anew.
func WebhookCerts(stateDir, address string) (certDir string, caPEM []byte, err error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return "", nil, fmt.Errorf("webhook address %q: %w", address, err)
	}
	if host == "" {
		return "", nil, fmt.Errorf("webhook address %q has no host", address)
	}
	certDir, err = filepath.Abs(filepath.Join(stateDir, WebhookDir))
	if err != nil {
		return "", nil, err
	}
	if caPEM, err := reuseWebhookCerts(certDir, host, time.Now()); err == nil {
		return certDir, caPEM, nil
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return "", nil, err
	}
	caPEM, err = writeWebhookCerts(certDir, host, time.Now())
	if err != nil {
		return "", nil, err
	}
	return certDir, caPEM, nil
}

// reuseWebhookCerts returns the CA of the certificates in dir when they
// serve host until well after now.
func reuseWebhookCerts(dir, host string, now time.Time) ([]byte, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, err
	}
	if err := verifyWebhookCert(caPEM, pair.Certificate[0], host, now.Add(webhookRenewBefore)); err != nil {
		return nil, err
	}
	return caPEM, nil
}

// verifyWebhookCert checks that the serving certificate der, signed by the
// CA in caPEM, is valid for host and for localhost at the time at.
func verifyWebhookCert(caPEM, der []byte, host string, at time.Time) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("no CA certificate")
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	for _, name := range []string{host, "localhost"} {
		if _, err := cert.Verify(x509.VerifyOptions{
			DNSName:     name,
			Roots:       pool,
			CurrentTime: at,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}); err != nil {
			return err
		}
	}
	return nil
}

// writeWebhookCerts issues a CA and a serving certificate for host and
// localhost into dir and returns the CA's PEM.
func writeWebhookCerts(dir, host string, now time.Time) ([]byte, error) {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating webhook CA key: %w", err)
	}
	serial := func() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62)) }
	caSerial, err := serial()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: "platform-operator-make-run-webhook-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(webhookValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing webhook CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	srvKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating webhook serving key: %w", err)
	}
	srvSerial, err := serial()
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: srvSerial,
		Subject:      pkix.Name{CommonName: "platform-operator-make-run-webhook"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(webhookValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.Equal(srvTmpl.IPAddresses[0]) {
			srvTmpl.IPAddresses = append(srvTmpl.IPAddresses, ip)
		}
	} else if host != "localhost" {
		srvTmpl.DNSNames = append(srvTmpl.DNSNames, host)
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing webhook serving certificate: %w", err)
	}

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	// The key first and the certificate last: the sidecar's certificate
	// watcher reloads on either, and a pair is complete once tls.crt is.
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"ca.crt", caPEM},
		{"tls.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(srvKey)})},
		{"tls.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER})},
	} {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}

// writeFileAtomic replaces path with data in one rename.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ApplyWebhook creates, or replaces, the ValidatingWebhookConfiguration
// WebhookConfigurationName in the cluster of kubeconfig: the one in the
// manifests file with every webhook calling https://address instead of the
// Service, trusting the CA caPEM.
func ApplyWebhook(ctx context.Context, kubeconfig, manifests, address string, caPEM []byte) error {
	data, err := os.ReadFile(manifests)
	if err != nil {
		return err
	}
	want, err := webhookConfiguration(data, address, caPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", manifests, err)
	}
	cs, err := Clientset(kubeconfig)
	if err != nil {
		return err
	}
	api := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	// Create, or replace what an earlier run left (another address, another
	// CA, webhooks since removed from the manifests) as a whole.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, want, metav1.CreateOptions{FieldManager: webhookFieldOwner})
			return err
		}
		if err != nil {
			return err
		}
		update := want.DeepCopy()
		update.ResourceVersion = have.ResourceVersion
		_, err = api.Update(ctx, update, metav1.UpdateOptions{FieldManager: webhookFieldOwner})
		return err
	})
	if err != nil {
		return fmt.Errorf("applying ValidatingWebhookConfiguration %s: %w", want.Name, err)
	}
	return nil
}

// webhookConfiguration reads the ValidatingWebhookConfiguration in the
// manifest data and returns it named WebhookConfigurationName, each webhook
// calling https://address/<its service path> with caPEM as caBundle.
func webhookConfiguration(data []byte, address string, caPEM []byte) (*admissionv1.ValidatingWebhookConfiguration, error) {
	if _, _, err := net.SplitHostPort(address); err != nil {
		return nil, fmt.Errorf("webhook address %q: %w", address, err)
	}
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no ValidatingWebhookConfiguration")
		}
		if err != nil {
			return nil, err
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, err
		}
		if meta.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		var in admissionv1.ValidatingWebhookConfiguration
		if err := yaml.UnmarshalStrict(doc, &in); err != nil {
			return nil, err
		}
		if len(in.Webhooks) == 0 {
			return nil, errors.New("the ValidatingWebhookConfiguration has no webhooks")
		}
		out := &admissionv1.ValidatingWebhookConfiguration{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
			ObjectMeta: metav1.ObjectMeta{
				Name: WebhookConfigurationName,
				Labels: map[string]string{
					"app.kubernetes.io/name":       "platform-operator",
					"app.kubernetes.io/managed-by": "make-run",
				},
			},
			Webhooks: in.Webhooks,
		}
		for i := range out.Webhooks {
			w := &out.Webhooks[i]
			path := webhookPath
			if s := w.ClientConfig.Service; s != nil && s.Path != nil && *s.Path != "" {
				path = *s.Path
			}
			url := "https://" + address + path
			w.ClientConfig = admissionv1.WebhookClientConfig{URL: &url, CABundle: bytes.Clone(caPEM)}
		}
		return out, nil
	}
}

// ApplyConversion makes the cluster of kubeconfig call the sidecar's
// conversion webhook at address (host:port): it applies each CRD file
// (config/crd/bases/<crd>.yaml of a kind with a second version) with its
// conversion clientConfig rewritten to https://address<path> and the CA
// caPEM, where path is the one the file names (apikinds.ConversionPath).
// Such a CRD names the webhook Service, which an API server on this
// machine cannot reach for a sidecar run as a process; without this every
// read of the kind in a version it is not stored in fails.
//
// It applies as kubectl's server-side apply does (field manager
// "kubectl"), so that the next `kubectl apply --server-side` of config/crd
// or config/default replaces the URL with the Service again, instead of
// leaving both (which the API server refuses).
func ApplyConversion(ctx context.Context, kubeconfig, address string, caPEM []byte, crdFiles []string) error {
	if _, _, err := net.SplitHostPort(address); err != nil {
		return fmt.Errorf("webhook address %q: %w", address, err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	api := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, file := range crdFiles {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &crd.Object); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		path, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "path")
		if path == "" {
			return fmt.Errorf("%s: the CRD's conversion webhook names no Service path", file)
		}
		cc := map[string]any{"url": "https://" + address + path, "caBundle": base64.StdEncoding.EncodeToString(caPEM)}
		if err := unstructured.SetNestedMap(crd.Object, cc, "spec", "conversion", "webhook", "clientConfig"); err != nil {
			return err
		}
		body, err := json.Marshal(crd.Object)
		if err != nil {
			return err
		}
		if _, err := api.Patch(ctx, crd.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "kubectl", Force: ptr.To(true)}); err != nil {
			return fmt.Errorf("pointing the conversion webhook of CRD %s at %s: %w", crd.GetName(), address, err)
		}
	}
	return nil
}

package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// maxServedCerts is how many of the certificates the Secret held are kept
// to choose from: the current one and those it replaced.
const maxServedCerts = 4

// servedCerts chooses the certificate the webhook serves under
// CertsSecret: of the certificates the Secret has held, the newest that
// the caBundles of the webhooks calling the Service trust.
//
// Whoever keeps the Secret (OLM) writes a new certificate and then the
// caBundles of its CA, one write after the other. A replica that served
// the Secret's certificate the moment it changed would be refused until
// the caBundles follow; one that served the mounted volume would be
// refused from then until the kubelet refreshes the volume, which takes
// up to a minute. This one switches when the caBundles do.
type servedCerts struct {
	log logr.Logger

	mu sync.Mutex
	// seen are the certificates the Secret held, oldest first.
	seen []*tls.Certificate
	// bundles are the caBundles of the webhooks that call the Service, by
	// the name of their configuration.
	bundles map[string][][]byte
	current *tls.Certificate

	// ready is closed once there is a certificate to serve.
	ready chan struct{}
	once  sync.Once
}

func newServedCerts(log logr.Logger) *servedCerts {
	return &servedCerts{log: log, bundles: map[string][][]byte{}, ready: make(chan struct{})}
}

// GetCertificate is the TLS server's: the certificate chosen last.
func (s *servedCerts) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return nil, errors.New("no serving certificate yet")
	}
	return s.current, nil
}

// add takes a certificate and key the Secret holds.
func (s *servedCerts) add(crt, key []byte) error {
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.seen {
		if string(c.Certificate[0]) == string(pair.Certificate[0]) {
			return nil
		}
	}
	s.seen = append(s.seen, &pair)
	if len(s.seen) > maxServedCerts {
		s.seen = s.seen[len(s.seen)-maxServedCerts:]
	}
	s.choose()
	return nil
}

// setBundles records the caBundles of a configuration's webhooks that call
// the Service; none forgets the configuration.
func (s *servedCerts) setBundles(configuration string, bundles [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(bundles) == 0 {
		delete(s.bundles, configuration)
	} else {
		s.bundles[configuration] = bundles
	}
	s.choose()
}

// choose picks, of the unexpired certificates, the one most caBundles
// trust, the newest of those; with no caBundle known, the newest.
// The caller holds mu.
func (s *servedCerts) choose() {
	now := time.Now()
	var pools []*x509.CertPool
	names := make([]string, 0, len(s.bundles))
	for name := range s.bundles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, b := range s.bundles[name] {
			pool := x509.NewCertPool()
			if pool.AppendCertsFromPEM(b) {
				pools = append(pools, pool)
			}
		}
	}
	var best *tls.Certificate
	bestTrusted := -1
	for i := len(s.seen) - 1; i >= 0; i-- {
		c := s.seen[i]
		if c.Leaf == nil || now.After(c.Leaf.NotAfter) {
			continue
		}
		if trusted := trustedBy(c, pools, now); trusted > bestTrusted {
			best, bestTrusted = c, trusted
		}
	}
	if best == nil || best == s.current {
		return
	}
	s.current = best
	s.log.Info("Serving the webhook certificate of the Secret", "serial", best.Leaf.SerialNumber.String(),
		"notAfter", best.Leaf.NotAfter.UTC().Format(time.RFC3339), "trustedBy", fmt.Sprintf("%d of %d webhooks", bestTrusted, len(pools)))
	s.once.Do(func() { close(s.ready) })
}

// trustedBy counts the pools that c's chain verifies against.
func trustedBy(c *tls.Certificate, pools []*x509.CertPool, now time.Time) int {
	intermediates := x509.NewCertPool()
	for _, der := range c.Certificate[1:] {
		if cert, err := x509.ParseCertificate(der); err == nil {
			intermediates.AddCert(cert)
		}
	}
	n := 0
	for _, pool := range pools {
		_, err := c.Leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: intermediates, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if err == nil {
			n++
		}
	}
	return n
}

// secretCertSource feeds servedCerts from the API server: the Secret's
// certificate and the caBundles of the webhooks that call the Service,
// each as soon as a watch sees it. It runs on every replica.
type secretCertSource struct {
	cache   cache.Cache
	secret  types.NamespacedName
	service types.NamespacedName
	certs   *servedCerts
}

func newSecretCertSource(mgr ctrl.Manager, secret, service types.NamespacedName, certs *servedCerts) (*secretCertSource, error) {
	c, err := secretCache(mgr, secret)
	if err != nil {
		return nil, err
	}
	return &secretCertSource{cache: c, secret: secret, service: service, certs: certs}, nil
}

func (*secretCertSource) NeedLeaderElection() bool { return false }

func (s *secretCertSource) Start(ctx context.Context) error {
	secrets, err := s.cache.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("watch the webhook's Secret: %w", err)
	}
	configurations, err := s.cache.GetInformer(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	if err != nil {
		return fmt.Errorf("watch the webhook configurations: %w", err)
	}
	addSecret := func(obj any) {
		sec, ok := obj.(*corev1.Secret)
		if !ok || sec.Name != s.secret.Name {
			return
		}
		crt, key := sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey]
		if len(crt) == 0 || len(key) == 0 {
			return
		}
		if err := s.certs.add(crt, key); err != nil {
			s.certs.log.Error(err, "The webhook's Secret holds no usable certificate", "secret", s.secret.String())
		}
	}
	// A deleted Secret changes nothing: its certificate stays served
	// until a new one is trusted.
	secretReg, err := secrets.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    addSecret,
		UpdateFunc: func(_, obj any) { addSecret(obj) },
	})
	if err != nil {
		return err
	}
	setConfiguration := func(obj any) {
		if vwc, ok := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
			s.certs.setBundles(vwc.Name, s.bundlesOf(vwc))
		}
	}
	configurationReg, err := configurations.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    setConfiguration,
		UpdateFunc: func(_, obj any) { setConfiguration(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if vwc, ok := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
				s.certs.setBundles(vwc.Name, nil)
			}
		},
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return errors.Join(secrets.RemoveEventHandler(secretReg), configurations.RemoveEventHandler(configurationReg))
}

// bundlesOf returns the caBundles of vwc's webhooks that call the Service.
func (s *secretCertSource) bundlesOf(vwc *admissionregistrationv1.ValidatingWebhookConfiguration) [][]byte {
	var bundles [][]byte
	for _, wh := range vwc.Webhooks {
		svc := wh.ClientConfig.Service
		if svc == nil || svc.Namespace != s.service.Namespace || svc.Name != s.service.Name || len(wh.ClientConfig.CABundle) == 0 {
			continue
		}
		bundles = append(bundles, wh.ClientConfig.CABundle)
	}
	return bundles
}

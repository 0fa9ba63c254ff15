package admission

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/acme/platform-operator/extensions/internal/conversion"
	"github.com/acme/platform-operator/extensions/internal/cronscaler"
	"github.com/acme/platform-operator/extensions/internal/tenant"
	"github.com/acme/platform-operator/internal/operator/admissioncheck"
	"github.com/acme/platform-operator/internal/operator/apikinds"
	"github.com/acme/platform-operator/internal/operator/claims"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// SetupWithManager adds the webhook server to mgr, serving the validating
// webhook (Path) and the CRD conversion webhook (conversion.Path), and with
// CertsSelf the issuing and rotation of its certificate. It needs the indexes of the
// CronScaler controller (cronscaler.SetupWithManager). Webhooks need no
// leadership: every replica serves them, and the Pod is ready once its
// server is.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	if o.Port == 0 {
		return nil
	}
	if err := o.Validate(); err != nil {
		return err
	}
	env := watchconfig.OSEnv()
	f, err := watchconfig.Load(o.WatchesFile, env)
	if err != nil {
		return err
	}
	releaseNamespace := o.ReleaseNamespace
	if releaseNamespace == "" {
		releaseNamespace = watchconfig.ResolveReleaseNamespace(env)
	}
	hosts := admissioncheck.Hosts{Scope: o.HostScope}
	if o.HostScope != claims.HostsOff {
		if err := IndexIngressHosts(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return fmt.Errorf("index the Ingresses by host: %w", err)
		}
		hosts.Ingresses = IngressesByHost{Reader: mgr.GetCache()}
	}
	check, err := admissioncheck.New(mgr.GetConfig(), mgr.GetRESTMapper(), mgr.GetAPIReader(), f, releaseNamespace, hosts)
	if err != nil {
		return fmt.Errorf("set up the admission checks: %w", err)
	}
	if err := tenant.IndexNamespaces(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// HTTP/2 stays off (CVE-2023-44487, CVE-2023-39325); the API server
	// speaks HTTP/1.1 to webhooks anyway.
	tlsOpts := []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	log := mgr.GetLogger().WithName("admission")
	var served *servedCerts
	if o.Certs == CertsSecret {
		served = newServedCerts(log)
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.GetCertificate = served.GetCertificate })
	}
	srv := webhook.NewServer(webhook.Options{Host: o.Host, Port: o.Port, CertDir: o.CertDir, TLSOpts: tlsOpts})
	responses, err := registerResponseCounter(ctrlmetrics.Registry, NewResponseCounter())
	if err != nil {
		return err
	}
	var handler http.Handler = &webhook.Admission{Handler: counted{Validator: &Validator{
		Check:   check,
		Targets: cronscaler.TargetClaims{Client: mgr.GetClient()},
		// The client reads unstructured objects from the API server, which
		// cannot select by the index: the cache can.
		Tenants: tenant.NamespaceClaims{Client: mgr.GetCache()},
		Access:  ValuesFromAccess{Client: mgr.GetClient()},
	}, responses: responses}}
	if o.Draining != nil {
		handler = o.Draining.Handler(handler)
	}
	srv.Register(Path, handler)
	// The conversion webhook of the kinds with a second version, on the
	// same server and certificate (config/crd/kinds.yaml; crdgen points
	// their CRDs at this Service and path).
	kinds, err := apikinds.LoadKinds(o.KindsFile)
	if err != nil {
		return fmt.Errorf("load the kinds file %q: %w", o.KindsFile, err)
	}
	conversionCRDs := apikinds.ConvertedCRDs(kinds)
	var converter http.Handler = &conversion.Webhook{Rules: conversion.New(kinds), Log: mgr.GetLogger().WithName("conversion")}
	if o.Draining != nil {
		converter = o.Draining.Handler(converter)
	}
	srv.Register(conversion.Path, converter)
	if err := mgr.AddReadyzCheck("admission-webhook", srv.StartedChecker()); err != nil {
		return fmt.Errorf("add the webhook's readiness check: %w", err)
	}
	ns := o.Namespace
	if ns == "" {
		ns = watchconfig.ResolveReleaseNamespace(env)
	}
	switch o.Certs {
	case CertsProvided:
		log.Info("Serving the admission webhook with a provided certificate", "port", o.Port, "certDir", o.CertDir)
		return mgr.Add(srv)
	case CertsSecret:
		return setupSecretCerts(mgr, o, ns, srv, served, log)
	}
	return setupSelfIssued(mgr, o, ns, srv, conversionCRDs, log)
}

// setupSecretCerts serves the certificate another tool keeps in the
// Secret, read from the API server on every replica (servedCerts). The
// server starts once the Secret holds one.
func setupSecretCerts(mgr ctrl.Manager, o Options, ns string, srv webhook.Server, served *servedCerts, log logr.Logger) error {
	secret := types.NamespacedName{Namespace: ns, Name: o.Secret}
	service := types.NamespacedName{Namespace: ns, Name: o.Service}
	source, err := newSecretCertSource(mgr, secret, service, served)
	if err != nil {
		return err
	}
	if err := mgr.Add(source); err != nil {
		return err
	}
	log.Info("Serving the admission webhook with the certificate of a Secret", "port", o.Port, "secret", secret.String(),
		"service", service.String())
	return mgr.Add(&serveWhenReady{certificate: served.ready, srv: srv})
}

// setupSelfIssued issues and rotates the webhook's certificate with
// cert-controller's rotator (github.com/open-policy-agent/cert-controller):
// it keeps the CA and the serving certificate in the Secret, puts the CA
// into the configuration's caBundle and into the conversion caBundle of
// conversionCRDs (again whenever an apply resets them),
// and renews the serving certificate when a quarter of its life is left.
// Only the leader of the sidecar's Lease does so, so that replicas never
// race to write the Secret; every replica serves the certificate of the
// Secret (certFiles). The server starts once the certificate is on disk:
// on the leader once the rotator has it (and the CA is injected), on the
// others once the Secret has it.
func setupSelfIssued(mgr ctrl.Manager, o Options, ns string, srv webhook.Server, conversionCRDs []string, log logr.Logger) error {
	ready := make(chan struct{})
	targets := []rotator.WebhookInfo{{Name: o.Configuration, Type: rotator.Validating}}
	for _, crd := range conversionCRDs {
		targets = append(targets, rotator.WebhookInfo{Name: crd, Type: rotator.CRDConversion})
	}
	secret := types.NamespacedName{Namespace: ns, Name: o.Secret}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:              secret,
		CertDir:                o.CertDir,
		CAName:                 "platform-operator-webhook-ca",
		CAOrganization:         "platform-operator",
		DNSName:                fmt.Sprintf("%s.%s.svc", o.Service, ns),
		ExtraDNSNames:          append([]string{fmt.Sprintf("%s.%s.svc.cluster.local", o.Service, ns)}, o.ExtraDNSNames...),
		IsReady:                ready,
		Webhooks:               targets,
		RequireLeaderElection:  true,
		ServerCertDuration:     o.CertValidity,
		CaCertDuration:         10 * o.CertValidity,
		LookaheadInterval:      o.CertValidity / 4,
		RotationCheckFrequency: min(12*time.Hour, o.CertValidity/8),
	})
	if err != nil {
		return fmt.Errorf("set up the webhook certificate rotation: %w", err)
	}
	files, err := newCertFiles(mgr, secret, o.CertDir, log)
	if err != nil {
		return err
	}
	if err := mgr.Add(files); err != nil {
		return err
	}
	log.Info("Serving the admission webhook with a self-issued certificate", "port", o.Port, "secret", secret.String(),
		"configuration", o.Configuration, "conversionCRDs", conversionCRDs, "validity", o.CertValidity.String())
	return mgr.Add(&serveWhenReady{certificate: ready, copied: files.written, srv: srv})
}

// serveWhenReady starts the webhook server once its certificate is there:
// certificate or copied is closed (a nil channel never is).
type serveWhenReady struct {
	// certificate is closed once this replica has a certificate of its
	// own (issued, or read from the Secret).
	certificate <-chan struct{}
	// copied is closed once the Secret's certificate is in the directory.
	copied <-chan struct{}
	srv    webhook.Server
}

func (s *serveWhenReady) Start(ctx context.Context) error {
	select {
	case <-s.certificate:
	case <-s.copied:
	case <-ctx.Done():
		return nil
	}
	return s.srv.Start(ctx)
}

func (s *serveWhenReady) NeedLeaderElection() bool { return false }

// certFiles writes the serving certificate kept in the Secret into the
// certificate directory whenever the Secret changes, where the webhook
// server's certificate watcher picks it up. Mounting the Secret as a
// volume would do the same, but the kubelet refreshes such volumes only
// about once a minute, so a new Pod (or a rotation) would serve late.
type certFiles struct {
	cache cache.Cache
	key   types.NamespacedName
	dir   string
	log   logr.Logger
	// written is closed once the directory holds the Secret's certificate.
	written chan struct{}
	once    sync.Once
}

func newCertFiles(mgr ctrl.Manager, key types.NamespacedName, dir string, log logr.Logger) (*certFiles, error) {
	c, err := secretCache(mgr, key)
	if err != nil {
		return nil, err
	}
	return &certFiles{cache: c, key: key, dir: dir, log: log, written: make(chan struct{})}, nil
}

// secretCache returns a cache of the webhook's Secret (and of nothing else
// in its namespace) and of the webhook configurations, added to mgr.
func secretCache(mgr ctrl.Manager, key types.NamespacedName) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient:        mgr.GetHTTPClient(),
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{key.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", key.Name)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("create the cache of the webhook's Secret: %w", err)
	}
	// Every replica, leader or not, serves the certificate: the cache
	// starts without the Lease (a cache of one namespace is not a
	// LeaderElectionRunnable by itself).
	if err := mgr.Add(anyReplicaCache{c}); err != nil {
		return nil, err
	}
	return c, nil
}

func (f *certFiles) NeedLeaderElection() bool { return false }

// anyReplicaCache is a cache started on every replica.
type anyReplicaCache struct{ cache.Cache }

func (anyReplicaCache) NeedLeaderElection() bool { return false }

func (f *certFiles) Start(ctx context.Context) error {
	inf, err := f.cache.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("watch the webhook's Secret: %w", err)
	}
	write := func(obj any) {
		if s, ok := obj.(*corev1.Secret); ok && s.Name == f.key.Name {
			if err := f.write(s); err != nil {
				f.log.Error(err, "Could not write the webhook's certificate", "dir", f.dir)
			}
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    write,
		UpdateFunc: func(_, obj any) { write(obj) },
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return inf.RemoveEventHandler(reg)
}

// write puts tls.key and tls.crt of s into the directory, each replaced in
// one rename, when the Secret has both and they changed.
func (f *certFiles) write(s *corev1.Secret) error {
	key, crt := s.Data[corev1.TLSPrivateKeyKey], s.Data[corev1.TLSCertKey]
	if len(key) == 0 || len(crt) == 0 {
		return nil
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	changed := false
	for _, file := range []struct {
		name string
		data []byte
	}{{corev1.TLSPrivateKeyKey, key}, {corev1.TLSCertKey, crt}} {
		path := filepath.Join(f.dir, file.name)
		if old, err := os.ReadFile(path); err == nil && string(old) == string(file.data) {
			continue
		}
		tmp := path + ".new"
		if err := os.WriteFile(tmp, file.data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		f.log.Info("Wrote the webhook's serving certificate", "dir", f.dir, "secret", f.key.String())
	}
	f.once.Do(func() { close(f.written) })
	return nil
}

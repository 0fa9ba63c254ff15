package admission

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/acme/platform-operator/extensions/internal/conversion"
	"github.com/acme/platform-operator/internal/operator/claims"
)

// How the webhook server gets its certificate.
const (
	// CertsSelf: the sidecar issues its own CA and serving certificate,
	// keeps them in a Secret, puts the CA into the webhook configuration's
	// caBundle and rotates both before they expire (the kustomize install).
	CertsSelf = "self"
	// CertsProvided: something else puts tls.crt and tls.key into the
	// certificate directory and the caBundle into the configuration (OLM,
	// from the webhook declared in the CSV; a test environment).
	CertsProvided = "provided"
	// CertsSecret: something else keeps the serving certificate in a
	// Secret and its CA in the caBundles (OLM; cert-manager with its CA
	// injector). Every replica reads the Secret from the API server and
	// serves, of the certificates it held, the newest one the caBundles of
	// the webhooks calling the Service trust, so that a new certificate is
	// served when, and not before, the API server trusts it.
	CertsSecret = "secret"
)

// Names of the objects config/webhook installs (after the kustomize name
// prefix), which the self-issued certificates concern.
const (
	DefaultService       = "platform-operator-webhook-service"
	DefaultConfiguration = "platform-operator-validating-webhook-configuration"
	DefaultSecret        = "platform-operator-webhook-server-cert"
	// DefaultCertDir is where controller-runtime, and OLM, put the serving
	// certificate.
	DefaultCertDir = "/tmp/k8s-webhook-server/serving-certs"
	// DefaultCertValidity is how long a self-issued serving certificate is
	// valid; its CA is valid ten times as long.
	DefaultCertValidity = 365 * 24 * time.Hour
	// DefaultPort is the webhook's port in the shipped manifests.
	DefaultPort = 9443
	// Path is the one path every kind is validated on.
	Path = "/validate"
	// DefaultKindsFile is where the image has the kinds file, relative
	// to its working directory (and to the repository root).
	DefaultKindsFile = "config/crd/kinds.yaml"
)

// Options configure the validating admission webhook of the sidecar.
type Options struct {
	// Port the webhook server listens on; 0 turns the webhook off (a
	// sidecar run outside the cluster, which the API server cannot reach).
	// config/manager sets DefaultPort.
	Port int
	// Host the server listens on; empty means every address.
	Host string
	// CertDir holds tls.crt and tls.key.
	CertDir string
	// Certs is CertsSelf, CertsSecret or CertsProvided.
	Certs string
	// Namespace of the Service and the Secret; empty means the release
	// namespace default ($POD_NAMESPACE, else the service account's).
	Namespace string
	// Service, Configuration and Secret name the objects the self-issued
	// certificates concern; Service and Secret those of CertsSecret.
	Service, Configuration, Secret string
	// CertValidity is the lifetime of a self-issued serving certificate.
	CertValidity time.Duration
	// ExtraDNSNames are further names a self-issued serving certificate is
	// valid for, besides the Service's (a webhook reached by URL).
	ExtraDNSNames []string
	// WatchesFile maps kinds to charts, as for the manager.
	WatchesFile string
	// KindsFile is config/crd/kinds.yaml: the versions of each kind and
	// their renames, which the conversion webhook (package conversion)
	// applies on the same server, on conversion.Path.
	KindsFile string
	// ReleaseNamespace stores the releases of cluster-scoped kinds, as for
	// the manager; empty means the same default as the manager's.
	ReleaseNamespace string
	// HostScope is how far an Ingress host a resource renders must be
	// unique (claims.HostScope).
	HostScope claims.HostScope
	// Draining, when set, wraps the webhook's handler: while the process
	// stops, each response closes its connection (not a flag).
	Draining interface {
		Handler(http.Handler) http.Handler
	}
}

// DefaultOptions returns the options used when no flag is given.
func DefaultOptions() Options {
	return Options{
		Port:          0,
		CertDir:       DefaultCertDir,
		Certs:         CertsSelf,
		Service:       DefaultService,
		Configuration: DefaultConfiguration,
		Secret:        DefaultSecret,
		CertValidity:  DefaultCertValidity,
		WatchesFile:   "watches.yaml",
		KindsFile:     DefaultKindsFile,
		HostScope:     claims.HostsCluster,
	}
}

// BindFlags registers the webhook's flags on fs, with o's values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Port, "admission-port", o.Port,
		"Port of the webhook server, validating admission and CRD conversion (the shipped manifests use "+strconv.Itoa(DefaultPort)+"); 0 turns it off, for a sidecar run outside the cluster.")
	fs.StringVar(&o.Host, "admission-host", o.Host,
		"Address the webhook server listens on; empty means every address of the Pod.")
	fs.StringVar(&o.CertDir, "admission-cert-dir", o.CertDir,
		"Directory with the webhook's serving certificate (tls.crt, tls.key).")
	fs.StringVar(&o.Certs, "admission-certs", o.Certs,
		`Who provides the webhook's certificate: "self" (issue, store in --admission-secret, inject into --admission-configuration, rotate), `+
			`"secret" (another tool, OLM, keeps it in --admission-secret and its CA in the caBundles of the webhooks calling --admission-service; read from the API server) `+
			`or "provided" (another tool writes --admission-cert-dir).`)
	fs.StringVar(&o.Namespace, "admission-namespace", o.Namespace,
		"Namespace of the webhook's Service and Secret (default: $POD_NAMESPACE, else the in-cluster service-account namespace).")
	fs.StringVar(&o.Service, "admission-service", o.Service, "Service in front of the webhook: named in a self-issued certificate; the webhooks calling it are those whose caBundle a Secret's certificate must match.")
	fs.StringVar(&o.Configuration, "admission-configuration", o.Configuration,
		"ValidatingWebhookConfiguration whose caBundle the self-issued CA goes into (as into the conversion caBundle of the CRDs of --kinds-file with a second version).")
	fs.StringVar(&o.Secret, "admission-secret", o.Secret, "Secret that keeps the serving certificate (tls.crt, tls.key): the self-issued one and its CA, or the one another tool issues (--admission-certs=secret).")
	fs.DurationVar(&o.CertValidity, "admission-cert-validity", o.CertValidity,
		"Lifetime of a self-issued serving certificate; it is renewed when a quarter of it is left.")
	fs.StringSliceVar(&o.ExtraDNSNames, "admission-extra-dns-names", o.ExtraDNSNames,
		"Further DNS names a self-issued serving certificate is valid for, besides the Service's (for a webhook configuration that calls a URL).")
	fs.StringVar(&o.WatchesFile, "watches-file", o.WatchesFile,
		"Watches file of the manager: the kinds the webhook validates and their charts.")
	fs.StringVar(&o.KindsFile, "kinds-file", o.KindsFile,
		"Kinds file (config/crd/kinds.yaml): the CRD versions the conversion webhook converts between, served on "+conversion.Path+" by the webhook server.")
	fs.Var(hostScopeValue{&o.HostScope}, "unique-hosts",
		`How far an Ingress host a resource renders must be unique: "cluster" (a host that another resource of ours serves anywhere, or any Ingress in another namespace, is refused), "namespace" (only another resource of ours in the same namespace), "off".`)
	fs.StringVar(&o.ReleaseNamespace, "release-namespace", o.ReleaseNamespace,
		"Namespace that stores the Helm releases of cluster-scoped kinds, as given to the manager.")
}

// hostScopeValue is a pflag.Value of a claims.HostScope.
type hostScopeValue struct{ scope *claims.HostScope }

func (v hostScopeValue) String() string {
	if v.scope == nil {
		return ""
	}
	return string(*v.scope)
}

func (v hostScopeValue) Set(s string) error {
	scope, err := claims.ParseHostScope(s)
	if err != nil {
		return err
	}
	*v.scope = scope
	return nil
}

func (hostScopeValue) Type() string { return "scope" }

// Validate reports options that cannot work together.
func (o *Options) Validate() error {
	if o.Port == 0 {
		return nil
	}
	var errs []error
	if o.Port < 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--admission-port %d is not a port", o.Port))
	}
	switch o.Certs {
	case CertsProvided:
	case CertsSecret:
		if o.Service == "" || o.Secret == "" {
			errs = append(errs, errors.New(`--admission-certs=secret needs --admission-service and --admission-secret`))
		}
	case CertsSelf:
		if o.Service == "" || o.Configuration == "" || o.Secret == "" {
			errs = append(errs, errors.New(`--admission-certs=self needs --admission-service, --admission-configuration and --admission-secret`))
		}
		if o.CertValidity < time.Minute {
			errs = append(errs, fmt.Errorf("--admission-cert-validity %s is shorter than a minute", o.CertValidity))
		}
	default:
		errs = append(errs, fmt.Errorf(`--admission-certs must be "self", "secret" or "provided", not %q`, o.Certs))
	}
	if o.KindsFile == "" {
		errs = append(errs, errors.New("--kinds-file is empty"))
	}
	if o.CertDir == "" {
		errs = append(errs, errors.New("--admission-cert-dir is empty"))
	}
	return errors.Join(errs...)
}

package tenant

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure the tenant finalizer.
type Options struct {
	// WebhookURL receives the lifecycle events; empty sends none.
	WebhookURL string
	// WebhookTokenSecret is "<namespace>/<name>" of a Secret whose "token"
	// key is sent as a bearer token; empty sends none.
	WebhookTokenSecret string
	// WebhookTimeout bounds one delivery attempt.
	WebhookTimeout time.Duration
	// Shard selects the tenants this process owns (--shard-selector, set
	// by main); nil owns all of them.
	Shard labels.Selector
}

// DefaultOptions returns the options used when no flag is given.
func DefaultOptions() Options {
	return Options{WebhookTimeout: 10 * time.Second}
}

// BindFlags registers the options as flags.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.WebhookURL, "tenant-webhook-url", o.WebhookURL,
		"URL that receives a JSON POST when a NamespaceTenant's namespace is created and when the tenant is deleted; "+
			"a deleted tenant is kept until the webhook answers 2xx. Empty disables notifications.")
	fs.StringVar(&o.WebhookTokenSecret, "tenant-webhook-token-secret", o.WebhookTokenSecret,
		"<namespace>/<name> of a Secret whose \"token\" key is sent to the tenant webhook as a bearer token.")
	fs.DurationVar(&o.WebhookTimeout, "tenant-webhook-timeout", o.WebhookTimeout,
		"Timeout of one tenant webhook delivery attempt.")
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.WebhookURL != "" {
		u, err := url.Parse(o.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--tenant-webhook-url %q must be an http or https URL", o.WebhookURL))
		}
	}
	if o.WebhookTokenSecret != "" {
		if o.WebhookURL == "" {
			errs = append(errs, errors.New("--tenant-webhook-token-secret needs --tenant-webhook-url"))
		}
		if _, err := parseSecretRef(o.WebhookTokenSecret); err != nil {
			errs = append(errs, err)
		}
	}
	if o.WebhookTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--tenant-webhook-timeout must be positive, got %s", o.WebhookTimeout))
	}
	return errors.Join(errs...)
}

func parseSecretRef(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("--tenant-webhook-token-secret %q must be <namespace>/<name>", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// SetupWithManager validates o and adds the tenant finalizer controller to
// mgr.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if _, err := mgr.GetRESTMapper().RESTMapping(GVK.GroupKind(), GVK.Version); err != nil {
		return fmt.Errorf("look up %s (is its CRD installed?): %w", GVK, err)
	}
	r := &FinalizerReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorderFor("tenant-finalizer"),
		Clock:    clock.RealClock{},
		Backoff:  DefaultBackoff,
		Shard:    o.Shard,
	}
	if o.WebhookURL != "" {
		r.Notifier = &Notifier{
			URL:    o.WebhookURL,
			Client: &http.Client{Timeout: o.WebhookTimeout},
		}
		if o.WebhookTokenSecret != "" {
			ref, _ := parseSecretRef(o.WebhookTokenSecret)
			r.Notifier.Token = secretToken(mgr.GetAPIReader(), ref)
		}
	}
	return r.SetupWithManager(mgr)
}

// secretToken reads the "token" key of a Secret on every delivery, straight
// from the API server (no cluster-wide Secret cache), so a rotated token is
// used at once.
func secretToken(reader client.Reader, ref types.NamespacedName) TokenSource {
	return func(ctx context.Context) (string, error) {
		var s corev1.Secret
		if err := reader.Get(ctx, ref, &s); err != nil {
			return "", fmt.Errorf("get Secret %s: %w", ref, err)
		}
		token, ok := s.Data["token"]
		if !ok {
			return "", fmt.Errorf("secret %s has no \"token\" key", ref)
		}
		return strings.TrimSpace(string(token)), nil
	}
}

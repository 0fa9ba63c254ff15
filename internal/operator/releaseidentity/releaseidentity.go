// Package releaseidentity decides which ServiceAccount the operator acts
// as when it writes the objects of a namespace's releases, and creates the
// operator's own one there when that is the answer. Both processes use it:
// the Helm runtime for every request Helm sends for a release, the sidecar
// for what it changes in a release's workloads (a CronScaler's count, the
// rotation annotation). So the operator's ClusterRole only reads those
// objects, and a namespace's identity, bound in that namespace, writes
// them.
//
// The answer for namespace ns, in order: the ServiceAccount that ns's
// NamespaceAnnotation names; the kind's (watches.yaml serviceAccountName,
// the runtime only); the managed one (Options.ServiceAccount), which is
// created in ns with a RoleBinding to Options.DeployerRole when missing;
// else none (the operator's own rights).
package releaseidentity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// NamespaceAnnotation, on a namespace, names the ServiceAccount of that
// namespace that the releases in it are applied as, whatever their kind's
// serviceAccountName says. Namespaces are cluster-scoped, so it is set by
// whoever may edit the namespace (a NamespaceTenant's chart, a cluster
// administrator), not by its tenants.
const NamespaceAnnotation = "platform.acme.com/release-service-account"

// ManagedByLabel marks the ServiceAccounts and RoleBindings the operator
// creates (Managed), so that they can be found.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ManagedByValue is ManagedByLabel's value on them.
const ManagedByValue = "platform-operator"

// DefaultDeployerRole is the name config/ deploys the release deployer
// ClusterRole under.
const DefaultDeployerRole = "platform-operator-release-deployer"

// Options are the flags of both processes that name the managed identity.
type Options struct {
	// ServiceAccount, when set, is the ServiceAccount that releases of
	// namespaced kinds are applied as when nothing else names one; it is
	// created in the release's namespace with a RoleBinding of the same
	// name to DeployerRole. Empty: the operator's own rights.
	ServiceAccount string
	// DeployerRole is the ClusterRole that RoleBinding grants.
	DeployerRole string
}

// DefaultOptions returns the options used when no flag is given.
func DefaultOptions() Options { return Options{DeployerRole: DefaultDeployerRole} }

// BindFlags registers the options' flags on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ServiceAccount, "release-service-account", o.ServiceAccount,
		"ServiceAccount that releases of namespaced kinds are applied as when neither their namespace nor their kind names one; "+
			"created in the release's namespace and bound to --release-deployer-role there. Empty: the operator's own rights.")
	fs.StringVar(&o.DeployerRole, "release-deployer-role", o.DeployerRole,
		"ClusterRole bound to --release-service-account in each namespace it is created in.")
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	if o.ServiceAccount == "" {
		return nil
	}
	if err := watchconfig.CheckServiceAccountName(o.ServiceAccount); err != nil {
		return fmt.Errorf("release service account: %w", err)
	}
	if o.DeployerRole == "" {
		return errors.New("release deployer role must not be empty with a release service account")
	}
	return nil
}

// Managed returns the managed identity the options name, nil for none.
func (o Options) Managed() *Managed {
	if o.ServiceAccount == "" {
		return nil
	}
	return &Managed{Name: o.ServiceAccount, Role: o.DeployerRole}
}

// Namespace returns the metadata of the namespace ns, nil when there is
// no such namespace.
func Namespace(ctx context.Context, r client.Reader, ns string) (*metav1.PartialObjectMetadata, error) {
	var meta metav1.PartialObjectMetadata
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Get(ctx, client.ObjectKey{Name: ns}, &meta); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return &meta, nil
}

// Annotated returns the ServiceAccount the namespace's NamespaceAnnotation
// names, "" for none.
func Annotated(ns *metav1.PartialObjectMetadata) (string, error) {
	sa := ns.Annotations[NamespaceAnnotation]
	if sa == "" {
		return "", nil
	}
	if err := watchconfig.CheckServiceAccountName(sa); err != nil {
		return "", fmt.Errorf("namespace %s: annotation %s: %w", ns.Name, NamespaceAnnotation, err)
	}
	return sa, nil
}

// Managed is the ServiceAccount the operator creates in a namespace for
// its releases when nothing else names one, with a RoleBinding of the
// same name that grants it Role in that namespace only. One Managed is
// shared by the kinds (and controllers) of a process.
type Managed struct {
	// Name is the ServiceAccount's and the RoleBinding's; Role is the
	// ClusterRole bound.
	Name, Role string
	// ensured holds the UIDs of the namespaces where both were found or
	// created, so that each namespace costs two requests once per process
	// (a namespace deleted and created again has a new UID).
	ensured sync.Map
}

// Ensure creates the ServiceAccount and the RoleBinding in ns (whose UID
// is uid) unless they exist. An existing one is left as it is: what a
// cluster administrator changed in it stands.
func (m *Managed) Ensure(ctx context.Context, c client.Writer, ns string, uid types.UID) error {
	if _, ok := m.ensured.Load(uid); ok {
		return nil
	}
	labels := map[string]string{ManagedByLabel: ManagedByValue}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.Name, Labels: labels}}
	if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the ServiceAccount %s/%s that releases are applied as: %w", ns, m.Name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.Name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: m.Role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: m.Name}},
	}
	if err := c.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind the ClusterRole %s to the ServiceAccount %s/%s: %w", m.Role, ns, m.Name, err)
	}
	m.ensured.Store(uid, struct{}{})
	return nil
}

// Impersonating returns a copy of base that acts as the ServiceAccount sa
// of namespace ns.
func Impersonating(base *rest.Config, ns, sa string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(ns, sa)}
	return cfg
}

// Writers hands out the client that writes a namespace's workloads: as
// the namespace's identity (its annotation, else the managed one), or the
// process's own client when neither applies. The client of each identity
// is built once and reused; all of them share one HTTP transport (its
// connections) and the process's RESTMapper, but not its cache (a write,
// and the read it needs, go to the API server).
type Writers struct {
	// Own is the process's client; Namespaces reads namespaces' metadata.
	Own        client.Client
	Namespaces client.Reader
	// Config and Options build the impersonating clients.
	Config  *rest.Config
	Options client.Options
	// Managed is the managed identity, nil for none.
	Managed *Managed

	clients sync.Map // user name → client.Client

	transportOnce sync.Once
	transport     http.RoundTripper
	transportErr  error
}

// For returns the client that writes in namespace ns, and the user it
// acts as ("" for the process's own). In a namespace being deleted it is
// the process's own: the namespace's deletion removes the identity's
// RoleBinding at the same time.
func (w *Writers) For(ctx context.Context, ns string) (client.Client, string, error) {
	meta, err := Namespace(ctx, w.Namespaces, ns)
	if err != nil {
		return nil, "", err
	}
	if meta == nil || meta.DeletionTimestamp != nil {
		return w.Own, "", nil
	}
	sa, err := Annotated(meta)
	if err != nil {
		return nil, "", err
	}
	if sa == "" && w.Managed != nil {
		if err := w.Managed.Ensure(ctx, w.Own, ns, meta.UID); err != nil {
			return nil, "", err
		}
		sa = w.Managed.Name
	}
	if sa == "" {
		return w.Own, "", nil
	}
	user := serviceaccount.MakeUsername(ns, sa)
	if c, ok := w.clients.Load(user); ok {
		return c.(client.Client), user, nil
	}
	w.transportOnce.Do(func() { w.transport, w.transportErr = rest.TransportFor(w.Config) })
	if w.transportErr != nil {
		return nil, "", w.transportErr
	}
	opts := w.Options
	opts.HTTPClient = &http.Client{Transport: transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{UserName: user}, w.transport)}
	c, err := client.New(w.Config, opts)
	if err != nil {
		return nil, "", fmt.Errorf("build a client acting as %s: %w", user, err)
	}
	actual, _ := w.clients.LoadOrStore(user, c)
	return actual.(client.Client), user, nil
}

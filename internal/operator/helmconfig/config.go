// Package helmconfig builds the Helm action configurations of the runtime:
// every change the operator makes to what the library hands Helm happens
// here, in one builder, and not in the action path's layers.
//
//   - Release storage: Helm's Secrets driver in the release namespace,
//     writing records gzipped at a faster level than Helm's, under a check
//     that refuses a new record too large for a Secret before it is sent,
//     and a memo that reads each release's records once per action
//     client, by name when the runtime's cache knows them (package
//     helmstorage).
//   - Kubernetes client: Helm's, in the release namespace, with waits that
//     end when the reconcile's context ends and hooks bounded by a timeout
//     (interruptible.go); its updates of a release's objects read each
//     object once and are recorded for the kind's watches (updates.go).
//   - Capabilities: one view of the API server's version and APIs, shared
//     by the actions of a kind for CapabilitiesMaxAge (capabilities.go).
//   - Validation of rendered manifests: left to the API server
//     (serverSideValidation).
//   - Rollback of a failed upgrade: forced, unless the resource says
//     otherwise (rollbackForce).
//   - Owner references: the library's owner post-renderer, written
//     without its second parse of every object (owners.go).
package helmconfig

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/cli-runtime/pkg/resource"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/helmstorage"
)

// Config is what the builder needs of one kind.
type Config struct {
	// REST and Mapper reach the API server.
	REST   *rest.Config
	Mapper meta.RESTMapper
	// ReleaseNamespace picks the namespace of a resource's release: where
	// its records are stored and what Helm installs into.
	ReleaseNamespace helmclient.ObjectToStringMapper
	// Capabilities is the view of the API server the kind's actions share.
	Capabilities *Capabilities
	// HookTimeout bounds Helm's waits that have no timeout of their own.
	HookTimeout time.Duration
	// Updates registers the kind's upgrades and rollbacks of release
	// objects, for the kind's watches (updates.go); nil for a registry of
	// the getter's own, which no watch sees.
	Updates *Updates
	// Records, when set, names the release records the runtime's cache
	// holds, so that the storage reads them by name rather than listing
	// the namespace's (helmstorage.NewIndexedMemo).
	Records helmstorage.RecordIndex
	// OwnRecords, with Records, are the releases of which this process
	// stored records: the absence of any other's records, which the cache
	// shows, is confirmed by the create of its first record, not by a
	// read (helmstorage.NewIndexedMemo).
	OwnRecords *helmstorage.OwnRecords
	// ServiceAccountFor, when set, names the ServiceAccount of obj's
	// release namespace ns that Helm's Kubernetes client acts as for obj
	// (impersonation), "" for the operator's own rights: a release may do
	// to the cluster what that ServiceAccount may, not what the operator
	// may. The release records are still read and written with the
	// operator's rights.
	ServiceAccountFor func(ctx context.Context, obj client.Object, ns string) (string, error)
	// NamespaceDeleting, when set, reports whether the release namespace
	// ns is being deleted. The uninstall of a resource being deleted
	// there counts the deletes the API server forbids as done: the
	// namespace's deletion removes those objects (deleteerrors.go).
	NamespaceDeleting func(ctx context.Context, ns string) (bool, error)
	// Cached, when set, returns the runtime's cache's copy of the object
	// of gvk named namespace/name (its metadata and content digest, nil
	// when the cache holds none), and whether the cache watches objects of
	// gvk at all. Helm's read of whether an object exists before it
	// creates it is answered "not found" without a request when the cache
	// watches the kind and holds no such object, and an update's read of
	// an object the cache shows as the runtime's last write left it is
	// answered without a request too (updates.go).
	Cached func(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool)
}

// NewActionClientGetter returns the library's action client getter of one
// kind, its action configurations built as the package comment says. It
// is the bottom of the kind's action path.
func NewActionClientGetter(c Config) (helmclient.ActionClientGetter, error) {
	storage := secretsStorage(c.ReleaseNamespace, c.OwnRecords)
	// Helm's requests go through the kind's Updates, which answer the
	// repeated reads of an object within one update.
	if c.Updates == nil {
		c.Updates = &Updates{}
	}
	restConfig := rest.CopyConfig(c.REST)
	restConfig.Wrap(c.Updates.Transport)
	configGetter, err := helmclient.NewActionConfigGetter(restConfig, c.Mapper,
		helmclient.ClientNamespaceMapper(c.ReleaseNamespace),
		helmclient.ClientRestConfigMapper(c.actAs),
		helmclient.StorageDriverMapper(func(ctx context.Context, obj client.Object, cfg *rest.Config) (driver.Driver, error) {
			d, err := storage(ctx, obj, cfg)
			if err != nil {
				return nil, err
			}
			d = helmstorage.LimitRecordSize(d)
			if c.Records == nil {
				return helmstorage.NewMemo(d), nil
			}
			ns, err := c.ReleaseNamespace(obj)
			if err != nil {
				return nil, err
			}
			return helmstorage.NewIndexedMemo(ctx, d, c.Records, c.OwnRecords, ns), nil
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("create Helm action config getter: %w", err)
	}
	acg := &builder{inner: configGetter, c: c}
	forced, err := helmclient.NewActionClientGetter(acg, serverSideValidation()...)
	if err != nil {
		return nil, fmt.Errorf("create Helm action client getter: %w", err)
	}
	unforced, err := helmclient.NewActionClientGetter(acg, append(serverSideValidation(),
		helmclient.AppendUpgradeFailureRollbackOptions(func(r *action.Rollback) error {
			r.Force = false
			return nil
		}))...)
	if err != nil {
		return nil, fmt.Errorf("create Helm action client getter: %w", err)
	}
	return rollbackForce{forced: forced, unforced: unforced}, nil
}

// secretsStorage returns the storage driver of a resource's release: the
// library's (helmclient.DefaultSecretsStorageDriver), records in the
// Secrets of the release namespace, each owned by the resource, but
// written by helmstorage.Secrets rather than by Helm's driver, which keeps
// what it writes in own (nil: nowhere).
func secretsStorage(releaseNamespace helmclient.ObjectToStringMapper, own *helmstorage.OwnRecords) helmclient.ObjectToStorageDriverMapper {
	return func(ctx context.Context, obj client.Object, cfg *rest.Config) (driver.Driver, error) {
		ns, err := releaseNamespace(obj)
		if err != nil {
			return nil, fmt.Errorf("get storage namespace for object: %w", err)
		}
		core, err := corev1client.NewForConfig(protobuf(cfg))
		if err != nil {
			return nil, fmt.Errorf("create secrets client for storage: %w", err)
		}
		owner := metav1.NewControllerRef(obj, obj.GetObjectKind().GroupVersionKind())
		secrets := helmclient.NewOwnerRefSecretClient(core.Secrets(ns), []metav1.OwnerReference{*owner}, helmclient.MatchAllSecrets)
		d := helmstorage.NewSecrets(secrets, own)
		if log, err := logr.FromContext(ctx); err == nil {
			d.Log = func(format string, v ...interface{}) { log.V(1).Info(fmt.Sprintf(format, v...)) }
		}
		return d, nil
	}
}

// protobuf returns a copy of cfg that sends and accepts Kubernetes'
// protobuf encoding, as controller-runtime's clients do for built-in
// kinds. A release record is a Secret whose payload JSON would carry as
// base64 (of Helm's base64): protobuf carries its bytes as they are, and
// the API server decodes and encodes it for less than its JSON.
func protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}

// actAs returns the REST configuration Helm's Kubernetes client uses for
// obj's release: base as it is, or impersonating the ServiceAccount
// ServiceAccountFor names in the release's namespace.
func (c Config) actAs(ctx context.Context, obj client.Object, base *rest.Config) (*rest.Config, error) {
	cfg := rest.CopyConfig(base)
	if c.ServiceAccountFor == nil {
		return cfg, nil
	}
	ns, err := c.ReleaseNamespace(obj)
	if err != nil {
		return nil, err
	}
	sa, err := c.ServiceAccountFor(ctx, obj, ns)
	if err != nil {
		return nil, fmt.Errorf("find the ServiceAccount to act as: %w", err)
	}
	if sa != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(ns, sa)}
	}
	return cfg, nil
}

// RollbackForceAnnotation, "false" on a custom resource, makes the
// rollback of its failed upgrades patch the objects back instead of
// replacing them (Helm's rollback without --force), as in operator-sdk's
// Helm operator; any other value, or none, keeps the library's forced
// rollback.
const RollbackForceAnnotation = "helm.sdk.operatorframework.io/rollback-force"

// rollbackForce hands out the action clients of the library's getter that
// rolls failed upgrades back as the resource's RollbackForceAnnotation
// says. The library sets the rollback's options once per getter, not per
// resource; both getters share one action configuration getter.
type rollbackForce struct {
	forced, unforced helmclient.ActionClientGetter
}

func (g rollbackForce) ActionClientFor(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
	getter := g.forced
	if force, err := strconv.ParseBool(obj.GetAnnotations()[RollbackForceAnnotation]); err == nil && !force {
		getter = g.unforced
	}
	ac, err := getter.ActionClientFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	return uninstallCauses{ActionInterface: ac}, nil
}

// builder completes the library's action configurations.
type builder struct {
	inner helmclient.ActionConfigGetter
	c     Config
}

var _ helmclient.ActionConfigGetter = (*builder)(nil)

// ActionConfigFor returns the action configuration of obj for one action
// client: the shared capabilities, and a Kubernetes client whose waits end
// with ctx (the reconcile's) and whose reachability check is answered by
// the shared capabilities (Capabilities.Reachable).
func (b *builder) ActionConfigFor(ctx context.Context, obj client.Object) (*action.Configuration, error) {
	cfg, err := b.inner.ActionConfigFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	dc, err := cfg.RESTClientGetter.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("get the discovery client: %w", err)
	}
	if cfg.Capabilities, err = b.c.Capabilities.Get(dc); err != nil {
		return nil, fmt.Errorf("get the API server's capabilities: %w", err)
	}
	deleting, err := b.deletingNamespace(ctx, obj)
	if err != nil {
		return nil, err
	}
	var cached func(*resource.Info) (*unstructured.Unstructured, bool)
	if b.c.Cached != nil {
		cached = func(info *resource.Info) (*unstructured.Unstructured, bool) {
			return b.c.Cached(ctx, info.Mapping.GroupVersionKind, info.Namespace, info.Name)
		}
	}
	reachable := func() error { return b.c.Capabilities.Reachable(dc) }
	cfg.KubeClient = updating(interruptible(ctx, cfg.KubeClient, b.c.HookTimeout), b.c.Updates, deleting, cached, reachable)
	return cfg, nil
}

// deletingNamespace returns the release namespace of obj when obj and
// that namespace are both being deleted, else "".
func (b *builder) deletingNamespace(ctx context.Context, obj client.Object) (string, error) {
	if obj.GetDeletionTimestamp() == nil || b.c.NamespaceDeleting == nil {
		return "", nil
	}
	ns, err := b.c.ReleaseNamespace(obj)
	if err != nil {
		return "", err
	}
	deleting, err := b.c.NamespaceDeleting(ctx, ns)
	if err != nil || !deleting {
		return "", err
	}
	return ns, nil
}

// serverSideValidation are the action client options that leave the
// validation of rendered manifests to the API server.
//
// With OpenAPI validation on (Helm's default), every install and upgrade
// (dry-runs included) asks whether the API server supports the
// fieldValidation query parameter for each kind in the manifest, and to
// answer it fetches and parses the OpenAPI v3 document of each group
// version, anew for every action: the largest share of the runtime's CPU
// at scale (docs/benchmarks.md). Every API server since Kubernetes 1.27
// answers yes, and then Helm skips its client-side validation and sends
// the request without the parameter, so the server validates (unknown
// fields: a warning, malformed objects: an error), exactly as it does when
// the check is skipped. Only against older servers did the check lead to a
// client-side schema validation.
func serverSideValidation() []helmclient.ActionClientGetterOption {
	return []helmclient.ActionClientGetterOption{
		helmclient.AppendInstallOptions(func(i *action.Install) error {
			i.DisableOpenAPIValidation = true
			return nil
		}),
		helmclient.AppendUpgradeOptions(func(u *action.Upgrade) error {
			u.DisableOpenAPIValidation = true
			return nil
		}),
	}
}

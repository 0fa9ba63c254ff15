package helmruntime

import (
	"context"
	"fmt"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IsClusterScoped reports whether gvk is a cluster-scoped kind according to
// mapper. It fails when the kind is unknown to the API server, typically
// because its CRD is not installed.
func IsClusterScoped(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("look up scope of %s (is its CRD installed?): %w", gvk, err)
	}
	return mapping.Scope.Name() == meta.RESTScopeNameRoot, nil
}

// ReleaseNamespaceMapper returns the function that picks the namespace of the
// Helm release of a custom resource: the resource's own namespace for
// namespaced kinds, releaseNamespace for cluster-scoped kinds (which have no
// namespace of their own).
func ReleaseNamespaceMapper(clusterScoped bool, releaseNamespace string) helmclient.ObjectToStringMapper {
	if clusterScoped {
		return func(client.Object) (string, error) { return releaseNamespace, nil }
	}
	return func(obj client.Object) (string, error) {
		ns := obj.GetNamespace()
		if ns == "" {
			return "", fmt.Errorf("%s %q of a namespaced kind has no namespace",
				obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
		}
		return ns, nil
	}
}

// newLibraryGetter builds the library's action client getter of one kind,
// the bottom of its action path. Both the release storage (Helm's release
// Secrets) and the Kubernetes client Helm installs with use the namespace
// chosen by nsFor; the API server's capabilities come from caps, shared by
// the kind's releases.
func newLibraryGetter(cfg *rest.Config, mapper meta.RESTMapper, nsFor helmclient.ObjectToStringMapper, caps *capabilitiesCache) (helmclient.ActionClientGetter, error) {
	configGetter, err := helmclient.NewActionConfigGetter(cfg, mapper,
		helmclient.ClientNamespaceMapper(nsFor),
		helmclient.StorageDriverMapper(helmclient.DefaultSecretsStorageDriver(helmclient.SecretsStorageDriverOpts{
			StorageNamespaceMapper: nsFor,
		})),
	)
	if err != nil {
		return nil, fmt.Errorf("create Helm action config getter: %w", err)
	}
	clientGetter, err := helmclient.NewActionClientGetter(withSharedCapabilities(configGetter, caps), serverSideValidation()...)
	if err != nil {
		return nil, fmt.Errorf("create Helm action client getter: %w", err)
	}
	return clientGetter, nil
}

// serverSideValidation are the action client options that leave the
// validation of rendered manifests to the API server.
//
// With OpenAPI validation on (Helm's default), every install and upgrade
// (dry-runs included) asks whether the API server supports the
// fieldValidation query parameter for each kind in the manifest, and to
// answer it fetches and parses the OpenAPI v3 document of each group
// version, anew for every action: at 300 installs that was 60 % of the
// runtime's CPU. Every API server since Kubernetes 1.27 answers yes, and
// then Helm skips its client-side validation and sends the request without
// the parameter, so the server validates (unknown fields: a warning,
// malformed objects: an error), exactly as it does when the check is
// skipped. Only against older servers did the check lead to a client-side
// schema validation.
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

// installInReleaseNamespace is the layer that makes installs and upgrades
// target the release namespace. The library's reconciler passes
// obj.GetNamespace(), which is "" for cluster-scoped custom resources;
// Helm would then render .Release.Namespace as "" and record the release
// with an empty namespace.
func installInReleaseNamespace(_ context.Context, t target, below actionClient) (actionClient, error) {
	return &namespacedActionClient{actionClient: below, namespace: t.namespace}, nil
}

// namespacedActionClient is an action client whose installs and upgrades
// always target one namespace, whatever namespace the caller passes.
type namespacedActionClient struct {
	actionClient
	namespace string
}

// Install installs the release in the bound namespace.
func (c *namespacedActionClient) Install(name, _ string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	return c.actionClient.Install(name, c.namespace, chrt, vals, opts...)
}

// DryRunUpgrade renders the upgrade in the bound namespace.
func (c *namespacedActionClient) DryRunUpgrade(name, _ string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	return c.actionClient.DryRunUpgrade(name, c.namespace, chrt, vals, opts...)
}

// Upgrade upgrades the release in the bound namespace.
func (c *namespacedActionClient) Upgrade(name, _ string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	return c.actionClient.Upgrade(name, c.namespace, chrt, vals, opts...)
}

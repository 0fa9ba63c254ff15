package helmruntime

import (
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	platformv1alpha1 "github.com/acme/platform-operator/extensions/api/platform/v1alpha1"
	"github.com/acme/platform-operator/internal/operator/cachefilter"
)

// NewScheme returns the scheme of the manager: the client-go built-in types
// plus apiextensions/v1 and the operator's own API (ChartRollout). Custom resource kinds stay unstructured; the
// reconcilers register them when they are set up.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(platformv1alpha1.AddToScheme(s))
	return s
}

// ManagerOptions translates the runtime options into controller-runtime
// manager options: leader election, metrics server, health probes and the
// namespaces of the cache. opts should be completed (see Options.Complete);
// ws are the watches the manager's reconcilers will serve (their custom
// resources are cached whole, see cachefilter.CacheOptions, and only those of the
// shard, see managersetup.ParseShard); their whole statuses are kept in
// statuses (nil: not kept). The manager logs refusals at info
// (refusalsAtInfo).
func ManagerOptions(opts Options, ws []watches.Watch, statuses *cachefilter.Statuses) ctrl.Options {
	o := opts.ManagerOptions(NewScheme())
	o.Cache = cachefilter.CacheOptions(opts.WatchNamespaces, watchedKinds(ws), opts.Shard(), statuses)
	o.Logger = refusalsAtInfo(ctrl.Log)
	return o
}

// watchedKinds are the custom resource kinds of ws.
func watchedKinds(ws []watches.Watch) []schema.GroupVersionKind {
	kinds := make([]schema.GroupVersionKind, 0, len(ws))
	for _, w := range ws {
		kinds = append(kinds, w.GroupVersionKind)
	}
	return kinds
}

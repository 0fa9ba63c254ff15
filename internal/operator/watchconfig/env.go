package watchconfig

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// DefaultReconcilePeriod is the default resync period of a release whose
	// watch sets no reconcilePeriod. The resync is a safety net (spec edits
	// and drift of rendered objects are watched), jittered per resource, so
	// it can be long.
	DefaultReconcilePeriod = time.Hour
	// DefaultMaxReleaseHistory is the default number of Helm release
	// revisions kept per release.
	DefaultMaxReleaseHistory = 10
	// FallbackReleaseNamespace is the release namespace used when neither the
	// flag, POD_NAMESPACE nor the service-account namespace file provide one.
	FallbackReleaseNamespace = "default"
	// WatchNamespaceEnvVar names the environment variable that restricts the
	// namespaces the operator watches: empty means all namespaces, otherwise a
	// comma-separated list.
	WatchNamespaceEnvVar = "WATCH_NAMESPACE"
	// PodNamespaceEnvVar names the environment variable (usually set through
	// the downward API) holding the namespace the operator runs in.
	PodNamespaceEnvVar = "POD_NAMESPACE"
	// ServiceAccountNamespaceFile is the file a pod reads its own namespace from.
	ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
)

// Env abstracts the process environment so that option completion can be
// tested. [OSEnv] returns the real one.
type Env struct {
	// Getenv returns the value of an environment variable, "" when unset.
	Getenv func(key string) string
	// ReadFile returns the contents of a file.
	ReadFile func(path string) ([]byte, error)
}

// EnvOf returns an environment made of vars and files, for tests.
func EnvOf(vars map[string]string, files map[string]string) Env {
	return Env{
		Getenv: func(k string) string { return vars[k] },
		ReadFile: func(p string) ([]byte, error) {
			if c, ok := files[p]; ok {
				return []byte(c), nil
			}
			return nil, fs.ErrNotExist
		},
	}
}

// OSEnv returns the environment of the running process.
func OSEnv() Env {
	return Env{Getenv: os.Getenv, ReadFile: os.ReadFile}
}

// ResolveReleaseNamespace returns the namespace that stores the releases of
// cluster-scoped kinds when --release-namespace is not given: $POD_NAMESPACE,
// else the in-cluster service-account namespace file, else "default".
func ResolveReleaseNamespace(env Env) string {
	if env.Getenv != nil {
		if ns := strings.TrimSpace(env.Getenv(PodNamespaceEnvVar)); ns != "" {
			return ns
		}
	}
	if env.ReadFile != nil {
		if b, err := env.ReadFile(ServiceAccountNamespaceFile); err == nil {
			if ns := strings.TrimSpace(string(b)); ns != "" {
				return ns
			}
		}
	}
	return FallbackReleaseNamespace
}

// ParseWatchNamespaces parses the value of WATCH_NAMESPACE: a comma-separated
// list of namespaces. Blank items and duplicates are dropped; an empty result
// (nil) means all namespaces.
func ParseWatchNamespaces(value string) []string {
	var out []string
	seen := map[string]bool{}
	for _, item := range strings.Split(value, ",") {
		ns := strings.TrimSpace(item)
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		out = append(out, ns)
	}
	return out
}

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

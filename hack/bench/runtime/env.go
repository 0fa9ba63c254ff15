package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/acme/platform-operator/hack/bench/internal/benchkit"
	"github.com/acme/platform-operator/internal/devtools/localcluster"
)

// benchEnv is the fresh control plane of one measurement: its state
// directory, the cluster, and the benchmark's unthrottled clients, with
// the benchmark's namespace created.
type benchEnv struct {
	state   string
	cluster *localcluster.Cluster
	rc      *rest.Config
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	// profileDir is where profile writes the API server's CPU profiles;
	// empty when it was started without profiling.
	profileDir string
}

// profile takes CPU profiles of the API server named after name until the
// returned stop is called (profileAPIServer); nothing when the benchmark
// does not profile it.
func (e *benchEnv) profile(name string) (stop func()) {
	if e.profileDir == "" {
		return func() {}
	}
	return profileAPIServer(e.rc, e.profileDir, name)
}

// newBenchEnv starts a control plane in a new state directory named after
// prefix, whose API server writes its audit log to auditLog unless that is
// empty, and serves /debug/pprof when cfg.profileAPIServer. The returned stop ends it and removes the directory (also on an
// interrupt); call it even when err is not nil.
func newBenchEnv(ctx context.Context, cfg config, prefix, auditLog string) (env *benchEnv, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	state, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, benchkit.Cleanup(func() { _ = os.RemoveAll(state) }))
	cluster, err := localcluster.Up(ctx, localcluster.Config{BinDir: cfg.binDir, StateDir: filepath.Join(state, "cluster"), AuditLog: auditLog, Profiling: cfg.profileAPIServer})
	if err != nil {
		return nil, stop, fmt.Errorf("local cluster: %w", err)
	}
	stops = append(stops, benchkit.Cleanup(func() { _ = cluster.Stop() }))
	rc, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		return nil, stop, err
	}
	rc.QPS, rc.Burst = -1, 0 // the benchmark's own client is not throttled
	env = &benchEnv{state: state, cluster: cluster, rc: rc, kube: kubernetes.NewForConfigOrDie(rc), dyn: dynamic.NewForConfigOrDie(rc)}
	if cfg.profileAPIServer {
		env.profileDir = cfg.outDir
	}
	if _, err := env.kube.CoreV1().Namespaces().Create(ctx, namespaceObject(), metav1.CreateOptions{}); err != nil {
		return nil, stop, err
	}
	return env, stop, nil
}

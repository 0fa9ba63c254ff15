// Command cronscaler is the CronScaler benchmark (`make bench-cronscaler`),
// not a test: it starts a local control plane (internal/devtools/localcluster), runs
// bin/extensions as a process, creates N CronScalers whose jobs all fire at
// the same minute boundary, and prints the lag from the scheduled fire to
// the applied scale (p50/p99/max, seen by a watch on the targets, and the
// sidecar's own lag histogram), the sidecar's CPU seconds and peak RSS over
// the run (from /proc), and its CPU use while idle between fires.
//
// Targets are instances of a small custom resource with a /scale
// subresource (no controller acts on them), so the cost measured is the
// CronScaler controller's and the API server's, not pod churn. The clock is
// the real one: the benchmark waits for a real minute boundary.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/acme/platform-operator/hack/bench/internal/benchkit"
	"github.com/acme/platform-operator/internal/devtools/localcluster"
	"github.com/acme/platform-operator/internal/devtools/process"
)

var (
	targetGVR = schema.GroupVersionResource{Group: "bench.acme.com", Version: "v1", Resource: "replicated"}
	scalerGVR = schema.GroupVersionResource{Group: "autoscaling.acme.com", Version: "v1alpha1", Resource: "cronscalers"}
)

const ns = "bench"

func main() {
	n := flag.Int("n", 1000, "number of CronScalers (and targets)")
	binDir := flag.String("bin-dir", "bin/k8s", "directory with etcd and kube-apiserver and the other control plane binaries")
	extensions := flag.String("extensions", "bin/extensions", "the sidecar binary")
	crdDir := flag.String("crd-dir", "config/crd/bases", "CRDs to install")
	concurrency := flag.Int("concurrency", 8, "--cronscaler-max-concurrent-reconciles of the sidecar (with -floor: parallel patches)")
	sidecarArgs := flag.String("sidecar-args", "", "extra space-separated flags for the sidecar, e.g. --pprof-bind-address=127.0.0.1:6062")
	floor := flag.Bool("floor", false, "no sidecar: patch the N targets' /scale directly, all at once, to measure what the API server alone allows")
	flag.Parse()
	benchkit.StopOnInterrupt()
	if err := run(*n, *binDir, *extensions, *crdDir, *concurrency, *floor, strings.Fields(*sidecarArgs)); err != nil {
		fmt.Fprintln(os.Stderr, "bench-cronscaler:", err)
		os.Exit(1)
	}
}

func run(n int, binDir, extensionsBin, crdDir string, concurrency int, floor bool, sidecarArgs []string) error {
	ctx := context.Background()
	state, err := os.MkdirTemp("", "bench-cronscaler-")
	if err != nil {
		return err
	}
	defer benchkit.Cleanup(func() { _ = os.RemoveAll(state) })()
	fmt.Println("starting a local control plane ...")
	cluster, err := localcluster.Up(ctx, localcluster.Config{BinDir: binDir, StateDir: filepath.Join(state, "cluster")})
	if err != nil {
		return fmt.Errorf("local cluster: %w", err)
	}
	defer benchkit.Cleanup(func() { _ = cluster.Stop() })()
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0 // the benchmark's own client is not throttled
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	if err := benchkit.InstallCRDs(ctx, apiextclient.NewForConfigOrDie(cfg), crdDir, targetCRD()); err != nil {
		return err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}

	start := time.Now()
	if err := benchkit.Parallel(n, 16, func(i int) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "bench.acme.com/v1", "kind": "Replicated",
			"metadata": map[string]any{"name": fmt.Sprintf("t%04d", i)},
			"spec":     map[string]any{"replicas": int64(1)},
		}}
		_, err := dyn.Resource(targetGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating targets: %w", err)
	}
	fmt.Printf("created %d targets in %s\n", n, time.Since(start).Round(time.Millisecond))
	if floor {
		return floorRun(ctx, cluster, dyn, n, concurrency)
	}

	side, err := startSidecar(extensionsBin, cluster.Kubeconfig, state, concurrency, sidecarArgs)
	if err != nil {
		return err
	}
	defer benchkit.Cleanup(func() { _ = side.Stop(30 * time.Second) })()
	cpu0, _ := benchkit.ProcCPU(side.Pid())
	runStart := time.Now()

	// The jobs: "base" at minute boundary B (daily), "fire" at B+1min. The
	// CronScalers are created just after B, so base is active (its daily
	// fire at B is the latest) and the targets keep 1 replica; at B+1min
	// every job fires at once. The time in between is the idle window.
	b := time.Now().Truncate(time.Minute).Add(time.Minute)
	if time.Until(b) < 0 {
		b = b.Add(time.Minute)
	}
	fmt.Printf("waiting for the minute boundary %s to create the CronScalers ...\n", b.Format(time.TimeOnly))
	time.Sleep(time.Until(b) + 500*time.Millisecond)
	fire := b.Add(time.Minute)
	base := fmt.Sprintf("%d %d * * *", b.UTC().Minute(), b.UTC().Hour())
	sched := fmt.Sprintf("%d %d * * *", fire.UTC().Minute(), fire.UTC().Hour())
	fmt.Printf("all jobs fire at %s (schedule %q UTC)\n", fire.UTC().Format(time.RFC3339), sched)

	// Watch the targets before anything can fire.
	w, err := dyn.Resource(targetGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	seen := map[string]time.Time{}
	var seenMu sync.Mutex
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			u := ev.Object.(*unstructured.Unstructured)
			r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			if r == 2 {
				seenMu.Lock()
				if _, ok := seen[u.GetName()]; !ok {
					seen[u.GetName()] = time.Now()
				}
				seenMu.Unlock()
			}
		}
	}()

	start = time.Now()
	if err := benchkit.Parallel(n, 16, func(i int) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling.acme.com/v1alpha1", "kind": "CronScaler",
			"metadata": map[string]any{"name": fmt.Sprintf("cs%04d", i)},
			"spec": map[string]any{
				"scaleTargetRef": map[string]any{"apiVersion": "bench.acme.com/v1", "kind": "Replicated", "name": fmt.Sprintf("t%04d", i)},
				"jobs": []any{
					map[string]any{"name": "base", "schedule": base, "replicas": int64(1)},
					map[string]any{"name": "fire", "schedule": sched, "replicas": int64(2)},
				},
			},
		}}
		_, err := dyn.Resource(scalerGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating CronScalers: %w", err)
	}
	fmt.Printf("created %d CronScalers in %s\n", n, time.Since(start).Round(time.Millisecond))

	// Let the initial reconciles finish, then measure the idle CPU until
	// shortly before the fire.
	if err := waitReconciled(side, n, 60*time.Second); err != nil {
		return err
	}
	idleStart := time.Now()
	idleCPU0, _ := benchkit.ProcCPU(side.Pid())
	time.Sleep(time.Until(fire.Add(-2 * time.Second)))
	idleCPU1, _ := benchkit.ProcCPU(side.Pid())
	idleWall := time.Since(idleStart)
	// Who works during the burst: CPU seconds per process from 2 s before
	// the fire until the last target is seen scaled.
	burst := benchkit.ClusterProcesses(cluster.Pid, map[string]int{"sidecar": side.Pid()})
	burst.Mark()

	fmt.Printf("waiting for the fire at %s ...\n", fire.Format(time.TimeOnly))
	benchkit.PollUntil(time.Until(fire.Add(2*time.Minute)), 100*time.Millisecond, func() bool {
		seenMu.Lock()
		defer seenMu.Unlock()
		return len(seen) == n
	})
	burstCPU := burst.CPUSince()
	var burstEnd time.Time
	seenMu.Lock()
	for _, t := range seen {
		if t.After(burstEnd) {
			burstEnd = t
		}
	}
	seenMu.Unlock()
	w.Stop()
	cpu1, _ := benchkit.ProcCPU(side.Pid())
	hwm, _ := benchkit.ProcPeakRSS(side.Pid())
	hist, _ := histogram(side)

	seenMu.Lock()
	lags := make([]time.Duration, 0, len(seen))
	for _, t := range seen {
		lags = append(lags, t.Sub(fire))
	}
	seenMu.Unlock()
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })

	fmt.Println()
	fmt.Printf("machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), benchkit.CPUModel())
	fmt.Printf("CronScalers: %d, sidecar --cronscaler-max-concurrent-reconciles=%d\n", n, concurrency)
	fmt.Printf("targets scaled at the fire: %d/%d\n", len(lags), n)
	if len(lags) > 0 {
		fmt.Printf("lag fire -> scale seen by a watch: p50 %s  p99 %s  max %s\n",
			benchkit.Percentile(lags, 50).Round(time.Millisecond), benchkit.Percentile(lags, 99).Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
	}
	fmt.Printf("sidecar lag histogram (cronscaler_scale_lag_seconds): %s\n", hist)
	fmt.Printf("CPU seconds from fire-2s until all targets were seen scaled (%s):", burstEnd.Sub(fire.Add(-2*time.Second)).Round(100*time.Millisecond))
	fmt.Printf("  %s\n", burstCPU)
	fmt.Printf("sidecar CPU over the run: %.2f s in %s wall (from sidecar start)\n", cpu1-cpu0, time.Since(runStart).Round(time.Second))
	fmt.Printf("sidecar peak RSS: %.1f MiB\n", float64(hwm)/1024)
	fmt.Printf("sidecar idle CPU between fires: %.4f s over %s = %.3f%% of a core\n",
		idleCPU1-idleCPU0, idleWall.Round(time.Second), 100*(idleCPU1-idleCPU0)/idleWall.Seconds())
	return nil
}

// floorRun is the lower bound of the lag on this machine: no controller,
// the benchmark itself sends the N scale patches a burst of fires costs
// (the same tested JSON patch of /scale the controller sends), with
// concurrency in flight, and the same watch sees them land.
func floorRun(ctx context.Context, cluster *localcluster.Cluster, dyn dynamic.Interface, n, concurrency int) error {
	w, err := dyn.Resource(targetGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	defer w.Stop()
	seen := make(chan time.Time, n)
	go func() {
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Modified {
				if r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); r == 2 {
					seen <- time.Now()
				}
			}
		}
	}()
	time.Sleep(2 * time.Second) // let the watch settle
	procs := benchkit.ClusterProcesses(cluster.Pid, nil)
	procs.Mark()
	patch := []byte(`[{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":2}]`)
	start := time.Now()
	if err := benchkit.Parallel(n, concurrency, func(i int) error {
		_, err := dyn.Resource(targetGVR).Namespace(ns).Patch(ctx, fmt.Sprintf("t%04d", i), types.JSONPatchType, patch, metav1.PatchOptions{}, "scale")
		return err
	}); err != nil {
		return fmt.Errorf("patching /scale: %w", err)
	}
	lags := make([]time.Duration, 0, n)
	timeout := time.After(time.Minute)
	for len(lags) < n {
		select {
		case t := <-seen:
			lags = append(lags, t.Sub(start))
		case <-timeout:
			return fmt.Errorf("only %d of %d patches seen by the watch", len(lags), n)
		}
	}
	cpu := procs.CPUSince()
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	fmt.Println()
	fmt.Printf("machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), benchkit.CPUModel())
	fmt.Printf("floor: %d /scale patches sent at once by the benchmark, %d in flight, no sidecar\n", n, concurrency)
	fmt.Printf("lag start -> scale seen by a watch: p50 %s  p99 %s  max %s\n",
		benchkit.Percentile(lags, 50).Round(time.Millisecond), benchkit.Percentile(lags, 99).Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
	fmt.Printf("CPU seconds from the start until all were seen (%s):", lags[len(lags)-1].Round(100*time.Millisecond))
	fmt.Printf("  %s\n", cpu)
	return nil
}

// targetCRD is a minimal namespaced kind with a /scale subresource.
func targetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "replicated.bench.acme.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.acme.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "replicated", Singular: "replicated", Kind: "Replicated", ListKind: "ReplicatedList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
			}},
		},
	}
}

// startSidecar runs bin/extensions against the benchmark's cluster.
func startSidecar(bin, kubeconfig, dir string, concurrency int, extra []string) (*process.Process, error) {
	addr, err := process.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--metrics-bind-address", addr, "--metrics-secure=false", "--health-probe-bind-address", "0",
		fmt.Sprintf("--cronscaler-max-concurrent-reconciles=%d", concurrency)}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	return process.Start("extensions", cmd, addr, filepath.Join(dir, "extensions.log"), time.Minute)
}

// waitReconciled waits until the controller has reconciled at least n
// times and then stayed quiet for two seconds: no reconcile and no API
// request (statuses written after a burst included).
func waitReconciled(s *process.Process, n int, timeout time.Duration) error {
	read := func() [2]float64 {
		return [2]float64{benchkit.Metric(s, "controller_runtime_reconcile_total", "controller=cronscaler"), benchkit.Metric(s, "rest_client_requests_total")}
	}
	waited, last := benchkit.Settled(read, func(v [2]float64) bool { return v[0] >= float64(n) }, 2*time.Second, timeout)
	if last[0] < float64(n) || waited >= timeout {
		return fmt.Errorf("the initial reconciles did not finish within %s (%v done)", timeout, last[0])
	}
	return nil
}

// histogram summarises the sidecar's lag histogram as cumulative counts.
func histogram(s *process.Process) (string, error) {
	var b bytes.Buffer
	for _, le := range []string{"0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"} {
		fmt.Fprintf(&b, "<=%ss: %.0f  ", le, benchkit.Metric(s, "cronscaler_scale_lag_seconds_bucket", "le="+le))
	}
	return strings.TrimSpace(b.String()), nil
}

// Command rollout measures a chart rollout in waves against the upgrade
// of every release at once, in one run on one local cluster (kwok's Pods
// become Ready at once): N Nginx resources are installed at chart 0.1.0,
// then the operator restarts with 0.2.0 as the default and no ChartRollout
// API (every release upgrades at once, as before rollouts), then with
// 0.3.0 as the default and the API installed (the default waves: 1, 10 %,
// 50 %, the rest). For each: the wall time from the manager's start until
// every release runs the new version and is Ready, the API requests the
// manager sent, its CPU seconds, and for the waves each wave's size and
// duration. `make bench-rollout` runs it; docs/benchmarks.md keeps the
// figures. A benchmark, not a test: it prints figures and fails only when
// something does not complete.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/acme/platform-operator/hack/bench/internal/benchkit"
	"github.com/acme/platform-operator/internal/devtools/localcluster"
	"github.com/acme/platform-operator/internal/devtools/process"
)

const ns = "bench"

var (
	nginxGVR   = schema.GroupVersionResource{Group: "web.acme.com", Version: "v1alpha1", Resource: "nginxes"}
	rolloutGVR = schema.GroupVersionResource{Group: "platform.acme.com", Version: "v1alpha1", Resource: "chartrollouts"}
)

const rolloutCRD = "chartrollouts.platform.acme.com"

type config struct {
	n        int
	binDir   string
	manager  string
	crdDir   string
	kwokDir  string
	chart    string
	outDir   string
	deadline time.Duration
}

// Phase is the figures of one move of every release to a chart version.
type Phase struct {
	Name      string        `json:"name"`
	Version   string        `json:"version"`
	Wall      time.Duration `json:"wallNanos"`
	Requests  float64       `json:"requests"`
	CPUSecond float64       `json:"cpuSeconds"`
	Waves     []Wave        `json:"waves,omitempty"`
}

// Wave is one wave of the rollout, from the ChartRollout's history.
type Wave struct {
	Releases int64         `json:"releases"`
	Took     time.Duration `json:"tookNanos"`
}

func main() {
	var cfg config
	flag.IntVar(&cfg.n, "n", 1000, "Nginx resources")
	flag.StringVar(&cfg.binDir, "bin-dir", "bin/k8s", "control plane binaries")
	flag.StringVar(&cfg.manager, "manager", "bin/manager", "the operator's Helm runtime")
	flag.StringVar(&cfg.crdDir, "crd-dir", "config/crd/bases", "CRDs to install")
	flag.StringVar(&cfg.kwokDir, "kwok-dir", "hack/kwok", "kwok's Stage files: the fake node's Pods become Ready")
	flag.StringVar(&cfg.chart, "chart", "helm-charts/nginx", "the Nginx chart, copied at three versions")
	flag.StringVar(&cfg.outDir, "out", "bin/bench-rollout", "directory for results.json and logs")
	flag.DurationVar(&cfg.deadline, "phase-timeout", 20*time.Minute, "longest wait for one phase")
	flag.Parse()
	for _, p := range []*string{&cfg.manager, &cfg.chart, &cfg.binDir, &cfg.crdDir, &cfg.outDir, &cfg.kwokDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-rollout:", err)
			os.Exit(1)
		}
		*p = abs
	}
	benchkit.StopOnInterrupt()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-rollout:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	ctx := context.Background()
	if err := os.MkdirAll(cfg.outDir, 0o755); err != nil {
		return err
	}
	state, err := os.MkdirTemp("", "bench-rollout-")
	if err != nil {
		return err
	}
	defer benchkit.Cleanup(func() { _ = os.RemoveAll(state) })()
	stages, err := localcluster.KwokStages(cfg.kwokDir)
	if err != nil {
		return err
	}
	// A fake node takes 250 Pods; a rolling update has up to two per
	// release.
	nodes := cfg.n/100 + 1
	cluster, err := localcluster.Up(ctx, localcluster.Config{BinDir: cfg.binDir, StateDir: filepath.Join(state, "cluster"), KwokStages: stages, Nodes: nodes})
	if err != nil {
		return fmt.Errorf("local cluster: %w", err)
	}
	defer benchkit.Cleanup(func() { _ = cluster.Stop() })()
	rc, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = -1, 0
	kube := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	ext := apiextclient.NewForConfigOrDie(rc)
	if err := benchkit.InstallCRDs(ctx, ext, cfg.crdDir); err != nil {
		return err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, v := range []string{"0.1.0", "0.2.0", "0.3.0"} {
		if err := copyChart(cfg.chart, filepath.Join(state, "nginx-"+v), v); err != nil {
			return err
		}
	}
	fmt.Printf("bench-rollout: N=%d, %d fake nodes, %s, load %s\n", cfg.n, nodes, benchkit.CPUModel(), benchkit.LoadAverage())

	// Install every release at 0.1.0.
	mgr, err := startManager(cfg, state, cluster.Kubeconfig, "install", "0.1.0")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := benchkit.Parallel(cfg.n, 16, func(i int) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "web.acme.com/v1alpha1", "kind": "Nginx",
			"metadata": map[string]any{"name": fmt.Sprintf("web-%04d", i), "namespace": ns},
			"spec":     map[string]any{},
		}}
		_, err := dyn.Resource(nginxGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating Nginx resources: %w", err)
	}
	if err := waitAll(ctx, dyn, cfg, "0.1.0"); err != nil {
		return err
	}
	fmt.Printf("installed: %d Ready at 0.1.0 after %s\n", cfg.n, time.Since(start).Round(time.Second))
	_ = mgr.Stop(30 * time.Second)

	// All at once: no ChartRollout API, as before rollouts.
	if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, rolloutCRD, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete the ChartRollout CRD: %w", err)
	}
	if !benchkit.PollUntil(time.Minute, time.Second, func() bool {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, rolloutCRD, metav1.GetOptions{})
		return err != nil
	}) {
		return fmt.Errorf("the ChartRollout CRD did not go")
	}
	once, err := phase(ctx, cfg, state, cluster.Kubeconfig, dyn, "all-at-once", "0.2.0", "0.1.0")
	if err != nil {
		return err
	}

	// Waves: the API installed again, the default policy.
	only := filepath.Join(state, "rollout-crd")
	if err := os.MkdirAll(only, 0o755); err != nil {
		return err
	}
	crd, err := os.ReadFile(filepath.Join(cfg.crdDir, "platform.acme.com_chartrollouts.yaml"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(only, "crd.yaml"), crd, 0o644); err != nil {
		return err
	}
	if err := benchkit.InstallCRDs(ctx, ext, only); err != nil {
		return err
	}
	waves, err := phase(ctx, cfg, state, cluster.Kubeconfig, dyn, "waves", "0.3.0", "0.1.0", "0.2.0")
	if err != nil {
		return err
	}
	cr, err := dyn.Resource(rolloutGVR).Get(ctx, "nginx-0.3.0", metav1.GetOptions{})
	if err != nil {
		return err
	}
	hist, _, _ := unstructured.NestedSlice(cr.Object, "status", "history")
	for _, h := range hist {
		m := h.(map[string]any)
		w := Wave{}
		w.Releases, _ = m["releases"].(int64)
		s, _ := time.Parse(time.RFC3339, fmt.Sprint(m["startedAt"]))
		f, _ := time.Parse(time.RFC3339, fmt.Sprint(m["finishedAt"]))
		w.Took = f.Sub(s)
		waves.Waves = append(waves.Waves, w)
	}

	fmt.Printf("\n| N=%d | wall until all Ready at the new version | API requests | per release | manager CPU-s |\n|---|---|---|---|---|\n", cfg.n)
	for _, p := range []Phase{once, waves} {
		fmt.Printf("| %s (%s) | %s | %.0f | %.1f | %.1f |\n", p.Name, p.Version, p.Wall.Round(100*time.Millisecond), p.Requests, p.Requests/float64(cfg.n), p.CPUSecond)
	}
	fmt.Printf("\nwaves / all at once: %.2fx the wall time, %.2fx the requests\n", waves.Wall.Seconds()/once.Wall.Seconds(), waves.Requests/once.Requests)
	var sizes []string
	for i, w := range waves.Waves {
		sizes = append(sizes, fmt.Sprintf("wave %d: %d releases in %s", i+1, w.Releases, w.Took))
	}
	fmt.Println(strings.Join(sizes, "; "))
	b, _ := json.MarshalIndent([]Phase{once, waves}, "", "  ")
	return os.WriteFile(filepath.Join(cfg.outDir, "results.json"), b, 0o644)
}

// phase restarts the manager with version as the default and others
// shipped beside it, and measures until every release runs version and is
// Ready (and, with the API installed, the ChartRollout completed).
func phase(ctx context.Context, cfg config, state, kubeconfig string, dyn dynamic.Interface, name, version string, others ...string) (Phase, error) {
	p := Phase{Name: name, Version: version}
	start := time.Now()
	mgr, err := startManager(cfg, state, kubeconfig, name, version, others...)
	if err != nil {
		return p, err
	}
	defer func() { _ = mgr.Stop(30 * time.Second) }()
	if err := waitAll(ctx, dyn, cfg, version); err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	p.Wall = time.Since(start)
	p.Requests = benchkit.Metric(mgr, "rest_client_requests_total")
	p.CPUSecond, _ = benchkit.ProcCPU(mgr.Pid())
	fmt.Printf("%s: %d Ready at %s after %s, %.0f requests, %.1f CPU-s\n", name, cfg.n, version, p.Wall.Round(100*time.Millisecond), p.Requests, p.CPUSecond)
	return p, nil
}

// waitAll waits until every Nginx reports version and Ready=True.
func waitAll(ctx context.Context, dyn dynamic.Interface, cfg config, version string) error {
	var done int
	ok := benchkit.PollUntil(cfg.deadline, time.Second, func() bool {
		list, err := dyn.Resource(nginxGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		done = 0
		for _, u := range list.Items {
			v, _, _ := unstructured.NestedString(u.Object, "status", "chartVersion")
			if v == version && readyTrue(&u) {
				done++
			}
		}
		return done == cfg.n
	})
	if !ok {
		return fmt.Errorf("%d of %d Ready at %s after %s", done, cfg.n, version, cfg.deadline)
	}
	return nil
}

func readyTrue(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

// startManager starts the runtime with a watches file whose Nginx chart
// is the copy of version, the copies of others shipped beside it.
func startManager(cfg config, state, kubeconfig, name, version string, others ...string) (*process.Process, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "- group: web.acme.com\n  version: v1alpha1\n  kind: Nginx\n  chart: %s\n", filepath.Join(state, "nginx-"+version))
	if len(others) > 0 {
		b.WriteString("  chartVersions:\n")
		for _, o := range others {
			fmt.Fprintf(&b, "  - %s\n", filepath.Join(state, "nginx-"+o))
		}
	}
	watches := filepath.Join(state, "watches-"+name+".yaml")
	if err := os.WriteFile(watches, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	addr, err := process.FreeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.manager, "--watches-file", watches, "--metrics-bind-address", addr, "--metrics-secure=false", "--health-probe-bind-address", "0")
	cmd.Dir = state
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE=default", "WATCH_NAMESPACE=")
	return process.Start("manager-"+name, cmd, addr, filepath.Join(cfg.outDir, "manager-"+name+".log"), time.Minute)
}

// copyChart copies the chart at src to dst with version in Chart.yaml.
func copyChart(src, dst, version string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "Chart.yaml" {
			b = regexp.MustCompile(`(?m)^version: .*$`).ReplaceAll(b, []byte("version: "+version))
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

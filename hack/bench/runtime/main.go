// Command runtime is the Helm runtime benchmark (`make bench`), not a test:
// for each runtime — ours (bin/manager), the stock helm-operator-plugins
// v0.9.1 `run` and operator-sdk v1.42.2's `helm-operator`, the peers built
// from source by the Makefile — and each N, it starts a fresh local control
// plane (internal/devtools/localcluster: etcd, kube-apiserver, controller-manager,
// scheduler; no kwok, so pods stay Pending, which Deployed does not need),
// installs the CRDs, runs the runtime as a process with the same
// watches.yaml (Nginx only, our real chart) and measures:
//
//   - creating N Nginx resources: the time until all are Deployed, and the
//     p50/p99 per-resource latency from its create call to Deployed;
//   - a fixed idle window: the runtime's CPU (from /proc), and its API
//     requests per minute (from its metrics, see sentRequests);
//     peak RSS (VmHWM) is read at the end of the run;
//   - the child Deployments of 20 resources deleted at once: the time
//     until each is recreated;
//   - the spec of every resource edited at once: the time until every
//     release is deployed at a new revision (Helm's release Secrets).
//
// It prints a Markdown table per N with absolute figures and ours/peer
// ratios, writes the results as JSON, and a PNG plot of time-to-Deployed
// against N per runtime.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/acme/platform-operator/hack/bench/internal/benchkit"
	"github.com/acme/platform-operator/internal/devtools/process"
)

var nginxGVR = schema.GroupVersionResource{Group: "web.acme.com", Version: "v1alpha1", Resource: "nginxes"}

const (
	ns = "bench"
	// ours names our runtime in tables and ratios.
	ours = "ours"
)

// runtimeSpec is how to run one runtime.
type runtimeSpec struct {
	name string
	bin  string
	args func(watches, metricsAddr string) []string
	// env is added to the benchmark's environment.
	env []string
}

type config struct {
	ns          []int
	idle        time.Duration
	settle      time.Duration
	idleAfter   time.Duration
	drift       int
	runtimes    []runtimeSpec
	binDir      string
	crdDir      string
	chartDir    string
	outDir      string
	plot        string
	deadline    time.Duration
	concurrency int
	// spec is the JSON spec of every Nginx resource.
	spec string
	// itemise: the API server writes an audit log, and each runtime's
	// requests per install and per upgrade are itemised from it, with every
	// client's requests in each phase (the floor's too) (itemise.go).
	itemise bool
	// profileAPIServer: the API server serves /debug/pprof, and its CPU
	// profiles over the install and the upgrade phases are written to
	// the output directory (apiprofile.go).
	profileAPIServer bool
	// skipReady: the idle window does not wait for every resource to be
	// Ready (at N=10,000 the controller manager takes about 20 minutes to
	// report every Deployment available).
	skipReady bool
}

// createWorkers is how many creates (and spec edits) the benchmark has in
// flight, for ours and for the floor.
const createWorkers = 16

// editPatch is the spec edit of the upgrade phase.
const editPatch = `{"spec":{"podAnnotations":{"bench.acme.com/edit":"1"}}}`

// resourceName names the i-th resource (and its release).
func resourceName(i int) string { return fmt.Sprintf("web-%04d", i) }

func namespaceObject() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
}

// specValues is the spec of every resource, as values.
func (c config) specValues() (map[string]any, error) {
	spec := map[string]any{}
	if err := json.Unmarshal([]byte(c.spec), &spec); err != nil {
		return nil, fmt.Errorf("-spec %q: %w", c.spec, err)
	}
	return spec, nil
}

// editedValues is the spec after editPatch.
func (c config) editedValues() (map[string]any, error) {
	spec, err := c.specValues()
	if err != nil {
		return nil, err
	}
	var patch struct {
		Spec map[string]any `json:"spec"`
	}
	if err := json.Unmarshal([]byte(editPatch), &patch); err != nil {
		return nil, err
	}
	for k, v := range patch.Spec {
		spec[k] = v
	}
	return spec, nil
}

func main() {
	quick := flag.Bool("quick", false, "quick mode: N=200 only and a 2-minute idle window (unless -n or -idle are given)")
	nList := flag.String("n", "", "comma-separated resource counts (default 100,500,1000; quick: 200)")
	idle := flag.Duration("idle", 0, "idle window (default 10m; quick: 2m)")
	settle := flag.Duration("settle", 30*time.Second, "longest wait after all are Deployed for the runtime's reconciles to quiet down before the idle window")
	skipReady := flag.Bool("skip-ready", false, "do not wait for every resource to be Ready before the idle window (the idle figures then include the tail of the rollouts)")
	idleAfter := flag.Duration("idle-after", 0, "the idle window starts no earlier than this long after the first create, e.g. 6m to measure after every release's Ready deadline (readyTimeout, 5m by default) has passed")
	drift := flag.Int("drift", 20, "resources whose child Deployment is deleted, and as many others whose child's image is changed by hand")
	only := flag.String("runtimes", "ours,helm-operator-plugins,operator-sdk,floor", "runtimes to measure, in this order; floor is a bare client creating the rendered objects (floor.go)")
	spec := flag.String("spec", "{}", "JSON spec of every Nginx resource, e.g. {\"replicaCount\":0}")
	binDir := flag.String("bin-dir", "bin/k8s", "control plane binaries")
	manager := flag.String("manager", "bin/manager", "our runtime")
	hop := flag.String("helm-operator-plugins", "bin/helm-operator-plugins", "the stock helm-operator-plugins binary")
	sdk := flag.String("sdk-helm-operator", "bin/helm-operator", "operator-sdk's helm-operator binary")
	crdDir := flag.String("crd-dir", "config/crd/bases", "CRDs to install")
	chartDir := flag.String("chart", "helm-charts/nginx", "the Nginx chart")
	outDir := flag.String("out", "bin/bench", "directory for results.json, logs and the plot")
	plot := flag.String("plot", "", "PNG plot of time-to-Deployed vs N (default <out>/runtime-deployed.png)")
	deadline := flag.Duration("phase-timeout", 15*time.Minute, "longest wait for one phase (all Deployed, all recreated, all upgraded)")
	concurrency := flag.Int("max-concurrent-reconciles", 0, "--max-concurrent-reconciles of every runtime (0: each runtime's default)")
	oursArgs := flag.String("ours-args", "", "extra space-separated flags for our runtime, e.g. --pprof-bind-address=127.0.0.1:6060")
	oursEnv := flag.String("ours-env", "", "extra space-separated environment of our runtime, e.g. GOGC=50")
	profileAPI := flag.Bool("profile-apiserver", false, "write CPU profiles of the API server over the install and the upgrade phases to <out>/apiserver-<runtime>-<n>-<phase>-*.pprof (merge them with go tool pprof); profiling costs the API server CPU")
	itemise := flag.Bool("itemise", false, "itemise each runtime's requests per install and per upgrade by verb and resource, and count every client's requests in each phase (the floor's too), from the API server's audit log (<out>/audit-<runtime>-<n>.log); the log costs the API server CPU, so times are not comparable with runs without it")
	replot := flag.String("replot", "", "draw the plot (-plot) from the results.json of an earlier run, and measure nothing")
	flag.Parse()

	cfg := config{idle: *idle, settle: *settle, idleAfter: *idleAfter, skipReady: *skipReady, drift: *drift, binDir: *binDir, crdDir: *crdDir, outDir: *outDir, deadline: *deadline, concurrency: *concurrency, spec: *spec, itemise: *itemise, profileAPIServer: *profileAPI}
	if _, err := cfg.specValues(); err != nil {
		fatal(err)
	}
	switch {
	case *nList != "":
		for _, s := range strings.Split(*nList, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				fatal(fmt.Errorf("-n: bad count %q", s))
			}
			cfg.ns = append(cfg.ns, n)
		}
	case *quick:
		cfg.ns = []int{200}
	default:
		cfg.ns = []int{100, 500, 1000}
	}
	if cfg.idle == 0 {
		cfg.idle = 10 * time.Minute
		if *quick {
			cfg.idle = 2 * time.Minute
		}
	}
	var err error
	if cfg.chartDir, err = filepath.Abs(*chartDir); err != nil {
		fatal(err)
	}
	if cfg.binDir, err = filepath.Abs(*binDir); err != nil {
		fatal(err)
	}
	cfg.plot = *plot
	if cfg.plot == "" {
		cfg.plot = filepath.Join(cfg.outDir, "runtime-deployed.png")
	}
	if *replot != "" {
		if err := replotFrom(*replot, cfg.plot); err != nil {
			fatal(err)
		}
		fmt.Println("plot:", cfg.plot)
		return
	}
	all := map[string]runtimeSpec{
		ours: {name: ours, bin: *manager, env: strings.Fields(*oursEnv), args: func(w, m string) []string {
			return append([]string{"--watches-file", w, "--metrics-bind-address", m, "--metrics-secure=false", "--health-probe-bind-address", "0"}, strings.Fields(*oursArgs)...)
		}},
		"helm-operator-plugins": {name: "helm-operator-plugins", bin: *hop, args: func(w, m string) []string {
			return []string{"run", "--watches-file", w, "--metrics-bind-address", m, "--health-probe-bind-address", "0"}
		}},
		"operator-sdk": {name: "operator-sdk", bin: *sdk, args: func(w, m string) []string {
			return []string{"run", "--watches-file", w, "--metrics-bind-address", m, "--health-probe-bind-address", "0"}
		}},
		floorName: {name: floorName},
	}
	for _, name := range strings.Split(*only, ",") {
		spec, ok := all[strings.TrimSpace(name)]
		if !ok {
			fatal(fmt.Errorf("-runtimes: unknown runtime %q", name))
		}
		if spec.bin != "" {
			if spec.bin, err = filepath.Abs(spec.bin); err != nil {
				fatal(err)
			}
		}
		cfg.runtimes = append(cfg.runtimes, spec)
	}
	benchkit.StopOnInterrupt()
	if err := run(cfg); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func run(cfg config) error {
	if err := os.MkdirAll(cfg.outDir, 0o755); err != nil {
		return err
	}
	fmt.Printf("machine: %s/%s, %d CPUs (%s), load average at start %s\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), benchkit.CPUModel(), benchkit.LoadAverage())
	fmt.Printf("N: %v, idle window: %s, deleted and hand-edited children: %d each\n\n", cfg.ns, cfg.idle, cfg.drift)
	var results []Result
	for _, n := range cfg.ns {
		var byN []Result
		for _, rt := range cfg.runtimes {
			fmt.Printf("== %s, N=%d (load average %s)\n", rt.name, n, benchkit.LoadAverage())
			measureOne := measure
			if rt.name == floorName {
				measureOne = func(cfg config, _ runtimeSpec, n int) (Result, error) { return measureFloor(cfg, n) }
			}
			r, err := measureOne(cfg, rt, n)
			if err != nil {
				return fmt.Errorf("%s, N=%d: %w", rt.name, n, err)
			}
			byN = append(byN, r)
			results = append(results, r)
			if err := writeJSON(filepath.Join(cfg.outDir, "results.json"), results); err != nil {
				return err
			}
		}
		fmt.Println()
		fmt.Print(FormatTable(byN, ours))
		fmt.Println()
	}
	if err := writePlot(cfg.plot, results); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	fmt.Printf("results: %s, plot: %s\n", filepath.Join(cfg.outDir, "results.json"), cfg.plot)
	return nil
}

// replotFrom draws the plot of the results saved at path.
func replotFrom(path, plot string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var results []Result
	if err := json.Unmarshal(b, &results); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(results) == 0 {
		return fmt.Errorf("%s: no results", path)
	}
	return writePlot(plot, results)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// measure runs one runtime with n resources on a fresh cluster.
func measure(cfg config, rt runtimeSpec, n int) (Result, error) {
	res := Result{Runtime: rt.name, N: n}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	auditLog := auditLogPath(cfg, rt.name, n)
	env, stop, err := newBenchEnv(ctx, cfg, "bench-runtime-", auditLog)
	defer stop()
	if err != nil {
		return res, err
	}
	state, cluster, rc, kube, dyn := env.state, env.cluster, env.rc, env.kube, env.dyn
	if err := benchkit.InstallCRDs(ctx, apiextclient.NewForConfigOrDie(rc), cfg.crdDir); err != nil {
		return res, err
	}

	watchesFile := filepath.Join(state, "watches.yaml")
	watches := fmt.Sprintf("- group: web.acme.com\n  version: v1alpha1\n  kind: Nginx\n  chart: %s\n  watchDependentResources: true\n", cfg.chartDir)
	if err := os.WriteFile(watchesFile, []byte(watches), 0o644); err != nil {
		return res, err
	}
	addr, err := process.FreeAddr()
	if err != nil {
		return res, err
	}
	args := rt.args(watchesFile, addr)
	if cfg.concurrency > 0 {
		args = append(args, fmt.Sprintf("--max-concurrent-reconciles=%d", cfg.concurrency))
	}
	cmd := exec.Command(rt.bin, args...)
	cmd.Dir = state
	cmd.Env = append(append(os.Environ(), rt.env...), "KUBECONFIG="+cluster.Kubeconfig, "POD_NAMESPACE=default", "WATCH_NAMESPACE=")
	logFile := filepath.Join(cfg.outDir, fmt.Sprintf("%s-%d.log", rt.name, n))
	proc, err := process.Start(rt.name, cmd, addr, logFile, time.Minute)
	if err != nil {
		return res, err
	}
	defer benchkit.Cleanup(func() { _ = proc.Stop(30 * time.Second) })()
	cpuStart, _ := benchkit.ProcCPU(proc.Pid())

	obs := newObserver(n)
	if err := obs.start(ctx, rc, kube, dyn); err != nil {
		return res, err
	}

	// 1. Create N resources; wait until all are Deployed.
	names := make([]string, n)
	for i := range n {
		names[i] = resourceName(i)
	}
	spec, err := cfg.specValues()
	if err != nil {
		return res, err
	}
	req0 := sentRequests(proc)
	procs := benchkit.ClusterProcesses(cluster.Pid, map[string]int{"runtime": proc.Pid()})
	procs.Mark()
	stopProfile := env.profile(fmt.Sprintf("%s-%d-install", rt.name, n))
	start := time.Now()
	if err := benchkit.Parallel(n, createWorkers, func(i int) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "web.acme.com/v1alpha1", "kind": "Nginx",
			"metadata": map[string]any{"name": names[i], "namespace": ns},
			"spec":     spec,
		}}
		obs.created(names[i])
		_, err := dyn.Resource(nginxGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		return err
	}); err != nil {
		return res, fmt.Errorf("creating Nginx resources: %w", err)
	}
	fmt.Printf("   created %d in %s\n", n, time.Since(start).Round(time.Millisecond))
	last := obs.waitDeployed(cfg.deadline)
	installEnd := time.Now()
	installCPU := procs.CPUSince()
	stopProfile() // after the CPU is read: it waits for the profile in flight
	res.RequestsPerInstall = (sentRequests(proc) - req0) / float64(n)
	lat := obs.deployLatencies()
	res.Deployed = len(lat)
	if res.Deployed == n {
		res.AllDeployed = last.Sub(start)
	}
	sorted := benchkit.Sorted(lat)
	res.LatencyP50, res.LatencyP99 = benchkit.Percentile(sorted, 50), benchkit.Percentile(sorted, 99)
	fmt.Printf("   Deployed: %d/%d, all after %s, p50 %s, p99 %s\n", res.Deployed, n,
		res.AllDeployed.Round(time.Millisecond), res.LatencyP50.Round(time.Millisecond), res.LatencyP99.Round(time.Millisecond))
	fmt.Printf("   CPU seconds until all were Deployed: %s\n", installCPU)
	fmt.Printf("   API requests per install: %.1f\n", res.RequestsPerInstall)
	if auditLog != "" {
		reportAudit(auditLog, start, installEnd, n, "requests per install", "until all were Deployed")
	}

	// For runtimes that write Ready: every resource Ready, so that the
	// idle window does not count the tail of the rollouts (the controller
	// manager, at its default 20 requests per second, reports the last
	// Deployments available long after the last release is Deployed).
	if cfg.skipReady {
		fmt.Println("   Ready: not waited for (-skip-ready)")
	} else if lastReady, ok := obs.waitReady(cfg.deadline); ok {
		res.AllReady = lastReady.Sub(start)
		fmt.Printf("   Ready: all after %s\n", res.AllReady.Round(time.Millisecond))
	}

	// 2. Idle window, after the reconciles caused by the creation quiet down
	// (or cfg.settle passes: peers resync all the time).
	settled := waitQuiet(proc, cfg.settle)
	fmt.Printf("   settled after %s; idle for %s\n", settled.Round(time.Second), cfg.idle)
	if wait := cfg.idleAfter - time.Since(start); wait > 0 {
		fmt.Printf("   waiting %s more: the idle window starts %s after the first create\n", wait.Round(time.Second), cfg.idleAfter)
		time.Sleep(wait)
	}
	readyLags := benchkit.Sorted(obs.readyLags())
	res.ReadyMeasured = len(readyLags)
	if len(readyLags) > 0 {
		res.ReadyLagP50, res.ReadyLagP99 = benchkit.Percentile(readyLags, 50), benchkit.Percentile(readyLags, 99)
		res.ReadyLagMax = readyLags[len(readyLags)-1]
		fmt.Printf("   Ready=True after the Deployment rolled out: %d/%d, p50 %s, p99 %s, max %s\n", res.ReadyMeasured, n,
			res.ReadyLagP50.Round(time.Millisecond), res.ReadyLagP99.Round(time.Millisecond), res.ReadyLagMax.Round(time.Millisecond))
	}
	cpu0, _ := benchkit.ProcCPU(proc.Pid())
	req0 = sentRequests(proc)
	idleStart := time.Now()
	time.Sleep(cfg.idle)
	cpu1, _ := benchkit.ProcCPU(proc.Pid())
	req1 := sentRequests(proc)
	res.IdleWindow = time.Since(idleStart)
	res.IdleCPUCores = (cpu1 - cpu0) / res.IdleWindow.Seconds()
	res.APIRequestsPerM = (req1 - req0) / res.IdleWindow.Minutes()
	fmt.Printf("   idle: %.4f cores, %.0f API requests/min\n", res.IdleCPUCores, res.APIRequestsPerM)

	// 3. Delete the child Deployment of cfg.drift resources at once.
	drift := min(cfg.drift, n)
	res.DriftDeleted = drift
	var deleted []string
	for i := range drift {
		deleted = append(deleted, names[i*n/drift])
	}
	if err := obs.deleteChildren(ctx, kube, deleted); err != nil {
		return res, err
	}
	back := obs.waitTimes(obs.recreated, drift, cfg.deadline)
	res.DriftRecreated = len(back)
	sorted = benchkit.Sorted(back)
	res.DriftP50 = benchkit.Percentile(sorted, 50)
	if len(sorted) > 0 {
		res.DriftMax = sorted[len(sorted)-1]
	}
	fmt.Printf("   deleted children back: %d/%d, p50 %s, max %s\n", res.DriftRecreated, drift, res.DriftP50.Round(time.Millisecond), res.DriftMax.Round(time.Millisecond))
	if res.ReadyMeasured > 0 {
		notReady := benchkit.Sorted(obs.waitTimes(obs.notReadyAfterDelete, drift, 10*time.Second))
		res.NotReadyMeasured = len(notReady)
		if len(notReady) > 0 {
			res.NotReadyLagP50, res.NotReadyLagMax = benchkit.Percentile(notReady, 50), notReady[len(notReady)-1]
		}
		fmt.Printf("   Ready=False after the child was deleted: %d/%d, p50 %s, max %s\n", res.NotReadyMeasured, drift,
			res.NotReadyLagP50.Round(time.Millisecond), res.NotReadyLagMax.Round(time.Millisecond))
	}

	// 3b. Change the image of as many other children by hand, at once.
	var edited []string
	for i := range drift {
		edited = append(edited, names[(i*n/drift+n/(2*drift))%n])
	}
	res.EditedChildren = len(edited)
	if err := obs.editChildren(ctx, kube, edited); err != nil {
		return res, err
	}
	reverted := benchkit.Sorted(obs.waitTimes(obs.reverted, res.EditedChildren, cfg.deadline))
	res.EditsReverted = len(reverted)
	res.EditRevertedP50 = benchkit.Percentile(reverted, 50)
	if len(reverted) > 0 {
		res.EditRevertedMax = reverted[len(reverted)-1]
	}
	fmt.Printf("   edited children back: %d/%d, p50 %s, max %s\n", res.EditsReverted, res.EditedChildren, res.EditRevertedP50.Round(time.Millisecond), res.EditRevertedMax.Round(time.Millisecond))

	// 4. Edit every spec at once; wait until every release is upgraded.
	stopProfile = env.profile(fmt.Sprintf("%s-%d-upgrade", rt.name, n))
	procs.Mark()
	upStart := time.Now()
	reqUp0 := sentRequests(proc)
	obs.expectUpgrades()
	patch := []byte(editPatch)
	if err := benchkit.Parallel(n, createWorkers, func(i int) error {
		_, err := dyn.Resource(nginxGVR).Namespace(ns).Patch(ctx, names[i], types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return res, fmt.Errorf("editing specs: %w", err)
	}
	lastUp := obs.waitUpgraded(cfg.deadline)
	upEnd := time.Now()
	res.Upgraded = obs.upgradedCount()
	res.FailedReleases = obs.failedCount()
	if res.Upgraded == n {
		res.AllUpgraded = lastUp.Sub(upStart)
		res.RequestsPerUpgrade = (sentRequests(proc) - reqUp0) / float64(n)
	}
	fmt.Printf("   upgraded: %d/%d, all after %s; releases that failed at some revision: %d\n", res.Upgraded, n, res.AllUpgraded.Round(time.Millisecond), res.FailedReleases)
	fmt.Printf("   CPU seconds until all were upgraded: %s\n", procs.CPUSince())
	fmt.Printf("   API requests per upgrade: %.1f\n", res.RequestsPerUpgrade)
	stopProfile()
	if auditLog != "" {
		reportAudit(auditLog, upStart, upEnd, n, "requests per upgrade", "until all were upgraded")
	}

	if text, err := proc.MetricsText(); err == nil {
		_ = os.WriteFile(filepath.Join(cfg.outDir, fmt.Sprintf("%s-%d.metrics.txt", rt.name, n)), []byte(text), 0o644)
	}
	cpuEnd, _ := benchkit.ProcCPU(proc.Pid())
	res.TotalCPU = cpuEnd - cpuStart
	hwm, _ := benchkit.ProcPeakRSS(proc.Pid())
	res.PeakRSSMiB = float64(hwm) / 1024
	fmt.Printf("   peak RSS %.0f MiB, CPU over the run %.1f s\n", res.PeakRSSMiB, res.TotalCPU)
	return res, nil
}

// sentRequests is the number of requests the runtime p sent to the API
// server so far: client-go's count, less the reads ours answered without
// the API server (helmruntime_update_reads_answered_total,
// helmruntime_update_reads_as_left_total and
// helmruntime_existence_reads_answered_total, which client-go counts too;
// the peers have no such counters).
func sentRequests(p *process.Process) float64 {
	return benchkit.Metric(p, "rest_client_requests_total") - benchkit.Metric(p, "helmruntime_update_reads_answered_total") -
		benchkit.Metric(p, "helmruntime_update_reads_as_left_total") -
		benchkit.Metric(p, "helmruntime_existence_reads_answered_total")
}

// waitQuiet waits until the runtime's reconcile count stays the same for
// three seconds, at most max; it returns how long it waited.
func waitQuiet(p *process.Process, max time.Duration) time.Duration {
	waited, _ := benchkit.Settled(func() float64 { return benchkit.Metric(p, "controller_runtime_reconcile_total") }, nil, 3*time.Second, max)
	return waited
}

// observer watches the Nginx resources, their child Deployments and Helm's
// release Secrets, and records when things happen.
type observer struct {
	n  int
	mu sync.Mutex
	// createdAt: the create call of each resource; deployedAt: first seen Deployed.
	createdAt, deployedAt map[string]time.Time
	lastDeployed          time.Time
	// drift: deleted child Deployments (by name) with their old UID and when.
	deletedUID map[string]types.UID
	deletedAt  map[string]time.Time
	recreated  map[string]time.Duration
	// hand edits: child Deployments (by name) with the image to come back,
	// when they were edited, and how long that took.
	editImage map[string]string
	editedAt  map[string]time.Time
	reverted  map[string]time.Duration
	// upgrades: releases seen deployed at a revision above the baseline.
	baseline     map[string]int
	upgradedAt   map[string]time.Time
	lastUpgraded time.Time
	revisions    map[string]int // latest deployed revision per release
	// failed: releases with a revision Helm recorded as failed.
	failed map[string]bool
	// Ready: when each resource's Deployment was first seen rolled out,
	// when the resource was first seen Ready=True, and how long after its
	// child Deployment was deleted it was first seen Ready=False.
	availableAt, readyAt map[string]time.Time
	notReadyAfterDelete  map[string]time.Duration
}

func newObserver(n int) *observer {
	return &observer{n: n, createdAt: map[string]time.Time{}, deployedAt: map[string]time.Time{},
		deletedUID: map[string]types.UID{}, deletedAt: map[string]time.Time{}, recreated: map[string]time.Duration{},
		editImage: map[string]string{}, editedAt: map[string]time.Time{}, reverted: map[string]time.Duration{},
		upgradedAt: map[string]time.Time{}, revisions: map[string]int{}, failed: map[string]bool{},
		availableAt: map[string]time.Time{}, readyAt: map[string]time.Time{}, notReadyAfterDelete: map[string]time.Duration{}}
}

func (o *observer) created(name string) {
	o.mu.Lock()
	o.createdAt[name] = time.Now()
	o.mu.Unlock()
}

func (o *observer) start(ctx context.Context, rc *rest.Config, kube kubernetes.Interface, dyn dynamic.Interface) error {
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	crs := df.ForResource(nginxGVR).Informer()
	onCR := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		o.observeReady(u)
		if !isDeployed(u) {
			return
		}
		now := time.Now()
		o.mu.Lock()
		if _, seen := o.deployedAt[u.GetName()]; !seen {
			o.deployedAt[u.GetName()] = now
			o.lastDeployed = now
		}
		o.mu.Unlock()
	}
	if _, err := crs.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onCR, UpdateFunc: func(_, obj any) { onCR(obj) }}); err != nil {
		return err
	}

	kf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	deps := kf.Apps().V1().Deployments().Informer()
	if _, err := deps.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return
		}
		o.observeAvailable(d)
		o.mu.Lock()
		defer o.mu.Unlock()
		if uid, ok := o.deletedUID[d.Name]; ok && uid != d.UID {
			if _, done := o.recreated[d.Name]; !done {
				o.recreated[d.Name] = time.Since(o.deletedAt[d.Name])
			}
		}
	}, UpdateFunc: func(oldObj, obj any) {
		// A revert is the change from the hand-edited image back to the
		// chart's: an older event cannot pass for one.
		before, ok1 := oldObj.(*appsv1.Deployment)
		d, ok2 := obj.(*appsv1.Deployment)
		if ok2 {
			o.observeAvailable(d)
		}
		if !ok1 || !ok2 || firstImage(before) != handEditedImage {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		at, edited := o.editedAt[d.Name]
		if _, done := o.reverted[d.Name]; edited && !done && firstImage(d) == o.editImage[d.Name] {
			o.reverted[d.Name] = time.Since(at)
		}
	}}); err != nil {
		return err
	}
	sf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = "owner=helm" }))
	secrets := sf.Core().V1().Secrets().Informer()
	onSecret := func(obj any) {
		s, ok := obj.(*corev1.Secret)
		if ok && s.Labels["status"] == "failed" {
			o.mu.Lock()
			o.failed[s.Labels["name"]] = true
			o.mu.Unlock()
		}
		if !ok || s.Labels["status"] != "deployed" {
			return
		}
		name := s.Labels["name"]
		v, _ := strconv.Atoi(s.Labels["version"])
		now := time.Now()
		o.mu.Lock()
		defer o.mu.Unlock()
		if v > o.revisions[name] {
			o.revisions[name] = v
		}
		if b, ok := o.baseline[name]; ok && v > b {
			if _, seen := o.upgradedAt[name]; !seen {
				o.upgradedAt[name] = now
				o.lastUpgraded = now
			}
		}
	}
	if _, err := secrets.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onSecret, UpdateFunc: func(_, obj any) { onSecret(obj) }}); err != nil {
		return err
	}
	df.Start(ctx.Done())
	kf.Start(ctx.Done())
	sf.Start(ctx.Done())
	for _, ok := range []bool{
		cache.WaitForCacheSync(ctx.Done(), crs.HasSynced),
		cache.WaitForCacheSync(ctx.Done(), deps.HasSynced),
		cache.WaitForCacheSync(ctx.Done(), secrets.HasSynced),
	} {
		if !ok {
			return fmt.Errorf("informers did not sync")
		}
	}
	return nil
}

// observeAvailable records when a resource's Deployment is first seen
// rolled out: its generation observed, every replica updated and available.
func (o *observer) observeAvailable(d *appsv1.Deployment) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != want || d.Status.AvailableReplicas != want {
		return
	}
	cr := strings.TrimSuffix(d.Name, "-nginx")
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.availableAt[cr]; !seen {
		o.availableAt[cr] = time.Now()
	}
}

// observeReady records when a resource is first seen Ready=True, and how
// long after its child Deployment was deleted it is first seen not ready.
func (o *observer) observeReady(u *unstructured.Unstructured) {
	ready := conditionIs(u, "Ready", "True")
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.readyAt[u.GetName()]; ready && !seen {
		o.readyAt[u.GetName()] = now
	}
	if at, deleted := o.deletedAt[u.GetName()+"-nginx"]; deleted && !ready {
		if _, seen := o.notReadyAfterDelete[u.GetName()]; !seen {
			o.notReadyAfterDelete[u.GetName()] = now.Sub(at)
		}
	}
}

// waitReady waits, for runtimes that write Ready (one resource seen Ready
// already), until all n resources were seen Ready, at most timeout, and
// returns when the last one was; false when they were not all.
func (o *observer) waitReady(timeout time.Duration) (time.Time, bool) {
	o.mu.Lock()
	writesReady := len(o.readyAt) > 0
	o.mu.Unlock()
	if !writesReady {
		return time.Time{}, false
	}
	benchkit.PollUntil(timeout, 50*time.Millisecond, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.readyAt) >= o.n
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	var last time.Time
	for _, at := range o.readyAt {
		if at.After(last) {
			last = at
		}
	}
	return last, len(o.readyAt) >= o.n
}

// readyLags returns, per resource seen both ways, the time from its
// Deployment rolling out (or from Deployed, when that came later) to
// Ready=True.
func (o *observer) readyLags() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []time.Duration
	for name, ready := range o.readyAt {
		avail, ok1 := o.availableAt[name]
		deployed, ok2 := o.deployedAt[name]
		if !ok1 || !ok2 {
			continue
		}
		if deployed.After(avail) {
			avail = deployed
		}
		out = append(out, ready.Sub(avail))
	}
	return out
}

// conditionIs reports whether u has condition typ with status.
func conditionIs(u *unstructured.Unstructured, typ, status string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			return m["status"] == status
		}
	}
	return false
}

// isDeployed reports condition Deployed=True.
func isDeployed(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Deployed" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// waitDeployed waits until all n resources are Deployed, at most timeout,
// and returns when the last one was seen Deployed.
func (o *observer) waitDeployed(timeout time.Duration) time.Time {
	benchkit.PollUntil(timeout, 50*time.Millisecond, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.deployedAt) >= o.n
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lastDeployed
}

func (o *observer) deployLatencies() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []time.Duration
	for name, at := range o.deployedAt {
		if c, ok := o.createdAt[name]; ok {
			out = append(out, at.Sub(c))
		}
	}
	return out
}

// deleteChildren deletes the child Deployment of each named resource.
func (o *observer) deleteChildren(ctx context.Context, kube kubernetes.Interface, crNames []string) error {
	type target struct {
		name string
		uid  types.UID
	}
	var targets []target
	for _, cr := range crNames {
		name := cr + "-nginx"
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("child Deployment of %s: %w", cr, err)
		}
		targets = append(targets, target{name, d.UID})
	}
	o.mu.Lock()
	for _, t := range targets {
		o.deletedUID[t.name] = t.uid
	}
	o.mu.Unlock()
	return benchkit.Parallel(len(targets), len(targets), func(i int) error {
		t := targets[i]
		o.mu.Lock()
		o.deletedAt[t.name] = time.Now()
		o.mu.Unlock()
		return kube.AppsV1().Deployments(ns).Delete(ctx, t.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &t.uid}})
	})
}

// firstImage is the image of a Deployment's first container.
func firstImage(d *appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// handEditedImage is what editChildren sets; no chart renders it.
const handEditedImage = "registry.invalid/hand-edited:bench"

// editChildren changes the image of the child Deployments of crNames by
// hand, all at once, as a user with kubectl edit would.
func (o *observer) editChildren(ctx context.Context, kube kubernetes.Interface, crNames []string) error {
	return benchkit.Parallel(len(crNames), len(crNames), func(i int) error {
		name := crNames[i] + "-nginx"
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("child Deployment of %s: %w", crNames[i], err)
			}
			o.mu.Lock()
			o.editImage[name] = firstImage(d)
			o.editedAt[name] = time.Now()
			o.mu.Unlock()
			if len(d.Spec.Template.Spec.Containers) == 0 {
				return fmt.Errorf("child Deployment of %s has no container", crNames[i])
			}
			d.Spec.Template.Spec.Containers[0].Image = handEditedImage
			_, err = kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
			return err
		})
	})
}

// waitTimes waits until times (filled by the informers) holds want
// entries, at most timeout, and returns the durations it holds.
func (o *observer) waitTimes(times map[string]time.Duration, want int, timeout time.Duration) []time.Duration {
	benchkit.PollUntil(timeout, 50*time.Millisecond, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(times) >= want
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []time.Duration
	for _, d := range times {
		out = append(out, d)
	}
	return out
}

// expectUpgrades takes the current deployed revision of every release as
// the baseline an upgrade must exceed.
func (o *observer) expectUpgrades() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.baseline = map[string]int{}
	for name := range o.createdAt {
		o.baseline[name] = o.revisions[name]
	}
}

func (o *observer) waitUpgraded(timeout time.Duration) time.Time {
	benchkit.PollUntil(timeout, 50*time.Millisecond, func() bool { return o.upgradedCount() >= o.n })
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lastUpgraded
}

func (o *observer) upgradedCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.upgradedAt)
}

// failedCount is how many releases had a revision recorded as failed.
func (o *observer) failedCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.failed)
}

// Command admission is the admission webhook benchmark (`make
// bench-admission`), not a test: on a real API server (etcd and
// kube-apiserver from bin/k8s, through envtest) with the CRDs and the
// ValidatingWebhookConfiguration of config/webhook installed, it creates N
// Nginx resources in one burst (W clients at once) twice: once with the
// webhook configuration removed (the floor: the API server alone), once
// with bin/extensions serving the webhook. It prints the create latency
// seen by the clients (p50/p90/p99/max) of both, the webhook's own
// handling time (its controller-runtime histogram), and the sidecar's CPU
// seconds and peak RSS over the burst. A second burst of N spec edits
// (each changes the spec, so each is rendered) is timed the same way.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/acme/platform-operator/hack/bench/internal/benchkit"
	"github.com/acme/platform-operator/internal/devtools/process"
)

var nginxGVR = schema.GroupVersionResource{Group: "web.acme.com", Version: "v1alpha1", Resource: "nginxes"}

func main() {
	n := flag.Int("n", 1000, "resources created in each burst")
	workers := flag.Int("workers", 32, "clients creating at once")
	binDir := flag.String("bin-dir", "bin/k8s", "directory with etcd and kube-apiserver")
	extensions := flag.String("extensions", "bin/extensions", "the sidecar binary")
	flag.Parse()
	benchkit.StopOnInterrupt()
	if err := run(*n, *workers, *binDir, *extensions); err != nil {
		fmt.Fprintln(os.Stderr, "bench-admission:", err)
		os.Exit(1)
	}
}

func run(n, workers int, binDir, extensionsBin string) error {
	ctx := context.Background()
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     []string{filepath.Join("config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:                        []string{filepath.Join("config", "webhook", "manifests.yaml")},
			LocalServingHostExternalName: "localhost",
		},
	}
	fmt.Println("starting etcd and kube-apiserver ...")
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("envtest: %w", err)
	}
	defer benchkit.Cleanup(func() { _ = env.Stop() })()
	cfg.QPS, cfg.Burst = -1, 0 // the clients are not the bottleneck
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	for _, ns := range []string{"warmup", "floor", "webhook"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	hooks := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	vwc, err := hooks.Get(ctx, "validating-webhook-configuration", metav1.GetOptions{})
	if err != nil {
		return err
	}

	fmt.Printf("N=%d creates, %d clients at once; %s; load average %s\n", n, workers, benchkit.CPUModel(), benchkit.LoadAverage())
	if err := hooks.Delete(ctx, vwc.Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	// A first burst warms the API server up (its handlers of the CRDs,
	// etcd), so that the floor measures a warm server, as the webhook's
	// burst after it does.
	if _, err := burst(n/4, workers, func(i int) error { return create(ctx, dyn, "warmup", i) }); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	floor, err := burst(n, workers, func(i int) error { return create(ctx, dyn, "floor", i) })
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	report("creates, no webhook (floor)", floor)

	sidecar, err := startSidecar(env, extensionsBin)
	if err != nil {
		return err
	}
	defer benchkit.Cleanup(func() { _ = sidecar.Stop(10 * time.Second) })()
	vwc.ResourceVersion = ""
	if _, err := hooks.Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		return err
	}
	// Ready once a create goes through the webhook.
	probe := func() bool { return create(ctx, dyn, "webhook", -1) == nil }
	if !benchkit.PollUntil(time.Minute, 200*time.Millisecond, probe) {
		return fmt.Errorf("the webhook did not admit a create within a minute (log: %s)", sidecar.LogPath)
	}
	cpu0, _ := benchkit.ProcCPU(sidecar.Pid())
	hooked, err := burst(n, workers, func(i int) error { return create(ctx, dyn, "webhook", i) })
	if err != nil {
		return fmt.Errorf("with the webhook: %w (log: %s)", err, sidecar.LogPath)
	}
	cpu1, _ := benchkit.ProcCPU(sidecar.Pid())
	report("creates through the webhook", hooked)
	edits, err := burst(n, workers, func(i int) error { return edit(ctx, dyn, "webhook", i) })
	if err != nil {
		return fmt.Errorf("spec edits: %w (log: %s)", err, sidecar.LogPath)
	}
	cpu2, _ := benchkit.ProcCPU(sidecar.Pid())
	report("spec edits through the webhook", edits)
	count, sum, err := webhookHandling(sidecar)
	if err != nil {
		return err
	}
	rss, _ := benchkit.ProcPeakRSS(sidecar.Pid())
	fmt.Printf("webhook handling (sidecar's histogram): %.0f requests, mean %s\n", count, (time.Duration(sum / count * float64(time.Second))).Round(10*time.Microsecond))
	fmt.Printf("p99 added by the webhook to a create: %s\n", (benchkit.Percentile(hooked, 99) - benchkit.Percentile(floor, 99)).Round(100*time.Microsecond))
	fmt.Printf("sidecar: %.2f CPU-s for the creates, %.2f for the edits, peak RSS %d MiB\n", cpu1-cpu0, cpu2-cpu1, rss>>10)
	return nil
}

// burst runs f for 0..n-1 with workers at once and returns each call's
// duration, sorted.
func burst(n, workers int, f func(i int) error) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	err := benchkit.Parallel(n, workers, func(i int) error {
		start := time.Now()
		err := f(i)
		lat[i] = time.Since(start)
		return err
	})
	return benchkit.Sorted(lat), err
}

func report(what string, lat []time.Duration) {
	fmt.Printf("%-32s p50 %7s  p90 %7s  p99 %7s  max %7s\n", what,
		benchkit.Percentile(lat, 50).Round(100*time.Microsecond), benchkit.Percentile(lat, 90).Round(100*time.Microsecond),
		benchkit.Percentile(lat, 99).Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond))
}

// create creates Nginx web-i (i < 0: a probe with a fresh name).
func create(ctx context.Context, dyn dynamic.Interface, ns string, i int) error {
	name := "web-" + strconv.Itoa(i)
	if i < 0 {
		name = "probe-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "web.acme.com/v1alpha1", "kind": "Nginx",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"replicaCount": int64(2), "service": map[string]any{"type": "ClusterIP"}},
	}}
	_, err := dyn.Resource(nginxGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	return err
}

// edit changes the spec of Nginx web-i, so that the webhook renders it.
func edit(ctx context.Context, dyn dynamic.Interface, ns string, i int) error {
	patch := []byte(`{"spec":{"replicaCount":3}}`)
	_, err := dyn.Resource(nginxGVR).Namespace(ns).Patch(ctx, "web-"+strconv.Itoa(i), "application/merge-patch+json", patch, metav1.PatchOptions{})
	return err
}

// startSidecar runs bin/extensions with only its webhook to speak of (no
// leader election), on envtest's serving address and certificate.
func startSidecar(env *envtest.Environment, bin string) (*process.Process, error) {
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, &rest.Config{})
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-admission-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	metrics, err := process.FreeAddr()
	if err != nil {
		return nil, err
	}
	w := env.WebhookInstallOptions
	cmd := exec.Command(bin,
		"--leader-elect=false",
		"--metrics-bind-address", metrics, "--metrics-secure=false",
		"--health-probe-bind-address=0",
		"--watches-file", "watches.yaml",
		"--release-namespace", "platform-operator-system",
		"--admission-port", strconv.Itoa(w.LocalServingPort),
		"--admission-host", w.LocalServingHost,
		"--admission-certs", "provided",
		"--admission-cert-dir", w.LocalServingCertDir,
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+path)
	return process.Start("extensions", cmd, metrics, filepath.Join(dir, "extensions.log"), 30*time.Second)
}

// webhookHandling is the count and total seconds of the webhook's
// requests, from controller-runtime's histogram.
func webhookHandling(p *process.Process) (count, sum float64, err error) {
	families, err := p.Metrics()
	if err != nil {
		return 0, 0, err
	}
	f, ok := families["controller_runtime_webhook_latency_seconds"]
	if !ok {
		return 0, 0, fmt.Errorf("the sidecar has no controller_runtime_webhook_latency_seconds")
	}
	for _, m := range f.GetMetric() {
		count += float64(m.GetHistogram().GetSampleCount())
		sum += m.GetHistogram().GetSampleSum()
	}
	if count == 0 {
		return 0, 0, fmt.Errorf("the webhook handled no request")
	}
	return count, sum, nil
}

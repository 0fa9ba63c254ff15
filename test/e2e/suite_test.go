// Package e2e runs the operator the way a user does: the manager and
// extensions binaries as processes, on a full local cluster (etcd, kube-apiserver with RBAC,
// kube-controller-manager, kube-scheduler, kwok) that the suite starts and
// stops, driven with kubectl.
//
// Run it with `make test-e2e`, which builds bin/manager and the cluster
// binaries first.
package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/localcluster"
	"github.com/acme/platform-operator/internal/devtools/process"
	"github.com/acme/platform-operator/internal/operator/apikinds"
	"github.com/acme/platform-operator/test/testkit"
)

// The operator's namespace and ServiceAccount as config/default names them.
const (
	operatorNamespace      = "platform-operator-system"
	operatorServiceAccount = "platform-operator-controller-manager"
	// releaseServiceAccount is what the runtimes under test apply the
	// releases of namespaced kinds as, as config/manager sets it: the
	// shipped ClusterRole only reads what those charts render.
	releaseServiceAccount = "platform-operator-release"
)

// env is what every test in the suite shares.
var env struct {
	// The cluster as the tests drive it: the repository root, kubectl and
	// the admin kubeconfig, a client.
	*testkit.Kube
	// manager is the Helm runtime; extensions is the Go sidecar. Tests may
	// stop and start either (e.g. to test a restart).
	manager    *operatorProcess
	extensions *operatorProcess
	// cluster is the local control plane; reliability tests stop and
	// start its processes.
	cluster *localcluster.Cluster
	// conversion is how the API server reaches the suite's sidecar for
	// CRD conversions (see run).
	conversion conversionWebhook
}

// conversionWebhook is the sidecar's webhook server as the suite runs it,
// on loopback, and the CRDs that convert through it.
type conversionWebhook struct {
	address  string
	caPEM    []byte
	crdFiles []string
}

// useSuiteConversionWebhook points the converted CRDs at the suite's
// sidecar again, after a test pointed them elsewhere (make run does).
func useSuiteConversionWebhook() error {
	c := env.conversion
	return localcluster.ApplyConversion(context.Background(), env.cluster.Kubeconfig, c.address, c.caPEM, c.crdFiles)
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	binDir := os.Getenv("KUBEBUILDER_ASSETS")
	if binDir == "" {
		binDir = filepath.Join(root, "bin", "k8s")
	}
	kubectlPath := filepath.Join(binDir, "kubectl")
	managerBin := filepath.Join(root, "bin", "manager")
	extensionsBin := filepath.Join(root, "bin", "extensions")
	for _, f := range []string{kubectlPath, managerBin, extensionsBin, filepath.Join(binDir, "kube-apiserver")} {
		if _, err := os.Stat(f); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %s is missing; run `make test-e2e` (it builds the binaries)\n", f)
			return 1
		}
	}

	stateDir, err := os.MkdirTemp("", "platform-operator-e2e-")
	if err != nil {
		panic(err)
	}
	stages, err := localcluster.KwokStages(filepath.Join(root, "hack", "kwok"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx := context.Background()
	start := time.Now()
	// The tests share the cluster: TestChartRolloutInWaves's 200 releases
	// and the others' Pods need more than one fake node's 250.
	cluster, err := localcluster.Up(ctx, localcluster.Config{
		BinDir: binDir, StateDir: stateDir, KwokStages: stages, Log: os.Stderr, Nodes: 3,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the local cluster:", err)
		return 1
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the local cluster:", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "e2e: local cluster up in %s\n", time.Since(start).Round(time.Millisecond))
	env.cluster = cluster

	env.Kube, err = testkit.New(root, kubectlPath, cluster.Kubeconfig)
	if err != nil {
		panic(err)
	}

	// Install the operator as `make deploy` does (CRDs, namespace, RBAC,
	// Deployment; the Deployment's pods are fake on kwok). The processes
	// under test then run as its ServiceAccount with exactly the shipped
	// ClusterRole and Roles, so a missing permission fails the tests.
	if out, err := env.Kubectl("apply", "--server-side", "-k", filepath.Join(root, "config", "default")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: applying config/default:", err, out)
		return 1
	}
	// The processes under test run outside the cluster, where the API
	// server cannot call the sidecar's webhook through its Service; and
	// these tests are about what the operator itself does with resources
	// the webhook did not see (it was down, or they predate it). So the
	// webhook configuration goes; the webhook is tested by
	// extensions/internal/admission on an API server and by test/real and
	// test/olm from the operator Pod.
	if out, err := env.Kubectl("delete", "validatingwebhookconfiguration", "platform-operator-validating-webhook-configuration"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: removing the webhook configuration:", err, out)
		return 1
	}
	// A kind with a second version (WebApp v1beta1) is read through the
	// sidecar's conversion webhook whenever it is asked for in the version
	// it is not stored in: v1beta1 is the preferred version, so kubectl get
	// webapps and every unversioned client need it, in every test. Its CRD
	// calls the sidecar's Service, which the API server cannot reach for a
	// process on this machine; so, for this suite only, the sidecar serves
	// its webhook server on loopback with a certificate the suite issues,
	// and those CRDs call it by URL with that CA (in a cluster the sidecar
	// is called through its Service and injects its CA itself; test/real,
	// test/olm). Only the conversion webhook is called: the admission
	// webhook's configuration is gone (above).
	webhookAddr, err := process.FreeAddr()
	if err != nil {
		panic(err)
	}
	_, webhookPort, _ := net.SplitHostPort(webhookAddr)
	webhookCertDir, caPEM, err := localcluster.WebhookCerts(stateDir, webhookAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the webhook's certificates:", err)
		return 1
	}
	kinds, err := apikinds.LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	var convertedCRDs []string
	for _, k := range kinds {
		if len(k.Versions) > 0 {
			convertedCRDs = append(convertedCRDs, filepath.Join(root, "config", "crd", "bases", k.FileName()))
		}
	}
	env.conversion = conversionWebhook{address: webhookAddr, caPEM: caPEM, crdFiles: convertedCRDs}
	if err := useSuiteConversionWebhook(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if out, err := env.Kubectl("wait", "--for", "condition=Established", "--timeout=60s", "-f", filepath.Join(root, "config", "crd", "bases")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: waiting for CRDs:", err, out)
		return 1
	}
	operatorKubeconfig, err := serviceAccountKubeconfig(operatorNamespace, operatorServiceAccount, stateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: kubeconfig of the operator's ServiceAccount:", err)
		return 1
	}

	logDir, err := os.MkdirTemp("", "platform-operator-e2e-logs-")
	if err != nil {
		panic(err)
	}
	// The logs are kept when the suite fails, and removed (after the
	// processes below have stopped) when it passes.
	keepLogs := true
	defer func() {
		if !keepLogs {
			_ = os.RemoveAll(logDir)
		}
	}()
	leaderElection := []string{"--leader-elect", "--leader-election-namespace", operatorNamespace}
	env.manager = &operatorProcess{
		name: "manager", bin: managerBin, logPath: filepath.Join(logDir, "manager.log"),
		kubeconfig: operatorKubeconfig,
		fixedArgs:  append([]string{"--watches-file", "watches.yaml", "--release-service-account", releaseServiceAccount}, leaderElection...),
	}
	env.extensions = &operatorProcess{
		name: "extensions", bin: extensionsBin, logPath: filepath.Join(logDir, "extensions.log"),
		kubeconfig: operatorKubeconfig,
		fixedArgs: append([]string{
			"--admission-port", webhookPort, "--admission-host", "127.0.0.1",
			"--admission-certs", "provided", "--admission-cert-dir", webhookCertDir,
			"--release-service-account", releaseServiceAccount,
		}, leaderElection...),
	}
	for _, p := range []*operatorProcess{env.manager, env.extensions} {
		if err := p.start(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: starting the %s: %v\n", p.name, err)
			return 1
		}
		defer func() { _ = p.stop() }()
	}

	code := m.Run()
	keepLogs = code != 0
	if code != 0 {
		// The cluster's state dir goes with Stop; keep its component logs
		// (kube-controller-manager, kwok, ...) next to the operator's.
		if err := os.CopyFS(filepath.Join(logDir, "cluster"), os.DirFS(filepath.Join(stateDir, "logs"))); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: keeping the cluster's logs:", err)
		}
		fmt.Fprintf(os.Stderr, "e2e: logs of the operator's processes and the cluster: %s\n", logDir)
	}
	return code
}

// operatorProcess is one of the operator's binaries, run as a process as
// the operator's ServiceAccount, in the operator's namespace (POD_NAMESPACE),
// with plain-HTTP metrics on a free loopback port and readable logs
// appended to logPath.
type operatorProcess struct {
	name, bin, logPath string
	kubeconfig         string
	fixedArgs          []string // flags the suite sets
	args               []string // extra flags a test may set between stop and start
	env                []string // extra environment a test may set between stop and start
	dir                string   // working directory; the repository root when empty
	proc               *process.Process
}

func (p *operatorProcess) start() error {
	metricsAddr, err := process.FreeAddr()
	if err != nil {
		return err
	}
	probeAddr, err := process.FreeAddr()
	if err != nil {
		return err
	}
	args := append([]string{
		"--metrics-bind-address", metricsAddr,
		"--metrics-secure=false",
		"--health-probe-bind-address", probeAddr,
		"--zap-devel",
	}, p.fixedArgs...)
	cmd := exec.Command(p.bin, append(args, p.args...)...)
	cmd.Dir = env.Root
	if p.dir != "" {
		cmd.Dir = p.dir
	}
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig, "POD_NAMESPACE="+operatorNamespace)
	cmd.Env = append(cmd.Env, p.env...)
	p.proc, err = process.Start(p.name, cmd, metricsAddr, p.logPath, 60*time.Second)
	return err
}

// stop sends SIGTERM and waits for a clean exit.
func (p *operatorProcess) stop() error {
	if p.proc == nil {
		return nil
	}
	err := p.proc.Stop(60 * time.Second)
	p.proc = nil
	return err
}

// metric returns the sum of the samples of a Prometheus metric whose
// labels include every labels entry ("name=value").
func (p *operatorProcess) metric(name string, labels ...string) (float64, error) {
	if p.proc == nil {
		return 0, fmt.Errorf("%s is not running", p.name)
	}
	return p.proc.Metric(name, labels...)
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount with a token from the TokenRequest API.
func serviceAccountKubeconfig(namespace, name, dir string) (string, error) {
	return serviceAccountKubeconfigFile(namespace, name, filepath.Join(dir, "operator.kubeconfig"))
}

// serviceAccountKubeconfigFile is serviceAccountKubeconfig writing to path.
func serviceAccountKubeconfigFile(namespace, name, path string) (string, error) {
	cmd := exec.Command(env.KubectlPath, "create", "token", name, "-n", namespace, "--duration=24h")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	token, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("kubectl create token: %w", err)
	}
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, ai := range cfg.AuthInfos {
		ai.Token = strings.TrimSpace(string(token))
	}
	return path, clientcmd.WriteToFile(*cfg, path)
}

// rolloutSummary describes where a Deployment's rollout stands: its status
// and each of its pods' phase, readiness and deletion, for failure messages.
func rolloutSummary(ctx context.Context, d *appsv1.Deployment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "deployment %s/%s generation %d status %+v\n", d.Namespace, d.Name, d.Generation, d.Status)
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		fmt.Fprintf(&b, "listing pods: %v\n", err)
		return b.String()
	}
	for _, p := range pods.Items {
		ready := "unknown"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = string(c.Status)
			}
		}
		fmt.Fprintf(&b, "pod %s node %q phase %s ready %s deleting %v\n", p.Name, p.Spec.NodeName, p.Status.Phase, ready, p.DeletionTimestamp != nil)
	}
	return b.String()
}

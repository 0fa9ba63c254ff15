// Package localcluster runs a small but real Kubernetes control plane on
// loopback from binaries built from source: etcd, kube-apiserver (RBAC on),
// kube-controller-manager, kube-scheduler and kwok, which plays the kubelet
// for fake Nodes so that Pods become Running and Deployments Available.
//
// Everything a cluster owns lives in one state directory: credentials, the
// etcd data, one log file per process, the process ids and the admin
// kubeconfig. Down stops the processes recorded there and removes it.
package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// serviceCIDR is the cluster's Service IP range; serviceIP is the
	// first address in it, taken by the kubernetes Service.
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"

	// adminToken authenticates the admin user (group system:masters). The
	// cluster listens on loopback only and lives for one session.
	adminToken = "platform-operator-local-admin"

	// KubeconfigFile is the admin kubeconfig's name inside the state dir.
	KubeconfigFile = "kubeconfig"
	pidFile        = "pids"
)

// Config says where the binaries are and where the cluster keeps its state.
type Config struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok.
	BinDir string
	// StateDir is created if needed and removed by Down.
	StateDir string
	// KwokStages are kwok Stage files (node initialisation, pod readiness).
	// Without them kwok refuses to start. Empty means no kwok and no Nodes.
	KwokStages []string
	// Nodes is the number of fake Nodes to register (default 1).
	Nodes int
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Cluster is a running local control plane.
type Cluster struct {
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string
	// Server is the API server URL.
	Server string
	// Reused is true when Up found a healthy cluster and started nothing.
	Reused bool

	stateDir string
	binDir   string
}

// Stop stops every process of the cluster and removes its state.
func (c *Cluster) Stop() error { return Down(c.stateDir) }

// Up starts a cluster in cfg.StateDir, or returns the one already running
// there when it answers. Leftovers of a cluster that no longer answers are
// cleaned up first. The processes keep running after Up returns, in process
// groups of their own, until Down.
func Up(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 1
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	stateDir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	// The processes run in the state dir: a relative BinDir would not
	// resolve there.
	if cfg.BinDir, err = filepath.Abs(cfg.BinDir); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(stateDir, KubeconfigFile)

	if server, err := serverFromKubeconfig(kubeconfig); err == nil {
		if ready(ctx, server, filepath.Join(stateDir, "ca.crt")) == nil {
			return &Cluster{Kubeconfig: kubeconfig, Server: server, Reused: true, stateDir: stateDir, binDir: cfg.BinDir}, nil
		}
	}
	if err := Down(stateDir); err != nil {
		return nil, fmt.Errorf("cleaning up a stale cluster: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(stateDir, "logs"), 0o755); err != nil {
		return nil, err
	}

	c := &Cluster{Kubeconfig: kubeconfig, stateDir: stateDir, binDir: cfg.BinDir}
	ok := false
	defer func() {
		if !ok {
			_ = Down(stateDir)
		}
	}()

	creds, err := writeCredentials(stateDir)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort, kwokPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	tokens := filepath.Join(stateDir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+",admin,admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	if err := writeKubeconfig(kubeconfig, c.Server, creds.caCert, adminToken); err != nil {
		return nil, err
	}

	p := procs{binDir: cfg.BinDir, stateDir: stateDir}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	fmt.Fprintf(logw, "starting etcd on %s\n", etcdURL)
	if err := p.start("etcd",
		"--name=local",
		"--data-dir="+filepath.Join(stateDir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=local="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	); err != nil {
		return nil, err
	}

	fmt.Fprintf(logw, "starting kube-apiserver on %s\n", c.Server)
	if err := p.start("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(apiPort),
		"--tls-cert-file="+creds.serverCert,
		"--tls-private-key-file="+creds.serverKey,
		"--token-auth-file="+tokens,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+creds.saPub,
		"--service-account-signing-key-file="+creds.saKey,
		"--service-cluster-ip-range="+serviceCIDR,
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, 60*time.Second, func() error { return ready(ctx, c.Server, creds.caCert) }); err != nil {
		return nil, fmt.Errorf("kube-apiserver did not become ready (see %s): %w", p.logPath("kube-apiserver"), err)
	}

	fmt.Fprintln(logw, "starting kube-controller-manager and kube-scheduler")
	if err := p.start("kube-controller-manager",
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(kcmPort),
		"--leader-elect=false",
		"--service-account-private-key-file="+creds.saKey,
		"--root-ca-file="+creds.caCert,
		"--service-cluster-ip-range="+serviceCIDR,
		"--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle",
		"--profiling=false",
	); err != nil {
		return nil, err
	}
	if err := p.start("kube-scheduler",
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(schedPort),
		"--leader-elect=false",
		"--profiling=false",
	); err != nil {
		return nil, err
	}

	if len(cfg.KwokStages) > 0 {
		fmt.Fprintf(logw, "starting kwok with %d fake node(s)\n", cfg.Nodes)
		args := []string{
			"--kubeconfig=" + kubeconfig,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + fakeNodeAnnotation + "=fake",
			"--server-address=127.0.0.1:" + strconv.Itoa(kwokPort),
		}
		for _, s := range cfg.KwokStages {
			args = append(args, "--config="+s)
		}
		if err := p.start("kwok", args...); err != nil {
			return nil, err
		}
	}

	if err := bootstrap(ctx, kubeconfig, cfg.Nodes, len(cfg.KwokStages) > 0); err != nil {
		return nil, fmt.Errorf("bootstrapping cluster (logs in %s): %w", filepath.Join(stateDir, "logs"), err)
	}
	ok = true
	return c, nil
}

// Down stops the processes recorded in stateDir and removes the directory.
// It is a no-op when there is nothing to stop.
func Down(stateDir string) error {
	data, err := os.ReadFile(filepath.Join(stateDir, pidFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var pids []int
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		if pid, err := strconv.Atoi(fields[1]); err == nil {
			pids = append(pids, pid)
		}
	}
	// Stop in reverse start order: etcd goes last.
	for i := len(pids) - 1; i >= 0; i-- {
		stopProcess(pids[i])
	}
	return os.RemoveAll(stateDir)
}

// stopProcess sends SIGTERM to the process group, then SIGKILL if it is
// still there after a few seconds.
func stopProcess(pid int) {
	if syscall.Kill(-pid, syscall.SIGTERM) != nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// procs starts the cluster's processes and records their ids.
type procs struct {
	binDir, stateDir string
}

func (p procs) logPath(name string) string {
	return filepath.Join(p.stateDir, "logs", name+".log")
}

func (p procs) start(name string, args ...string) error {
	bin := filepath.Join(p.binDir, name)
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s not found in %s (build it with make cluster-binaries): %w", name, p.binDir, err)
	}
	logf, err := os.Create(p.logPath(name))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Dir = p.stateDir
	// A process group of its own: a Ctrl-C aimed at whoever started the
	// cluster does not reach it, and Down can stop it with its children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	f, err := os.OpenFile(filepath.Join(p.stateDir, pidFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s %d\n", name, cmd.Process.Pid); err != nil {
		return err
	}
	if err := p.saveArgs(name, args); err != nil { // for StartProcess
		return err
	}
	// Reap the child when it exits while this process is still alive.
	go func() { _ = cmd.Wait() }()
	return nil
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ready returns nil when the API server answers /readyz with 200.
func ready(ctx context.Context, server, caFile string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{
		Timeout:   3 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/readyz", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// waitFor polls f every 200ms until it returns nil or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = f(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Package localcluster runs a small but real Kubernetes control plane on
// loopback from binaries built from source: etcd, kube-apiserver (RBAC on),
// kube-controller-manager, kube-scheduler and kwok, which plays the kubelet
// for fake Nodes so that Pods become Running and Deployments Available. A
// hostPath provisioner (package hostpath) serves the default StorageClass.
//
// With Config.RealNode there is no kwok: one real node runs Pods in
// containers on this machine (node.go says what it is made of).
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
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acme/platform-operator/internal/devtools/localcluster/hostpath"
	"github.com/acme/platform-operator/internal/devtools/process"
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
	// RealNode replaces kwok's fake Nodes with one real node: containerd,
	// kubelet, CNI bridge, kube-proxy, CoreDNS and an image registry (see
	// node.go). It needs root, the packages of hack/install-node-deps.sh
	// and kubelet, kube-proxy, coredns and pause in BinDir (make
	// node-binaries). The API server then listens on NodeIP, not loopback.
	RealNode bool
	// AuditLog, when set, is the file the API server writes its audit log
	// to: one JSON line per request at the Metadata level (user, user
	// agent, verb, resource, response code, when), no bodies. The
	// benchmarks itemise a client's requests from it. Writing it costs
	// the API server CPU: times measured with it are not comparable.
	AuditLog string
	// Profiling makes the API server serve /debug/pprof (to system:masters
	// only, as any non-resource URL without a role): the benchmarks take
	// its CPU profiles. Off, as in production, unless set.
	Profiling bool
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
	// Registry is the image registry the real node pulls from
	// (RegistryAddress, plain http); empty without a real node.
	Registry string
	// RegistryCA is the CA file a client of the registry's HTTPS listener
	// (RegistryTLSAddress) trusts; empty without a real node.
	RegistryCA string
	// StorageClass is the default StorageClass; PVCs of it bind to hostPath
	// volumes in the state dir. Empty when BinDir has no localcluster
	// binary to run the provisioner.
	StorageClass string

	stateDir string
	binDir   string
}

// Stop stops every process of the cluster and removes its state.
func (c *Cluster) Stop() error { return Down(c.stateDir) }

// LogTail returns the last n lines of the log of the cluster's process
// name ("kube-apiserver", "kube-proxy", "kube-router", "kubelet", ...), for
// a report of what went wrong.
func (c *Cluster) LogTail(name string, n int) string {
	return logTail(procs{stateDir: c.stateDir}.logPath(name), n)
}

// logTail returns the last n lines of the file at path, or why it cannot.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

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
			_, nodeErr := readNodeState(stateDir)
			if hasNode := nodeErr == nil; hasNode != cfg.RealNode {
				return nil, fmt.Errorf("a cluster runs in %s with real node %v; stop it first (make cluster-down)", stateDir, hasNode)
			}
			c := &Cluster{Kubeconfig: kubeconfig, Server: server, Reused: true, stateDir: stateDir, binDir: cfg.BinDir}
			if cfg.RealNode {
				c.Registry, c.RegistryCA = RegistryAddress, filepath.Join(stateDir, RegistryCA)
			}
			if _, err := c.Pid("provisioner"); err == nil {
				c.StorageClass = hostpath.StorageClassName
			}
			return c, nil
		}
	}
	if cfg.RealNode {
		if err := checkNodeHost(cfg.BinDir); err != nil {
			return nil, err
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
	ports, err := process.FreePorts(6)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort, kwokPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	apiAddress := "127.0.0.1"
	if cfg.RealNode {
		// Pods reach the API server through the kubernetes Service, whose
		// endpoint is the advertised address: it must not be loopback.
		apiAddress = NodeIP
		// NetworkPolicies are enforced on the real node, and the ones
		// that admit traffic to the API server name its port, as clusters
		// serve it (OLM's allow egress to 6443 only). The bridge's address
		// is this cluster's alone, so the port is free.
		apiPort = RealNodeAPIPort
		fmt.Fprintf(logw, "creating the node bridge %s with %s\n", nodeBridge, NodeIP)
		if err := setUpNodeNetwork(stateDir, cfg.BinDir, filepath.Join(stateDir, "containerd", "containerd.sock")); err != nil {
			return nil, err
		}
	}
	c.Server = fmt.Sprintf("https://%s:%d", apiAddress, apiPort)

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
		// 8 GiB, etcd's largest recommended, not its 2 GiB default: ten
		// thousand releases upgraded once fill 2 GiB (docs/benchmarks.md).
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	); err != nil {
		return nil, err
	}

	fmt.Fprintf(logw, "starting kube-apiserver on %s\n", c.Server)
	audit, err := auditArgs(stateDir, cfg.AuditLog)
	if err != nil {
		return nil, err
	}
	if err := p.start("kube-apiserver", append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + apiAddress,
		"--advertise-address=" + apiAddress,
		"--kubelet-preferred-address-types=InternalIP",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--tls-cert-file=" + creds.serverCert,
		"--tls-private-key-file=" + creds.serverKey,
		"--token-auth-file=" + tokens,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + creds.saPub,
		"--service-account-signing-key-file=" + creds.saKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=" + strconv.FormatBool(cfg.Profiling),
		// The aggregation layer, for APIServices served from Pods (OLM's
		// packageserver). Requests go straight to the endpoints' Pod IPs,
		// which the host reaches over the node bridge.
		"--requestheader-client-ca-file=" + creds.frontProxyCA,
		"--requestheader-allowed-names=" + frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + creds.proxyClient,
		"--proxy-client-key-file=" + creds.proxyClientKy,
		"--enable-aggregator-routing=true",
	}, audit...)...); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, 60*time.Second, func() error { return ready(ctx, c.Server, creds.caCert) }); err != nil {
		return nil, fmt.Errorf("kube-apiserver did not become ready (see %s): %w", p.logPath("kube-apiserver"), err)
	}

	withKwok := len(cfg.KwokStages) > 0 && !cfg.RealNode
	fmt.Fprintln(logw, "starting kube-controller-manager and kube-scheduler")
	kcmArgs := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--leader-elect=false",
		"--service-account-private-key-file=" + creds.saKey,
		"--root-ca-file=" + creds.caCert,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle",
		"--profiling=false",
	}
	if withKwok {
		// kwok's stages make fake Nodes Ready but send no heartbeats, so
		// after the default grace period (50 s) the node lifecycle
		// controller marks each Node NotReady, and with it the Ready
		// condition of every Pod on it; kwok makes the Node Ready again,
		// but never those Pods, which no kubelet will ever report on. A
		// Deployment rolled out at that moment then stays unavailable.
		kcmArgs = append(kcmArgs, "--node-monitor-grace-period=24h")
	}
	if err := p.start("kube-controller-manager", kcmArgs...); err != nil {
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

	if withKwok {
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

	if cfg.RealNode {
		if err := startNode(ctx, p, kubeconfig, logw); err != nil {
			return nil, fmt.Errorf("starting the real node (logs in %s): %w", filepath.Join(stateDir, "logs"), err)
		}
		c.Registry, c.RegistryCA = RegistryAddress, filepath.Join(stateDir, RegistryCA)
	}

	if _, err := os.Stat(filepath.Join(cfg.BinDir, "localcluster")); err == nil {
		fmt.Fprintf(logw, "starting the hostPath provisioner (default StorageClass %s)\n", hostpath.StorageClassName)
		if err := p.start("provisioner", "--kubeconfig="+kubeconfig, "--dir="+filepath.Join(stateDir, "volumes")); err != nil {
			return nil, err
		}
		c.StorageClass = hostpath.StorageClassName
	} else {
		fmt.Fprintf(logw, "no %s: no default StorageClass (build it with make cluster-binaries)\n", filepath.Join(cfg.BinDir, "localcluster"))
	}

	if err := bootstrap(ctx, kubeconfig, cfg.Nodes, withKwok, cfg.RealNode); err != nil {
		return nil, fmt.Errorf("bootstrapping cluster (logs in %s): %w", filepath.Join(stateDir, "logs"), err)
	}
	ok = true
	return c, nil
}

// Down stops the processes recorded in stateDir and removes the directory.
// With a real node it also kills the containers, unmounts what the node
// mounted under stateDir and removes its bridge and iptables chains. It is
// a no-op when there is nothing to stop.
func Down(stateDir string) error {
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(stateDir, pidFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	type proc struct {
		name string
		pid  int
	}
	var ps []proc
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		if pid, err := strconv.Atoi(fields[1]); err == nil {
			ps = append(ps, proc{fields[0], pid})
		}
	}
	node, nodeErr := readNodeState(stateDir)
	hasNode := nodeErr == nil
	// Stop in reverse start order: etcd goes last. The kubelet stops before
	// containerd, so the containers can be killed while containerd runs
	// and are not restarted.
	for i := len(ps) - 1; i >= 0; i-- {
		if hasNode && ps[i].name == "containerd" {
			node.stopContainers()
		}
		stopProcess(ps[i].pid)
	}
	if hasNode {
		if err := node.cleanUp(stateDir); err != nil {
			return fmt.Errorf("cleaning up the real node: %w", err)
		}
	}
	// Never remove through a mount: a hostPath or bind mount would take
	// files outside the state dir with it.
	if ms := mountsUnder(stateDir); len(ms) > 0 {
		return fmt.Errorf("not removing %s: still mounted: %s", stateDir, strings.Join(ms, ", "))
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

// binary is the executable and leading arguments of the cluster process
// name: Debian's for the real node's packages, the localcluster command for
// the provisioner, the bin dir's otherwise.
func (p procs) binary(name string) (string, []string) {
	switch name {
	case "containerd":
		return "/usr/bin/containerd", nil
	case "docker-registry", "registry-tls":
		return "/usr/bin/docker-registry", nil
	case "provisioner":
		return filepath.Join(p.binDir, "localcluster"), []string{"provisioner"}
	}
	return filepath.Join(p.binDir, name), nil
}

func (p procs) start(name string, args ...string) error {
	bin, lead := p.binary(name)
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s not found (build it with make cluster-binaries, or make node-deps node-binaries for a real node): %w", bin, err)
	}
	logf, err := os.Create(p.logPath(name))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, append(lead, args...)...)
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
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// auditPolicy logs every request once, when its response is complete, at
// the Metadata level.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
`

// auditArgs are the API server's flags that write its audit log to path
// (Config.AuditLog); none when path is empty.
func auditArgs(stateDir, path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	policy := filepath.Join(stateDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + path,
		"--audit-log-format=json",
		"--audit-log-maxsize=100000", // MB: not rotated within a run, which reads it whole
	}, nil
}

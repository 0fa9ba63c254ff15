package localcluster

// The real node (Config.RealNode, `make cluster-up NODES=real`): Pods run
// real containers on this machine. Everything but Debian's packages
// (hack/install-node-deps.sh) is the project's own, configured from here,
// and lives in the cluster's state dir:
//
//	node/bridge        localcluster0, 10.244.0.1/24: the node IP, the API
//	                   server's (port 6443) and CoreDNS's address, the
//	                   Pods' gateway; the Service range is routed to it
//	registry           Debian's docker-registry on 127.0.0.1:5000, storage
//	                   in registry/; containerd pulls from it over http
//	containerd         own config, root, state and socket in containerd/;
//	                   CRI with cgroupfs and restrict_oom_score_adj (this
//	                   VM lacks CAP_SYS_RESOURCE); the sandbox image is the
//	                   project's pause program, imported, never pulled
//	CNI                bridge + host-local (10.244.0.0/24) + portmap +
//	                   firewall, config in cni/; Pods may not send traffic
//	                   off the bridge (LOCALCLUSTER-FORWARD)
//	kubelet            root dir kubelet/, cgroupfs, DNS = CoreDNS
//	kube-proxy         iptables mode, NodePorts on the node IP only
//	coredns            10.244.0.1:53, kubernetes plugin, cluster.local only
//	kube-router        its network policy controller only (no routing, no
//	                   proxy, no CNI): NetworkPolicies enforced with
//	                   iptables chains (KUBE-ROUTER-*, KUBE-POD-FW-*,
//	                   KUBE-NWPLCY-*) and ipsets (KUBE-SRC-*, KUBE-DST-*)
//	                   on the bridge's traffic; health and metrics off
//
// Down undoes all of it: containers killed, mounts under the state dir
// unmounted, KUBE-*, CNI-* and LOCALCLUSTER-* chains removed, the bridge
// deleted, ipsets destroyed, ip_forward restored.
//
// Why kube-router and not kube-network-policies (kind's enforcer): the
// latter queues packets with nftables' queue expression, which needs a
// kernel built with CONFIG_NFT_QUEUE; kube-router needs only iptables
// (physdev, mark, comment, set matches), ipset and REJECT, which kernels
// with br_netfilter have. checkNodeHost says which is missing.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acme/platform-operator/internal/devtools/process"
)

const (
	// NodeIP is the real node's address: the bridge's, the API server's,
	// CoreDNS's.
	NodeIP = "10.244.0.1"
	// RealNodeAPIPort is the API server's port with a real node, on
	// NodeIP: the port kubeadm clusters use.
	RealNodeAPIPort = 6443
	// NodeName is the real node's Node name.
	NodeName = "local-node"
	// RegistryAddress is the real node's image registry (plain http).
	// Images pushed as RegistryAddress/<name>:<tag> (or localhost:5000/...)
	// are pulled by the node from it.
	RegistryAddress = "127.0.0.1:5000"
	// RegistryTLSAddress serves the same registry over HTTPS, with a
	// certificate of the cluster's CA (RegistryCA under the state dir), for
	// clients that speak nothing else: operator-sdk reads an index image's
	// labels over HTTPS only. The node pulls localhost:5443/... through
	// RegistryAddress, so both names reach the same images.
	RegistryTLSAddress = "127.0.0.1:5443"
	// RegistryCA is the file, relative to the state dir, that a client of
	// RegistryTLSAddress trusts (e.g. SSL_CERT_FILE for operator-sdk).
	RegistryCA = "ca.crt"

	podCIDR      = "10.244.0.0/24"
	nodeBridge   = "localcluster0"
	cniNetwork   = "localcluster"
	forwardChain = "LOCALCLUSTER-FORWARD"
	// pauseImage is the sandbox image; a name no registry serves, so it is
	// never pulled.
	pauseImage = "localcluster.local/pause:v1"
	nodeFile   = "node.json"
)

// nodeState is what Down needs to undo a real node; written before the
// node is set up, so a half-started node is cleaned up too.
type nodeState struct {
	BinDir           string `json:"binDir"`
	ContainerdSocket string `json:"containerdSocket"`
	Bridge           string `json:"bridge"`
	IPForward        string `json:"ipForward"` // value before Up, restored by Down
}

func readNodeState(stateDir string) (nodeState, error) {
	var n nodeState
	b, err := os.ReadFile(filepath.Join(stateDir, nodeFile))
	if err != nil {
		return n, err
	}
	return n, json.Unmarshal(b, &n)
}

// checkNodeHost fails early, with what to do, when the machine cannot run a
// real node.
func checkNodeHost(binDir string) error {
	if os.Geteuid() != 0 {
		return errors.New("a real node needs root")
	}
	for _, b := range []string{"/usr/bin/containerd", "/usr/bin/ctr", "/usr/sbin/runc", "/usr/bin/docker-registry", "/usr/lib/cni/bridge", "/usr/lib/cni/firewall", "/usr/sbin/iptables", "/usr/sbin/conntrack", "/usr/sbin/ipset"} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s missing (run make node-deps): %w", b, err)
		}
	}
	for _, b := range []string{"kubelet", "kube-proxy", "coredns", "kube-router", "pause"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("%s missing in %s (run make node-binaries): %w", b, binDir, err)
		}
	}
	return nil
}

// setUpNodeNetwork creates the bridge with the node IP and routes the
// Service range to it. It runs before the API server, which binds the node
// IP.
func setUpNodeNetwork(stateDir, binDir, containerdSocket string) error {
	fwd, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	st := nodeState{BinDir: binDir, ContainerdSocket: containerdSocket, Bridge: nodeBridge, IPForward: strings.TrimSpace(string(fwd))}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stateDir, nodeFile), b, 0o644); err != nil {
		return err
	}
	if out, err := exec.Command("ip", "link", "show", nodeBridge).CombinedOutput(); err == nil {
		return fmt.Errorf("bridge %s exists: another local cluster with a real node runs (stop it with make cluster-down): %s", nodeBridge, bytes.TrimSpace(out))
	}
	// No bridge, so no node runs: a forward chain left here is a killed
	// run's, which never reached Down. Creating it again would fail.
	if err := removeChains(forwardChain); err != nil {
		return fmt.Errorf("removing a previous run's %s: %w", forwardChain, err)
	}
	// Modules may be built in; errors show up below if they are missing.
	_ = exec.Command("modprobe", "br_netfilter").Run()
	_ = exec.Command("modprobe", "overlay").Run()
	for _, s := range [][2]string{
		{"/proc/sys/net/ipv4/ip_forward", "1"},
		{"/proc/sys/net/bridge/bridge-nf-call-iptables", "1"},
	} {
		if err := os.WriteFile(s[0], []byte(s[1]), 0o644); err != nil {
			return fmt.Errorf("setting %s: %w", s[0], err)
		}
	}
	for _, args := range [][]string{
		{"ip", "link", "add", nodeBridge, "type", "bridge"},
		{"ip", "addr", "add", NodeIP + "/24", "dev", nodeBridge},
		{"ip", "link", "set", nodeBridge, "up"},
		{"ip", "route", "add", serviceCIDR, "dev", nodeBridge, "src", NodeIP},
		// Pods talk to each other, to the node and to Services, never to
		// another machine: forwarding is on only for the bridge.
		{"iptables", "-N", forwardChain},
		{"iptables", "-A", forwardChain, "-i", nodeBridge, "-o", nodeBridge, "-j", "ACCEPT"},
		{"iptables", "-A", forwardChain, "-i", nodeBridge, "-j", "DROP"},
		{"iptables", "-A", forwardChain, "-o", nodeBridge, "-j", "DROP"},
		{"iptables", "-I", "FORWARD", "1", "-j", forwardChain},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	return nil
}

// nodePorts are the ports of the node's processes besides the API server.
type nodePorts struct {
	kubelet, kubeletHealthz, proxyHealthz, proxyMetrics, dnsReady, dnsHealth int
}

// startNode starts the registry, containerd, the kubelet, kube-router,
// kube-proxy and CoreDNS, in that order. The network is set up and the API
// server runs.
func startNode(ctx context.Context, p procs, kubeconfig string, logw io.Writer) error {
	ports, err := process.FreePorts(6)
	if err != nil {
		return err
	}
	np := nodePorts{ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]}
	st, err := readNodeState(p.stateDir)
	if err != nil {
		return err
	}

	fmt.Fprintf(logw, "starting the image registry on %s\n", RegistryAddress)
	if err := startRegistry(ctx, p); err != nil {
		return err
	}

	fmt.Fprintln(logw, "starting containerd")
	if err := startContainerd(ctx, p, st.ContainerdSocket); err != nil {
		return err
	}
	pause, err := os.ReadFile(filepath.Join(p.binDir, "pause"))
	if err != nil {
		return err
	}
	pauseTar := filepath.Join(p.stateDir, "pause.tar")
	f, err := os.Create(pauseTar)
	if err != nil {
		return err
	}
	err = WriteImage(f, pauseImage, []ImageFile{{Path: "/pause", Mode: 0o755, Data: pause}}, []string{"/pause"})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := importImage(ctx, p.stateDir, pauseTar); err != nil {
		return err
	}

	fmt.Fprintln(logw, "starting the kubelet")
	if err := startKubelet(p, kubeconfig, st.ContainerdSocket, np); err != nil {
		return err
	}
	// kube-router before kube-proxy: kube-router writes the filter table
	// by saving it, changing the copy and restoring it whole, so a chain
	// kube-proxy creates in between is lost. kube-proxy's first sync then
	// fails ("Chain 'KUBE-SERVICES' does not exist") and it does not retry
	// on its own for minutes, leaving no Service reachable from the Pods.
	// Started after kube-router's first sync, its own first sync stands.
	fmt.Fprintln(logw, "starting kube-router's network policy controller")
	if err := startPolicyController(ctx, p, kubeconfig); err != nil {
		return err
	}
	fmt.Fprintln(logw, "starting kube-proxy")
	if err := startProxy(ctx, p, kubeconfig, np); err != nil {
		return err
	}

	fmt.Fprintf(logw, "starting CoreDNS on %s:53\n", NodeIP)
	corefile := filepath.Join(p.stateDir, "Corefile")
	if err := os.WriteFile(corefile, []byte(fmt.Sprintf(`cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %[1]s
    errors
    health 127.0.0.1:%[2]d
    ready 127.0.0.1:%[3]d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %[4]s local
        pods insecure
        ttl 5
    }
    cache 5
}
.:53 {
    bind %[1]s
    errors
}
`, NodeIP, np.dnsHealth, np.dnsReady, kubeconfig)), 0o644); err != nil {
		return err
	}
	if err := p.start("coredns", "-conf", corefile); err != nil {
		return err
	}
	if err := waitFor(ctx, 60*time.Second, func() error {
		return httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/ready", np.dnsReady))
	}); err != nil {
		return fmt.Errorf("CoreDNS is not ready: %w\n%s", err, logTail(p.logPath("coredns"), 20))
	}
	return nil
}

// startProxy runs kube-proxy and waits until its rules send the
// kubernetes Service's address to the API server: the first thing every
// Pod that talks to the API server needs.
func startProxy(ctx context.Context, p procs, kubeconfig string, np nodePorts) error {
	if err := p.start("kube-proxy",
		"--kubeconfig="+kubeconfig,
		"--hostname-override="+NodeName,
		"--proxy-mode=iptables",
		"--cluster-cidr="+podCIDR,
		"--bind-address="+NodeIP,
		"--nodeport-addresses="+NodeIP+"/32",
		"--healthz-bind-address=127.0.0.1:"+strconv.Itoa(np.proxyHealthz),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(np.proxyMetrics),
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		"--iptables-localhost-nodeports=false",
	); err != nil {
		return err
	}
	err := waitFor(ctx, 60*time.Second, func() error {
		out, err := exec.CommandContext(ctx, "iptables", "-t", "nat", "-S", "KUBE-SERVICES").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
		}
		if !bytes.Contains(out, []byte("-d "+serviceIP+"/32")) {
			return fmt.Errorf("no rule for %s in KUBE-SERVICES yet", serviceIP)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("kube-proxy has not written the kubernetes Service's rules: %w\n%s", err, logTail(p.logPath("kube-proxy"), 20))
	}
	return nil
}

// startPolicyController runs kube-router as the node's NetworkPolicy
// enforcer. It reads its Node (for the node IP that tells local Pods
// apart) when it starts, so it waits until the kubelet has registered it,
// and it is ready once its top-level chains are in the filter table.
func startPolicyController(ctx context.Context, p procs, kubeconfig string) error {
	kubectl := filepath.Join(p.binDir, "kubectl")
	if err := waitFor(ctx, 60*time.Second, func() error {
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "node", NodeName, "-o", "name").CombinedOutput()
		if err != nil {
			return fmt.Errorf("node %s not registered: %w: %s", NodeName, err, bytes.TrimSpace(out))
		}
		return nil
	}); err != nil {
		return err
	}
	if err := p.start("kube-router",
		"--kubeconfig="+kubeconfig,
		"--hostname-override="+NodeName,
		"--run-firewall=true",
		"--run-router=false",
		"--run-service-proxy=false",
		"--enable-cni=false",
		"--enable-ipv6=false",
		"--service-cluster-ip-range="+serviceCIDR,
		"--health-port=0",
		"--metrics-port=0",
	); err != nil {
		return err
	}
	return waitFor(ctx, 60*time.Second, func() error {
		out, err := exec.CommandContext(ctx, "iptables", "-t", "filter", "-S", "FORWARD").Output()
		if err != nil {
			return err
		}
		if !bytes.Contains(out, []byte("-j KUBE-ROUTER-FORWARD")) {
			return errors.New("kube-router's chains are not in FORWARD yet")
		}
		return nil
	})
}

func startRegistry(ctx context.Context, p procs) error {
	storage := filepath.Join(p.stateDir, "registry")
	// The plain-HTTP listener the node and pushes use.
	if err := startRegistryProcess(ctx, p, "docker-registry", RegistryAddress, fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, storage, RegistryAddress)); err != nil {
		return err
	}
	// The HTTPS listener: a second process on the same storage; it only
	// serves pulls (pushes go to RegistryAddress), and neither caches blob
	// descriptors, so it sees every push at once.
	return startRegistryProcess(ctx, p, "registry-tls", RegistryTLSAddress, fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  tls:
    certificate: %s
    key: %s
`, storage, RegistryTLSAddress,
		filepath.Join(p.stateDir, registryCertFile), filepath.Join(p.stateDir, registryKeyFile)))
}

// startRegistryProcess runs docker-registry as name with config on addr,
// which must be free, and waits until addr accepts connections.
func startRegistryProcess(ctx context.Context, p procs, name, addr, config string) error {
	cfg := filepath.Join(p.stateDir, name+".yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return err
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%s is taken: another registry (or local cluster) runs", addr)
	}
	if err := p.start(name, "serve", cfg); err != nil {
		return err
	}
	return waitFor(ctx, 30*time.Second, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
}

func startContainerd(ctx context.Context, p procs, socket string) error {
	dir := filepath.Join(p.stateDir, "containerd")
	netd := filepath.Join(p.stateDir, "cni", "net.d")
	for _, d := range []string{dir, netd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	cri := `plugins."io.containerd.grpc.v1.cri"`
	cfg := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[%[6]s]
  sandbox_image = %[7]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false

[%[6]s.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[%[6]s.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[%[6]s.containerd.runtimes.runc.options]
  SystemdCgroup = false

[%[6]s.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = %[8]q
  max_conf_num = 1

[%[6]s.registry.mirrors."localhost:5000"]
  endpoint = ["http://%[9]s"]

[%[6]s.registry.mirrors."127.0.0.1:5000"]
  endpoint = ["http://%[9]s"]

# operator-sdk run bundle-upgrade runs this image, by this name, with no
# flag to change it (its catalog Pod's decompression init container), and
# registry.access.redhat.com is not reachable: the node pulls it from the
# local registry instead, where a stand-in is pushed as ubi9/ubi:9.7.
[%[6]s.registry.mirrors."registry.access.redhat.com"]
  endpoint = ["http://%[9]s"]

[%[6]s.registry.mirrors."localhost:5443"]
  endpoint = ["http://%[9]s"]

[%[6]s.registry.mirrors."127.0.0.1:5443"]
  endpoint = ["http://%[9]s"]
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), socket, socket+".ttrpc",
		filepath.Join(dir, "opt"), cri, pauseImage, netd, RegistryAddress)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "firewall"}
  ]
}
`, cniNetwork, nodeBridge, podCIDR, NodeIP, filepath.Join(p.stateDir, "cni", "ipam"))
	if err := os.WriteFile(filepath.Join(netd, "10-localcluster.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	if err := p.start("containerd", "--config", cfgPath); err != nil {
		return err
	}
	return waitFor(ctx, 30*time.Second, func() error {
		return exec.CommandContext(ctx, "ctr", "--address", socket, "version").Run()
	})
}

func startKubelet(p procs, kubeconfig, socket string, np nodePorts) error {
	root := filepath.Join(p.stateDir, "kubelet")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
containerRuntimeEndpoint: unix://%[4]s
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
clusterDNS: [%[1]s]
clusterDomain: cluster.local
resolvConf: ""
podLogsDir: %[5]s
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
maxPods: 110
`, NodeIP, np.kubelet, np.kubeletHealthz, socket, filepath.Join(p.stateDir, "pod-logs"))
	cfgPath := filepath.Join(p.stateDir, "kubelet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	return p.start("kubelet",
		"--config="+cfgPath,
		"--kubeconfig="+kubeconfig,
		"--root-dir="+root,
		"--cert-dir="+filepath.Join(root, "pki"),
		"--hostname-override="+NodeName,
		"--node-ip="+NodeIP,
	)
}

func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// stopContainers kills every container of the node while containerd still
// runs (the kubelet is stopped, so nothing restarts them).
func (n nodeState) stopContainers() {
	ctr := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return exec.CommandContext(ctx, "ctr", append([]string{"--address", n.ContainerdSocket, "--namespace", "k8s.io"}, args...)...).Output()
	}
	out, err := ctr("tasks", "ls", "-q")
	if err != nil {
		return
	}
	ids := strings.Fields(string(out))
	for _, id := range ids {
		_, _ = ctr("tasks", "kill", "--all", "--signal", "SIGKILL", id)
	}
	for _, id := range ids {
		_, _ = ctr("tasks", "delete", "--force", id)
	}
}

// cleanUp undoes the node after its processes are stopped. It returns the
// first error but tries every step.
func (n nodeState) cleanUp(stateDir string) error {
	var errs []error
	killShims(n.ContainerdSocket)
	killPodCgroups()
	errs = append(errs, unmountUnder(stateDir))
	if n.BinDir != "" {
		_ = exec.Command(filepath.Join(n.BinDir, "kube-proxy"), "--cleanup").Run()
	}
	errs = append(errs, removeChains("KUBE-", "CNI-", forwardChain))
	errs = append(errs, destroySets())
	if _, err := exec.Command("ip", "link", "show", n.Bridge).CombinedOutput(); err == nil {
		if out, err := exec.Command("ip", "link", "del", n.Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting bridge %s: %w: %s", n.Bridge, err, bytes.TrimSpace(out)))
		}
	}
	if n.IPForward != "" {
		_ = os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte(n.IPForward), 0o644)
	}
	// libcni caches results in /var/lib/cni/results/<network>-<id>-<if>.
	if old, _ := filepath.Glob("/var/lib/cni/results/" + cniNetwork + "-*"); len(old) > 0 {
		for _, f := range old {
			_ = os.Remove(f)
		}
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims of the node's containerd: they run
// in process groups of their own and outlive containerd.
func killShims(socket string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || !strings.Contains(args[0], "containerd-shim") {
			continue
		}
		for i, a := range args {
			if a == "-address" && i+1 < len(args) && args[i+1] == socket {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
}

// killPodCgroups kills what is left in the kubelet's Pod cgroups
// (cgroupfs driver: /sys/fs/cgroup/<controller>/kubepods) and removes them.
func killPodCgroups() {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	for attempt := 0; attempt < 20; attempt++ {
		alive := false
		for _, r := range roots {
			_ = filepath.WalkDir(r, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
					return nil
				}
				b, _ := os.ReadFile(path)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						alive = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return nil
			})
		}
		if !alive {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, r := range roots {
		var dirs []string
		_ = filepath.WalkDir(r, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- { // children first
			_ = syscall.Rmdir(dirs[i])
		}
	}
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var ms []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			ms = append(ms, mp)
		}
	}
	sort.Slice(ms, func(i, j int) bool { return len(ms[i]) > len(ms[j]) })
	return ms
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// unmountUnder unmounts everything under dir (kubelet volumes, container
// root filesystems, network namespaces), lazily when busy.
func unmountUnder(dir string) error {
	for attempt := 0; attempt < 5; attempt++ {
		ms := mountsUnder(dir)
		if len(ms) == 0 {
			return nil
		}
		for _, m := range ms {
			if err := syscall.Unmount(m, 0); err != nil {
				_ = syscall.Unmount(m, syscall.MNT_DETACH)
			}
		}
	}
	if ms := mountsUnder(dir); len(ms) > 0 {
		return fmt.Errorf("still mounted under %s: %s", dir, strings.Join(ms, ", "))
	}
	return nil
}

// removeChains removes the iptables chains whose names start with one of
// prefixes (kube-proxy's KUBE-*, the CNI plugins' CNI-*, the node's own),
// with the rules that jump to them, from every table, for IPv4 and IPv6.
func removeChains(prefixes ...string) error {
	var errs []error
	for _, tool := range []string{"iptables", "ip6tables"} {
		out, err := exec.Command(tool + "-save").Output()
		if err != nil {
			continue
		}
		filtered, changed := withoutChains(string(out), prefixes)
		if !changed {
			continue
		}
		cmd := exec.Command(tool + "-restore")
		cmd.Stdin = strings.NewReader(filtered)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s-restore: %w: %s", tool, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// destroySets destroys kube-router's ipsets (KUBE-*, and its inet6:
// twins). It runs after removeChains: a set that a rule still uses cannot
// be destroyed.
func destroySets() error {
	out, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return nil // no ipset tool or no sets module: nothing was created
	}
	var errs []error
	for _, name := range strings.Fields(string(out)) {
		if !strings.HasPrefix(strings.TrimPrefix(name, "inet6:"), "KUBE-") {
			continue
		}
		if out, err := exec.Command("ipset", "destroy", name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ipset destroy %s: %w: %s", name, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// withoutChains drops, from iptables-save output, the chains whose names
// start with one of prefixes and every rule in them or jumping to them.
func withoutChains(save string, prefixes []string) (string, bool) {
	ours := func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	changed := false
	for _, line := range strings.Split(save, "\n") {
		f := strings.Fields(line)
		drop := false
		switch {
		case len(f) > 0 && strings.HasPrefix(f[0], ":") && ours(strings.TrimPrefix(f[0], ":")):
			drop = true
		case len(f) > 1 && f[0] == "-A":
			if ours(f[1]) {
				drop = true
			}
			for i := 2; i+1 < len(f); i++ {
				if (f[i] == "-j" || f[i] == "-g") && ours(f[i+1]) {
					drop = true
				}
			}
		}
		if drop {
			changed = true
			continue
		}
		b.WriteString(line)
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n", changed
}

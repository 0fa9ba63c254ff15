// Package realnode brings up what the suites that run the operator on a
// real node share: a local cluster with one real node
// (internal/devtools/localcluster), images pushed to its registry, and requests
// made from a Pod inside the cluster network. What the suites do to the
// cluster once it is up is test/testkit's, which Cluster embeds; the
// suites themselves (test/real, test/olm) say what is tested.
package realnode

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/acme/platform-operator/internal/devtools/localcluster"
	"github.com/acme/platform-operator/test/testkit"
)

// Cluster is a running local cluster with a real node. Its Kube drives it
// from the repository's root as admin; the client knows the core, apps
// and apiextensions types (unstructured for the rest).
type Cluster struct {
	*testkit.Kube
	// RegistryCA is the CA file that clients of the registry's HTTPS
	// listener (localhost:5443, the same images as localhost:5000) trust.
	RegistryCA string

	lc *localcluster.Cluster
}

// Up starts a local cluster with a real node; root is the repository's
// root (where bin/k8s holds the cluster's binaries). Progress goes to log.
func Up(ctx context.Context, root string, log io.Writer) (*Cluster, error) {
	binDir := filepath.Join(root, "bin", "k8s")
	stateDir, err := os.MkdirTemp("", "platform-operator-realnode-")
	if err != nil {
		return nil, err
	}
	lc, err := localcluster.Up(ctx, localcluster.Config{BinDir: binDir, StateDir: stateDir, RealNode: true, Log: log})
	if err != nil {
		_ = localcluster.Down(stateDir)
		return nil, fmt.Errorf("starting the local cluster: %w", err)
	}
	kube, err := testkit.New(root, filepath.Join(binDir, "kubectl"), lc.Kubeconfig, apiextensionsv1.AddToScheme)
	if err != nil {
		_ = lc.Stop()
		return nil, err
	}
	return &Cluster{Kube: kube, RegistryCA: lc.RegistryCA, lc: lc}, nil
}

// Stop stops the cluster and removes its state.
func (c *Cluster) Stop() error { return c.lc.Stop() }

// Push pushes images from the container engine to the node's registry,
// which lives with the cluster.
func (c *Cluster) Push(images ...string) error {
	for _, img := range images {
		if out, err := exec.Command("docker", "push", img).CombinedOutput(); err != nil {
			return fmt.Errorf("docker push %s: %w\n%s", img, err, out)
		}
	}
	return nil
}

// ExecIn runs a command in a container of a Pod.
func (c *Cluster) ExecIn(ns, pod, container string, command ...string) (string, error) {
	args := []string{"exec", "-n", ns, pod}
	if container != "" {
		args = append(args, "-c", container)
	}
	return c.Kubectl(append(append(args, "--"), command...)...)
}

// ClientPod starts a Pod named client in ns that stays up to make requests
// from inside the cluster network. image must have bash, whose /dev/tcp
// makes an HTTP request without curl (the nginx stand-in's Debian has it).
func (c *Cluster) ClientPod(t testing.TB, ns, image string) {
	t.Helper()
	c.NamedClientPod(t, ns, "client", image, nil)
}

// NamedClientPod is ClientPod with a name and labels of its own (which
// NetworkPolicies select).
func (c *Cluster) NamedClientPod(t testing.TB, ns, name, image string, labels map[string]string) {
	t.Helper()
	meta := fmt.Sprintf("name: %s", name)
	if len(labels) > 0 {
		meta += "\n  labels:"
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			meta += fmt.Sprintf("\n    %s: %q", k, labels[k])
		}
	}
	c.Apply(t, ns, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  %s
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 101, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: client
    image: %s
    command: ["bash", "-c", "trap exit TERM; while true; do sleep 1; done"]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, meta, image))
	if out, err := c.Kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/"+name, "--timeout=120s"); err != nil {
		t.Fatalf("client pod %s: %v\n%s", name, err, out)
	}
}

// Dial opens a TCP connection to host:port from the client Pod pod of ns
// (see NamedClientPod), with a 5 s timeout: what the network, and its
// NetworkPolicies, let through from that Pod. kubectl exec itself does not
// cross the Pod network, so only the connection is subject to policies.
func (c *Cluster) Dial(ns, pod, host string, port int) (string, error) {
	script := fmt.Sprintf(`timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d' && echo connected`, host, port)
	return c.ExecIn(ns, pod, "", "bash", "-c", script)
}

// HTTPGet requests path from host:port through the client Pod of ns and
// returns the response (status line, headers and body). It gives up after
// 15 s: a connection to an endpoint that is going away (a Pod replaced by
// a rollout, still in kube-proxy's rules) would otherwise wait for TCP's
// own timeout, about two minutes, and outlast the caller's polling.
func (c *Cluster) HTTPGet(ns, host string, port int, path string) (string, error) {
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' >&3 && timeout 10 cat <&3`, host, port, path, host)
	return c.ExecIn(ns, "client", "", "timeout", "15", "bash", "-c", script)
}

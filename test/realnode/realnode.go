// Package realnode is what the suites that run the operator on a real node
// share: a local cluster with one real node (internal/localcluster), images
// pushed to its registry, kubectl as a user types it, and the waits and
// reads those suites repeat. The suites themselves (test/olm) say what is
// tested; this package only drives the cluster.
package realnode

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/localcluster"
)

// Cluster is a running local cluster with a real node.
type Cluster struct {
	// Root is the repository's root directory.
	Root string
	// Kubeconfig is the admin kubeconfig of the cluster.
	Kubeconfig string
	// Client talks to the cluster as admin (core, apps and apiextensions
	// types; unstructured for the rest).
	Client client.Client
	// RegistryCA is the CA file that clients of the registry's HTTPS
	// listener (localhost:5443, the same images as localhost:5000) trust.
	RegistryCA string

	kubectl string
	lc      *localcluster.Cluster
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
	c := &Cluster{Root: root, Kubeconfig: lc.Kubeconfig, RegistryCA: lc.RegistryCA, kubectl: filepath.Join(binDir, "kubectl"), lc: lc}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		_ = lc.Stop()
		return nil, err
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	if c.Client, err = client.New(rc, client.Options{Scheme: scheme}); err != nil {
		_ = lc.Stop()
		return nil, err
	}
	return c, nil
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

// Kubectl runs kubectl against the cluster from the repository's root.
func (c *Cluster) Kubectl(args ...string) (string, error) { return c.KubectlIn("", args...) }

// KubectlIn runs kubectl with stdin.
func (c *Cluster) KubectlIn(stdin string, args ...string) (string, error) {
	return c.Run(stdin, c.kubectl, args...)
}

// Run runs a command with the cluster's kubeconfig in its environment,
// from the repository's root, and returns its combined output.
func (c *Cluster) Run(stdin, name string, args ...string) (string, error) {
	return c.RunEnv(nil, stdin, name, args...)
}

// RunEnv is Run with more environment variables (KEY=value).
func (c *Cluster) RunEnv(env []string, stdin, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "KUBECTL="+c.kubectl), env...)
	cmd.Dir = c.Root
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Apply applies a manifest with kubectl, in namespace ns unless it is empty.
func (c *Cluster) Apply(t testing.TB, ns, manifest string) {
	t.Helper()
	args := []string{"apply", "-f", "-"}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	if out, err := c.KubectlIn(manifest, args...); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// CreateNamespace creates a namespace.
func (c *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	ns := &corev1.Namespace{}
	ns.Name = name
	if err := c.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// Get reads one object of any kind.
func (c *Cluster) Get(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

// List lists the objects of a kind in ns ("" for all namespaces).
func (c *Cluster) List(ctx context.Context, gvk schema.GroupVersionKind, ns string, opts ...client.ListOption) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	err := c.Client.List(ctx, l, opts...)
	return l.Items, err
}

// Condition returns the status, reason and message of the condition of
// type t in u's status.
func Condition(u *unstructured.Unstructured, t string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == t {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
			return status, reason, message
		}
	}
	return "", "", ""
}

// Available reports whether every desired replica of d is ready and
// updated.
func Available(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.ReadyReplicas == want && d.Status.Replicas == want
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
	c.Apply(t, ns, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 101, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: client
    image: %s
    command: ["bash", "-c", "trap exit TERM; while true; do sleep 1; done"]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, image))
	if out, err := c.Kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/client", "--timeout=120s"); err != nil {
		t.Fatalf("client pod: %v\n%s", err, out)
	}
}

// HTTPGet requests path from host:port through the client Pod of ns and
// returns the response (status line, headers and body).
func (c *Cluster) HTTPGet(ns, host string, port int, path string) (string, error) {
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' >&3 && timeout 10 cat <&3`, host, port, path, host)
	return c.ExecIn(ns, "client", "", "bash", "-c", script)
}

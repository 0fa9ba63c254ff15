// Package testkit is what every end-to-end suite (test/e2e on kwok,
// test/real and test/olm on a real node) does to a cluster, whatever
// started it: kubectl as a user types it, apply, namespaces, reads of
// custom resources, their conditions and Events, Deployment rollouts, Helm
// release revisions, and the WebApp's database Secret. It needs only a
// kubeconfig and the kubectl that matches the API server; bringing a
// cluster up is the suites' business (test/realnode for a real node).
package testkit

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kube is a cluster as the tests drive it.
type Kube struct {
	// Root is the repository's root directory, where commands run.
	Root string
	// Kubeconfig is the admin kubeconfig of the cluster.
	Kubeconfig string
	// KubectlPath is the kubectl binary that matches the cluster.
	KubectlPath string
	// Client talks to the cluster as admin (client-go's types and those the
	// suite adds; unstructured for the rest).
	Client client.Client
}

// New returns the Kube of the cluster of kubeconfig, driven with the
// kubectl binary from root. Its client knows client-go's types and those
// addToScheme add.
func New(root, kubectl, kubeconfig string, addToScheme ...func(*runtime.Scheme) error) (*Kube, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &Kube{Root: root, Kubeconfig: kubeconfig, KubectlPath: kubectl, Client: c}, nil
}

// Kubectl runs kubectl against the cluster from the repository's root and
// returns its combined output.
func (k *Kube) Kubectl(args ...string) (string, error) { return k.KubectlIn("", args...) }

// KubectlIn runs kubectl with stdin.
func (k *Kube) KubectlIn(stdin string, args ...string) (string, error) {
	return k.Run(stdin, k.KubectlPath, args...)
}

// Run runs a command with the cluster's kubeconfig (KUBECONFIG) and
// kubectl (KUBECTL) in its environment, from the repository's root, and
// returns its combined output.
func (k *Kube) Run(stdin, name string, args ...string) (string, error) {
	return k.RunEnv(nil, stdin, name, args...)
}

// RunEnv is Run with more environment variables (KEY=value).
func (k *Kube) RunEnv(env []string, stdin, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+k.Kubeconfig, "KUBECTL="+k.KubectlPath), env...)
	cmd.Dir = k.Root
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// LastLine is the last line of a command's output, trimmed.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// applyArgs are kubectl's arguments to apply a manifest from stdin, in
// namespace ns unless it is empty (the manifest names its namespace, or
// its kind has none).
func applyArgs(ns string) []string {
	args := []string{"apply", "-f", "-"}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	return args
}

// Apply applies a manifest with kubectl, in namespace ns unless it is
// empty; a failure ends the test.
func (k *Kube) Apply(t testing.TB, ns, manifest string) {
	t.Helper()
	if out, err := k.KubectlIn(manifest, applyArgs(ns)...); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// ExpectApply is Apply as an expectation of g: kubectl's output is the
// failure message.
func (k *Kube) ExpectApply(g Gomega, ns, manifest string) {
	out, err := k.KubectlIn(manifest, applyArgs(ns)...)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
}

// CreateNamespace creates a namespace for one test. It is not deleted
// after the test: the cluster goes away with the suite, and what a failed
// test left is there to look at until then.
func (k *Kube) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	ns := &corev1.Namespace{}
	ns.Name = name
	if err := k.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// Get reads one object of any kind, unstructured; ns is "" for
// cluster-scoped kinds.
func (k *Kube) Get(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, k.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

// List lists the objects of a kind in ns ("" for all namespaces, or a
// cluster-scoped kind), unstructured.
func (k *Kube) List(ctx context.Context, gvk schema.GroupVersionKind, ns string, opts ...client.ListOption) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	err := k.Client.List(ctx, l, opts...)
	return l.Items, err
}

// Package real runs the shipped operator on a real node: the image built
// from the Dockerfile, deployed with the kustomize manifests of
// config/default, in a Pod on a kubelet with containerd, managing
// workloads whose containers really run (stand-in images from
// hack/images). `make test-real` builds and pushes the images and runs it;
// it needs root.
package real

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/localcluster"
)

const (
	operatorNamespace  = "platform-operator-system"
	operatorDeployment = "platform-operator-controller-manager"
	// The images make test-real pushes to the node's registry.
	operatorImage = "localhost:5000/platform-operator:dev"
	nginxRepo     = "localhost:5000/nginx-unprivileged"
	nginxTag      = "1.22-bookworm"
	appImage      = "localhost:5000/webapp-test-app:v1"
	postgresRepo  = "localhost:5000/postgres"
	postgresTag   = "15-bookworm"
)

var env struct {
	root       string
	kubectl    string
	kubeconfig string
	client     client.Client
	cluster    *localcluster.Cluster
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("REAL_NODE_E2E") != "1" || os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "real: skipped; `make test-real` (as root) runs these tests on a real node")
		return 0
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	env.root = root
	binDir := filepath.Join(root, "bin", "k8s")
	env.kubectl = filepath.Join(binDir, "kubectl")

	stateDir, err := os.MkdirTemp("", "platform-operator-real-")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	start := time.Now()
	cluster, err := localcluster.Up(ctx, localcluster.Config{BinDir: binDir, StateDir: stateDir, RealNode: true, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "real: starting the local cluster:", err)
		_ = localcluster.Down(stateDir)
		return 1
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "real: stopping the local cluster:", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "real: cluster with a real node up in %s\n", time.Since(start).Round(time.Millisecond))
	env.cluster, env.kubeconfig = cluster, cluster.Kubeconfig

	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		panic(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	if env.client, err = client.New(rc, client.Options{Scheme: scheme}); err != nil {
		panic(err)
	}

	// The registry lives with the cluster: push what make test-real built.
	start = time.Now()
	for _, img := range []string{operatorImage, nginxRepo + ":" + nginxTag, appImage, postgresRepo + ":" + postgresTag} {
		if out, err := exec.Command("docker", "push", img).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "real: docker push %s: %v\n%s", img, err, out)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "real: images pushed to the node's registry in %s\n", time.Since(start).Round(time.Millisecond))

	// make deploy, with the image just pushed.
	kustomize := filepath.Join(root, "bin", "kustomize")
	manifests, err := exec.Command(kustomize, "build", filepath.Join(root, "test", "real", "testdata", "deploy")).Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "real: kustomize build:", err)
		return 1
	}
	start = time.Now()
	if out, err := kubectlIn(string(manifests), "apply", "--server-side", "-f", "-"); err != nil {
		fmt.Fprintln(os.Stderr, "real: deploying the operator:", err, out)
		return 1
	}
	if out, err := kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=180s"); err != nil {
		fmt.Fprintln(os.Stderr, "real: the operator did not become ready:", err, out)
		dumpOperator()
		return 1
	}
	fmt.Fprintf(os.Stderr, "real: operator Deployment ready %s after apply\n", time.Since(start).Round(time.Millisecond))

	code := m.Run()
	if code != 0 {
		dumpOperator()
	}
	return code
}

// dumpOperator prints the operator Pod and its containers' logs.
func dumpOperator() {
	out, _ := kubectl("get", "pods", "-A", "-o", "wide")
	fmt.Fprintln(os.Stderr, out)
	out, _ = kubectl("describe", "pods", "-n", operatorNamespace)
	fmt.Fprintln(os.Stderr, out)
	for _, c := range []string{"manager", "extensions"} {
		out, _ = kubectl("logs", "-n", operatorNamespace, "deployment/"+operatorDeployment, "-c", c, "--tail=80")
		fmt.Fprintf(os.Stderr, "--- logs of %s\n%s\n", c, out)
	}
}

func kubectl(args ...string) (string, error) { return kubectlIn("", args...) }

func kubectlIn(stdin string, args ...string) (string, error) {
	cmd := exec.Command(env.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	cmd.Dir = env.root
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{}
	ns.Name = name
	if err := env.client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

func apply(t *testing.T, ns, manifest string) {
	t.Helper()
	args := []string{"apply", "-f", "-"}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	if out, err := kubectlIn(manifest, args...); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

func getCR(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

// condition returns the status, reason and message of condition t.
func condition(u *unstructured.Unstructured, t string) (string, string, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == t {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

// available reports whether every desired replica of d is ready and
// updated.
func available(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.ReadyReplicas == want && d.Status.Replicas == want
}

// exec runs a command in a container of a Pod.
func execIn(ns, pod, container string, command ...string) (string, error) {
	args := []string{"exec", "-n", ns, pod}
	if container != "" {
		args = append(args, "-c", container)
	}
	return kubectl(append(append(args, "--"), command...)...)
}

// clientPod starts a Pod that stays up to run requests from inside the
// cluster network: the nginx stand-in's Debian has bash, whose /dev/tcp
// makes an HTTP request without curl.
func clientPod(t *testing.T, ns string) string {
	t.Helper()
	apply(t, ns, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 101, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: client
    image: %s:%s
    command: ["bash", "-c", "trap exit TERM; while true; do sleep 1; done"]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, nginxRepo, nginxTag))
	if out, err := kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/client", "--timeout=120s"); err != nil {
		t.Fatalf("client pod: %v\n%s", err, out)
	}
	return "client"
}

// httpGet requests path from host:port through the client Pod and returns
// the response (status line, headers and body).
func httpGet(ns, host string, port int, path string) (string, error) {
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' >&3 && timeout 10 cat <&3`, host, port, path, host)
	return execIn(ns, "client", "", "bash", "-c", script)
}

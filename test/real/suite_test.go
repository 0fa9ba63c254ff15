// Package real runs the shipped operator on a real node: the image built
// from the Dockerfile, deployed with the kustomize manifests of
// config/default, in a Pod on a kubelet with containerd, managing
// workloads whose containers really run (stand-in images from
// hack/images). `make test-real` builds and pushes the images and runs it;
// it needs root.
package real

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/acme/platform-operator/test/realnode"
)

const (
	operatorNamespace  = "platform-operator-system"
	operatorDeployment = "platform-operator-controller-manager"
	// The operator image make test-real pushes to the node's registry.
	operatorImage = "localhost:5000/platform-operator:dev"
)

var cluster *realnode.Cluster

func TestMain(m *testing.M) {
	os.Exit(realnode.Main(m, "real", "REAL_NODE_E2E", "make test-real", setup, dumpOperator))
}

// setup pushes the images make test-real built and deploys the operator
// as make deploy does.
func setup(c *realnode.Cluster) error {
	cluster = c
	start := time.Now()
	if err := cluster.Push(operatorImage, realnode.NginxImage, realnode.AppImage, realnode.PostgresImage); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "real: images pushed to the node's registry in %s\n", time.Since(start).Round(time.Millisecond))

	// make deploy, with the image just pushed.
	kustomize := filepath.Join(cluster.Root, "bin", "kustomize")
	manifests, err := exec.Command(kustomize, "build", filepath.Join(cluster.Root, "test", "real", "testdata", "deploy")).Output()
	if err != nil {
		return fmt.Errorf("kustomize build: %w", err)
	}
	start = time.Now()
	if out, err := cluster.KubectlIn(string(manifests), "apply", "--server-side", "-f", "-"); err != nil {
		return fmt.Errorf("deploying the operator: %w\n%s", err, out)
	}
	if out, err := cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=180s"); err != nil {
		dumpOperator()
		return fmt.Errorf("the operator did not become ready: %w\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "real: operator Deployment ready %s after apply\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// dumpOperator prints the operator Pod and its containers' logs.
func dumpOperator() {
	out, _ := cluster.Kubectl("get", "pods", "-A", "-o", "wide")
	fmt.Fprintln(os.Stderr, out)
	out, _ = cluster.Kubectl("describe", "pods", "-n", operatorNamespace)
	fmt.Fprintln(os.Stderr, out)
	for _, c := range []string{"manager", "extensions"} {
		out, _ = cluster.Kubectl("logs", "-n", operatorNamespace, "-l", "control-plane=controller-manager", "-c", c, "--tail=80", "--prefix")
		fmt.Fprintf(os.Stderr, "--- logs of %s\n%s\n", c, out)
	}
}

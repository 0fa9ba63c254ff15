// Package real runs the shipped operator on a real node: the image built
// from the Dockerfile, installed with the operator's Helm chart (dist/chart,
// config/default's objects), in a Pod on a kubelet with containerd, managing
// workloads whose containers really run (stand-in images from
// hack/images). `make test-real` builds and pushes the images and runs it;
// it needs root.
package real

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acme/platform-operator/test/realnode"
)

const (
	operatorNamespace  = "platform-operator-system"
	operatorDeployment = "platform-operator-controller-manager"
	// The operator image make test-real pushes to the node's registry.
	operatorImage      = operatorRepository + ":" + operatorTag
	operatorRepository = "localhost:5000/platform-operator"
	operatorTag        = "dev"
)

var cluster *realnode.Cluster

func TestMain(m *testing.M) {
	os.Exit(realnode.Main(m, "real", "REAL_NODE_E2E", "make test-real", setup, dumpOperator))
}

// setup pushes the images make test-real built and installs the operator
// with its Helm chart.
func setup(c *realnode.Cluster) error {
	cluster = c
	start := time.Now()
	if err := cluster.Push(operatorImage, realnode.NginxImage, realnode.AppImage, realnode.PostgresImage); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "real: images pushed to the node's registry in %s\n", time.Since(start).Round(time.Millisecond))

	// helm install of the operator's chart (docs/operations.md), with the
	// image just pushed; the chart installs what config/default does (a
	// unit test of internal/gen/chartgen compares them object by object).
	start = time.Now()
	if out, err := installChart(); err != nil {
		return fmt.Errorf("helm install: %w\n%s", err, out)
	}
	if out, err := cluster.Kubectl("rollout", "status", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--timeout=180s"); err != nil {
		dumpOperator()
		return fmt.Errorf("the operator did not become ready: %w\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "real: operator Deployment ready %s after apply\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// installChart is the README's helm install, with the suite's image: the
// namespace made first with the Pod Security label config/default gives it.
func installChart() (string, error) {
	if out, err := cluster.KubectlIn(`apiVersion: v1
kind: Namespace
metadata:
  name: `+operatorNamespace+`
  labels:
    pod-security.kubernetes.io/enforce: restricted
`, "apply", "-f", "-"); err != nil {
		return out, err
	}
	return helm("upgrade", "--install", "platform-operator", "dist/chart", "--namespace", operatorNamespace,
		"--set", "image.repository="+operatorRepository, "--set", "image.tag="+operatorTag)
}

// helm runs the helm CLI make test-real built, on the suite's cluster.
func helm(args ...string) (string, error) {
	return cluster.Run("", filepath.Join(cluster.Root, "bin", "helm"), args...)
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

package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The workloads' stand-ins (make workload-images), as the node's registry
// serves them.
const (
	NginxRepo  = "localhost:5000/nginx-unprivileged"
	NginxTag   = "1.22-bookworm"
	NginxImage = NginxRepo + ":" + NginxTag
	AppImage   = "localhost:5000/webapp-test-app:v1"
	// The exporter stand-in (make workload-images NGINX_EXPORTER_STANDIN).
	ExporterImage = "localhost:5000/nginx-prometheus-exporter:0.11-bookworm"
	PostgresRepo  = "localhost:5000/postgres"
	PostgresTag   = "15-bookworm"
	PostgresImage = PostgresRepo + ":" + PostgresTag
)

// Main runs the tests of a real-node suite from its TestMain: only as root
// and with the environment variable gate=1 (which the make target sets),
// on a cluster it starts from the repository root two levels up and stops
// at the end. setup runs first, on the cluster (pushing images, deploying
// the operator); an error of it fails the suite. onFailure, when not nil,
// runs after failed tests, to print what helps.
func Main(m *testing.M, suite, gate, target string, setup func(c *Cluster) error, onFailure func()) int {
	if os.Getenv(gate) != "1" || os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "%s: skipped; `%s` (as root) runs these tests on a real node\n", suite, target)
		return 0
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	start := time.Now()
	c, err := Up(context.Background(), root, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", suite, err)
		return 1
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: stopping the local cluster: %v\n", suite, err)
		}
	}()
	fmt.Fprintf(os.Stderr, "%s: cluster with a real node up in %s\n", suite, time.Since(start).Round(time.Millisecond))
	if err := setup(c); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", suite, err)
		c.printNodeLogs()
		return 1
	}
	code := m.Run()
	if code != 0 {
		if onFailure != nil {
			onFailure()
		}
		c.printNodeLogs()
	}
	return code
}

// printNodeLogs prints the end of the logs of the node's network
// processes: what a Pod that cannot reach a Service needs explained.
func (c *Cluster) printNodeLogs() {
	for _, name := range []string{"kube-proxy", "kube-router", "kubelet"} {
		fmt.Fprintf(os.Stderr, "--- end of the log of %s\n%s\n", name, c.lc.LogTail(name, 30))
	}
}

// WebAppManifest is a dev-tier WebApp of the stand-in app with its
// PostgreSQL database.
func WebAppManifest(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: web.acme.com/v1alpha1
kind: WebApp
metadata:
  name: %s
spec:
  deploymentTier: dev
  webAppImage: %s
  webAppHostname: %s.example.test
  webAppReplicas: %d
  database:
    image: {repository: %s, tag: %q}
`, name, AppImage, name, replicas, PostgresRepo, PostgresTag)
}

package real

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acme/platform-operator/internal/devtools/process"
)

// startHostRuntime runs bin/manager on the host against the suite's
// cluster with watches (in dir, its working directory), its releases
// acting as the ServiceAccount serviceAccount bound to the ClusterRole
// deployer, and stops it when the test ends; on a failure the test's log
// gets the tail of its log. Beside the installed operator, it reconciles
// the test's own kind.
func startHostRuntime(t *testing.T, dir, name, watches, serviceAccount, deployer string) *process.Process {
	t.Helper()
	metricsAddr, err := process.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	probeAddr, err := process.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(cluster.Root, "bin", "manager"),
		"--watches-file", watches, "--release-service-account", serviceAccount, "--release-deployer-role", deployer,
		"--metrics-bind-address", metricsAddr, "--metrics-secure=false", "--health-probe-bind-address", probeAddr, "--zap-devel")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig, "POD_NAMESPACE="+operatorNamespace)
	logPath := filepath.Join(dir, name+".log")
	p, err := process.Start(name, cmd, metricsAddr, logPath, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Stop(10 * time.Second)
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("%s log (tail, without stack frames):\n%s", name, tail(string(log), 60))
		}
	})
	return p
}

// deployerRole installs the repository's release-deployer ClusterRole
// (from dir, a copy of the repository) as name, removed when the test
// ends.
func deployerRole(t *testing.T, dir, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "config", "rbac", "release_deployer_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cluster.Apply(t, "", replaceOnce(string(data), "name: release-deployer", "name: "+name))
	t.Cleanup(func() { _, _ = cluster.Kubectl("delete", "clusterrole", name) })
}

func replaceOnce(s, old, new string) string { return strings.Replace(s, old, new, 1) }

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// startKindRuntime starts a runtime for kind alone (the suite's runtime
// serves the shipped kinds) from repo, a copy of the repository that
// `make kind` added kind to, and returns it; the test's cleanup stops it
// and removes what it created. It runs as the deployed operator does: as a
// ServiceAccount bound to exactly the copy's generated ClusterRole, and
// applying releases as platform-operator-release, which it creates in
// each release's namespace bound to the copy's generated deployer role.
// prefix names the ClusterRoles, the ServiceAccount and the files.
func startKindRuntime(t *testing.T, repo, kind, prefix string) *operatorProcess {
	t.Helper()
	g := NewWithT(t)
	role, deployer, account := prefix+"-manager-role", prefix+"-release-deployer", prefix+"-operator"

	roleYAML, err := os.ReadFile(filepath.Join(repo, "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	renamed := strings.Replace(string(roleYAML), "name: manager-role", "name: "+role, 1)
	env.Apply(t, "", strings.ReplaceAll(renamed, "platform-operator-release-deployer", deployer))
	deployerYAML, err := os.ReadFile(filepath.Join(repo, "config", "rbac", "release_deployer_role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	env.Apply(t, "", strings.Replace(string(deployerYAML), "name: release-deployer", "name: "+deployer, 1))
	out, err := env.Kubectl("create", "serviceaccount", account, "-n", operatorNamespace)
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = env.Kubectl("create", "clusterrolebinding", account, "--clusterrole="+role, "--serviceaccount="+operatorNamespace+":"+account)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() {
		_, _ = env.Kubectl("delete", "clusterrolebinding", account)
		_, _ = env.Kubectl("delete", "clusterrole", role, deployer)
		_, _ = env.Kubectl("delete", "serviceaccount", account, "-n", operatorNamespace)
	})
	kubeconfig, err := serviceAccountKubeconfigFile(operatorNamespace, account, filepath.Join(repo, prefix+".kubeconfig"))
	g.Expect(err).NotTo(HaveOccurred())

	data, err := os.ReadFile(filepath.Join(repo, "watches.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var entries []map[string]any
	g.Expect(yaml.Unmarshal(data, &entries)).To(Succeed())
	var own []map[string]any
	for _, e := range entries {
		if e["kind"] == kind {
			own = append(own, e)
		}
	}
	g.Expect(own).To(HaveLen(1), "watches.yaml has one %s entry", kind)
	data, err = yaml.Marshal(own)
	g.Expect(err).NotTo(HaveOccurred())
	watches := prefix + "-watches.yaml"
	g.Expect(os.WriteFile(filepath.Join(repo, watches), data, 0o644)).To(Succeed())
	runtime := &operatorProcess{
		name: prefix + "-manager", bin: env.manager.bin, logPath: filepath.Join(filepath.Dir(env.manager.logPath), prefix+"-manager.log"),
		kubeconfig: kubeconfig, dir: repo,
		fixedArgs: []string{"--watches-file", watches, "--release-service-account", releaseServiceAccount, "--release-deployer-role", deployer},
	}
	g.Expect(runtime.start()).To(Succeed())
	t.Cleanup(func() { _ = runtime.stop() })
	return runtime
}

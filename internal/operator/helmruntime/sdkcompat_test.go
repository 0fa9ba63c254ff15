package helmruntime

import (
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/record"
)

// parseSDK parses args as the manager does, with env as the environment.
func parseSDK(args []string, env map[string]string) (Options, error) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	o.BindFlags(fs)
	f := o.BindOperatorSDKFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return o, f.Apply(fs, lookup, logr.Discard())
}

// TestOperatorSDKFlags: the arguments of an operator-sdk helm-operator
// Deployment work unchanged, with the same conflicts refused.
func TestOperatorSDKFlags(t *testing.T) {
	g := NewWithT(t)
	o, err := parseSDK([]string{"--metrics-addr=127.0.0.1:8080", "--enable-leader-election", "--leader-election-id=old-lock",
		"--suppress-override-values", "--watches-file=w.yaml", "--max-concurrent-reconciles=3", "--reconcile-period=2m"}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.MetricsBindAddress).To(Equal("127.0.0.1:8080"))
	g.Expect(o.LeaderElect).To(BeTrue())
	g.Expect(o.LeaderElectionID).To(Equal("old-lock"))
	g.Expect(o.SuppressOverrideValues).To(BeTrue())

	o, err = parseSDK(nil, map[string]string{OperatorNameEnvVar: "legacy"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.LeaderElectionID).To(Equal("legacy"), "OPERATOR_NAME names the lock when no flag does")
	o, err = parseSDK([]string{"--leader-election-id=lock"}, map[string]string{OperatorNameEnvVar: "legacy"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.LeaderElectionID).To(Equal("lock"))

	for _, bad := range [][]string{
		{"--metrics-addr=:1", "--metrics-bind-address=:2"},
		{"--enable-leader-election", "--leader-elect"},
		{"--config=controller_manager_config.yaml"},
		{"--metrics-require-rbac", "--metrics-secure=false"},
	} {
		_, err := parseSDK(bad, nil)
		g.Expect(err).To(HaveOccurred(), "%v", bad)
	}
	_, err = parseSDK([]string{"--metrics-require-rbac", "--metrics-secure"}, nil)
	g.Expect(err).NotTo(HaveOccurred())
}

// TestMaskedOverrides: with --suppress-override-values the library's
// Events name the overridden value, not what it was set to.
func TestMaskedOverrides(t *testing.T) {
	g := NewWithT(t)
	fake := record.NewFakeRecorder(2)
	r := maskedOverrides{fake}
	r.Eventf(nil, "Warning", reasonValueOverridden, "Chart value %q overridden to %q by operator", "db.password", "s3cret")
	r.Eventf(nil, "Normal", "Other", "%s %s", "a", "b")
	g.Expect(<-fake.Events).To(Equal(`Warning ValueOverridden Chart value "db.password" overridden to "****" by operator`))
	g.Expect(<-fake.Events).To(Equal("Normal Other a b"))
}

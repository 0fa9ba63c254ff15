package managersetup

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestFlagsAndManagerOptions(t *testing.T) {
	g := NewWithT(t)
	o := Defaults("lease", ":8444", ":8082")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs, "sidecar")
	g.Expect(fs.Parse([]string{"--leader-elect", "--leader-election-namespace=ops", "--metrics-secure=false", "--leader-election-lease-duration=30s"})).To(Succeed())
	g.Expect(o.Validate()).To(Succeed())

	scheme := runtime.NewScheme()
	mo := o.ManagerOptions(scheme)
	g.Expect(mo.Scheme).To(BeIdenticalTo(scheme))
	g.Expect(mo.LeaderElection).To(BeTrue())
	g.Expect(mo.LeaderElectionID).To(Equal("lease"))
	g.Expect(mo.LeaderElectionNamespace).To(Equal("ops"))
	g.Expect(mo.LeaderElectionReleaseOnCancel).To(BeTrue())
	g.Expect(*mo.LeaseDuration).To(Equal(30 * time.Second))
	g.Expect(*mo.GracefulShutdownTimeout).To(Equal(GracefulShutdownTimeout))
	g.Expect(mo.HealthProbeBindAddress).To(Equal(":8082"))
	g.Expect(mo.Metrics.BindAddress).To(Equal(":8444"))
	g.Expect(mo.Metrics.SecureServing).To(BeFalse())
	g.Expect(mo.PprofBindAddress).To(Equal("0"))
}

func TestValidate(t *testing.T) {
	g := NewWithT(t)
	o := Defaults("", ":8443", ":8081")
	g.Expect(o.Validate()).To(Succeed()) // no Lease needed without leader election
	o.LeaderElect = true
	g.Expect(o.Validate()).To(MatchError(ContainSubstring("leader election ID must not be empty")))
	o.LeaderElectionID = "lease"
	o.LeaderElectionTiming.RenewDeadline = o.LeaderElectionTiming.LeaseDuration + time.Second
	g.Expect(o.Validate()).To(HaveOccurred())
}

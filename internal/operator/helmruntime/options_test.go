package helmruntime

import (
	"crypto/tls"
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"github.com/spf13/pflag"

	"github.com/acme/platform-operator/internal/operator/managersetup"
	"github.com/acme/platform-operator/internal/operator/releaseidentity"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

func TestDefaultOptions(t *testing.T) {
	g := NewWithT(t)
	o := DefaultOptions()

	g.Expect(o.WatchesFile).To(Equal("./watches.yaml"))                       // read from the working directory
	g.Expect(o.LeaderElect).To(BeFalse())                                     // single replica unless asked
	g.Expect(o.LeaderElectionID).To(Equal("platform-operator-helm.acme.com")) // Lease name
	g.Expect(o.LeaderElectionNamespace).To(BeEmpty())                         // in-cluster namespace
	g.Expect(o.MetricsBindAddress).To(Equal(":8443"))                         // HTTPS metrics port
	g.Expect(o.MetricsSecure).To(BeTrue())                                    // authn/authz-guarded HTTPS
	g.Expect(o.EnableHTTP2).To(BeFalse())                                     // HTTP/1.1 only
	g.Expect(o.HealthProbeBindAddress).To(Equal(":8081"))                     // /healthz, /readyz
	g.Expect(o.ReconcilePeriod).To(Equal(time.Hour))                          // fallback resync period
	g.Expect(o.MaxConcurrentReconciles).To(Equal(4 * runtime.NumCPU()))       // fallback parallelism
	g.Expect(o.MaxReleaseHistory).To(Equal(10))                               // revisions kept
	g.Expect(o.ReleaseNamespace).To(BeEmpty())                                // resolved by Complete
	g.Expect(o.WatchNamespaces).To(BeNil())                                   // resolved by Complete
	g.Expect(o.ReleaseIdentity.ServiceAccount).To(BeEmpty())                  // the operator's own rights
}

func TestBindFlags(t *testing.T) {
	t.Run("no flags keeps the defaults", func(t *testing.T) {
		g := NewWithT(t)
		o := DefaultOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.BindFlags(fs)
		g.Expect(fs.Parse(nil)).To(Succeed())
		g.Expect(o).To(Equal(DefaultOptions()))
	})

	t.Run("every flag sets its field", func(t *testing.T) {
		g := NewWithT(t)
		o := DefaultOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.BindFlags(fs)
		g.Expect(fs.Parse([]string{
			"--watches-file=/etc/operator/watches.yaml",
			"--leader-elect",
			"--leader-election-id=other-id",
			"--leader-election-namespace=ops",
			"--leader-election-lease-duration=30s",
			"--leader-election-renew-deadline=20s",
			"--leader-election-retry-period=4s",
			"--metrics-bind-address=0",
			"--metrics-secure=false",
			"--enable-http2",
			"--health-probe-bind-address=:9090",
			"--pprof-bind-address=127.0.0.1:6060",
			"--reconcile-period=30s",
			"--max-concurrent-reconciles=7",
			"--max-release-history=0",
			"--release-namespace=releases",
			"--release-service-account=platform-operator-release",
			"--release-deployer-role=tenant-deployer",
		})).To(Succeed())

		g.Expect(o).To(Equal(Options{
			WatchesFile: "/etc/operator/watches.yaml",
			Options: managersetup.Options{
				LeaderElect:             true,
				LeaderElectionID:        "other-id",
				LeaderElectionNamespace: "ops",
				LeaderElectionTiming: managersetup.LeaderElectionTiming{
					LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 4 * time.Second,
				},
				MetricsBindAddress:     "0",
				MetricsSecure:          false,
				EnableHTTP2:            true,
				HealthProbeBindAddress: ":9090",
				PprofBindAddress:       "127.0.0.1:6060",
			},
			ReconcilePeriod:         30 * time.Second,
			MaxConcurrentReconciles: 7,
			MaxReleaseHistory:       0,
			ReleaseNamespace:        "releases",
			ReleaseIdentity:         releaseidentity.Options{ServiceAccount: "platform-operator-release", DeployerRole: "tenant-deployer"},
		}))
	})
}

func TestResolveWatchDefaultsFromOptions(t *testing.T) {
	g := NewWithT(t)
	o := DefaultOptions()
	o.ReconcilePeriod = 3 * time.Minute
	o.MaxConcurrentReconciles = 2
	o.MaxReleaseHistory = 0
	g.Expect(o.WatchDefaults()).To(Equal(watchconfig.WatchDefaults{
		ReconcilePeriod:         3 * time.Minute,
		MaxConcurrentReconciles: 2,
		MaxReleaseHistory:       0, // unlimited
	}))
}

func TestComplete(t *testing.T) {
	t.Run("fills release and watch namespaces from the environment", func(t *testing.T) {
		g := NewWithT(t)
		o := DefaultOptions()
		g.Expect(o.Complete(watchconfig.EnvOf(map[string]string{
			watchconfig.PodNamespaceEnvVar:   "operator-ns",
			watchconfig.WatchNamespaceEnvVar: "a,b",
		}, nil))).To(Succeed())
		g.Expect(o.ReleaseNamespace).To(Equal("operator-ns"))
		g.Expect(o.WatchNamespaces).To(Equal([]string{"a", "b"}))
	})

	t.Run("keeps explicit values", func(t *testing.T) {
		g := NewWithT(t)
		o := DefaultOptions()
		o.ReleaseNamespace = "from-flag"
		o.WatchNamespaces = []string{}
		g.Expect(o.Complete(watchconfig.EnvOf(map[string]string{
			watchconfig.PodNamespaceEnvVar:   "operator-ns",
			watchconfig.WatchNamespaceEnvVar: "a,b",
		}, nil))).To(Succeed())
		g.Expect(o.ReleaseNamespace).To(Equal("from-flag"))
		g.Expect(o.WatchNamespaces).To(BeEmpty())
	})

	t.Run("rejects invalid options", func(t *testing.T) {
		g := NewWithT(t)
		o := DefaultOptions()
		o.WatchesFile = ""
		o.ReconcilePeriod = -time.Second
		o.MaxConcurrentReconciles = 0
		o.MaxReleaseHistory = -1
		o.LeaderElect = true
		o.LeaderElectionID = ""
		err := o.Complete(watchconfig.EnvOf(nil, nil))
		g.Expect(err).To(HaveOccurred())
		for _, want := range []string{"watches file", "leader election ID", "reconcile period", "max concurrent reconciles", "max release history"} {
			g.Expect(err.Error()).To(ContainSubstring(want))
		}
	})
}

func TestManagerOptions(t *testing.T) {
	t.Run("defaults: secure metrics, HTTP/1.1 only", func(t *testing.T) {
		g := NewWithT(t)
		o := DefaultOptions()
		o.ReleaseNamespace = "x"
		m := ManagerOptions(o, nil, nil)

		g.Expect(m.Metrics.BindAddress).To(Equal(":8443"))
		g.Expect(m.Metrics.SecureServing).To(BeTrue())
		g.Expect(m.Metrics.FilterProvider).NotTo(BeNil()) // authn/authz filter
		g.Expect(m.Metrics.TLSOpts).To(HaveLen(1))
		c := &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
		m.Metrics.TLSOpts[0](c)
		g.Expect(c.NextProtos).To(Equal([]string{"http/1.1"}))

		g.Expect(m.HealthProbeBindAddress).To(Equal(":8081"))
		g.Expect(m.LeaderElection).To(BeFalse())
		g.Expect(m.LeaderElectionID).To(Equal(DefaultLeaderElectionID))
		g.Expect(m.LeaderElectionNamespace).To(BeEmpty())
		// A standby takes over within 20 s (see managersetup.LeaderElectionTiming).
		g.Expect(*m.LeaseDuration).To(Equal(12 * time.Second))
		g.Expect(*m.RenewDeadline).To(Equal(8 * time.Second))
		g.Expect(*m.RetryPeriod).To(Equal(time.Second))
		g.Expect(m.Cache.DefaultNamespaces).To(BeNil())
		g.Expect(m.Scheme).NotTo(BeNil())
	})

	t.Run("plain HTTP metrics, HTTP/2, leader election, watched namespaces", func(t *testing.T) {
		g := NewWithT(t)
		o := DefaultOptions()
		o.MetricsSecure = false
		o.EnableHTTP2 = true
		o.LeaderElect = true
		o.LeaderElectionNamespace = "ops"
		o.WatchNamespaces = []string{"team-a"}
		m := ManagerOptions(o, nil, nil)

		g.Expect(m.Metrics.SecureServing).To(BeFalse())
		g.Expect(m.Metrics.FilterProvider).To(BeNil())
		g.Expect(m.Metrics.TLSOpts).To(BeEmpty())
		g.Expect(m.LeaderElection).To(BeTrue())
		g.Expect(m.LeaderElectionNamespace).To(Equal("ops"))
		g.Expect(m.Cache.DefaultNamespaces).To(HaveKey("team-a"))
	})
}

func TestRunRejectsBadInput(t *testing.T) {
	g := NewWithT(t)

	o := DefaultOptions()
	err := Run(t.Context(), nil, o) // no release namespace: not completed
	g.Expect(err).To(MatchError(ContainSubstring("release namespace")))

	o.ReleaseNamespace = "x"
	o.WatchesFile = "testdata/does-not-exist.yaml"
	err = Run(t.Context(), nil, o)
	g.Expect(err).To(MatchError(ContainSubstring("load watches file")))
	g.Expect(errors.Is(err, fs.ErrNotExist)).To(BeTrue())
}

func TestLoadTestWatches(t *testing.T) {
	// The watches file of the integration test goes through the library's
	// loader and our resolution exactly as in production.
	g := NewWithT(t)
	ws, err := watches.Load("testdata/watches.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	rws, err := watchconfig.ResolveAll(ws, watchconfig.WatchDefaults{ReconcilePeriod: time.Hour, MaxConcurrentReconciles: 2, MaxReleaseHistory: 10})
	g.Expect(err).NotTo(HaveOccurred())

	byKind := map[string]watchconfig.ResolvedWatch{}
	for _, rw := range rws {
		byKind[strings.ToLower(rw.GVK.Kind)] = rw
	}
	g.Expect(byKind).To(HaveLen(8))
	g.Expect(byKind["widget"].WatchDependentResources).To(BeTrue())
	g.Expect(byKind["widget"].OverrideValues).To(Equal(map[string]string{"enforced": "from-operator"}))
	g.Expect(byKind["widget"].ReconcilePeriod).To(Equal(time.Hour))
	g.Expect(byKind["gadget"].WatchDependentResources).To(BeFalse())
	g.Expect(byKind["gadget"].Selector.MatchLabels).To(HaveKeyWithValue("test.acme.com/managed", "true"))
	g.Expect(byKind["ticker"].ReconcilePeriod).To(Equal(2 * time.Second))
	g.Expect(byKind["ticker"].MaxConcurrentReconciles).To(Equal(3))
	g.Expect(byKind["tenant"].Chart.Name()).To(Equal("tenant"))
	g.Expect(byKind["vault"].Chart.Name()).To(Equal("vault"))
	g.Expect(byKind["crate"].Chart.Name()).To(Equal("box"))
	g.Expect(byKind["parcel"].Chart.Name()).To(Equal("box"))
	postRenders, err := watchconfig.LoadPostRender("testdata/watches.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	watchconfig.SetPostRender(rws, postRenders)
	for _, rw := range rws {
		g.Expect(rw.PostRender != nil).To(Equal(rw.GVK.Kind == "Parcel"), "only Parcel has postRender: %s", rw.GVK.Kind)
	}
}

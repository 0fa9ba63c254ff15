package managersetup

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
)

func TestDefaultTimingFailsOverWithin20s(t *testing.T) {
	g := NewWithT(t)
	d := DefaultLeaderElectionTiming()
	g.Expect(d.Validate()).To(Succeed())
	g.Expect(d.MaxTakeover()).To(Equal(16400 * time.Millisecond))
}

func TestTimingFlagsAndValidation(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // substring; "" means valid
	}{
		{name: "defaults", args: nil},
		{name: "slower but consistent", args: []string{"--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s", "--leader-election-retry-period=4s"}},
		{name: "renew deadline not below the lease", args: []string{"--leader-election-renew-deadline=12s"},
			wantErr: "--leader-election-lease-duration (12s) must be more than --leader-election-renew-deadline (12s)"},
		// client-go refuses a renew deadline within the jittered retry.
		{name: "retry too close to the renew deadline", args: []string{"--leader-election-retry-period=7s"},
			wantErr: "--leader-election-renew-deadline (8s) must be more than 1.2 times --leader-election-retry-period (7s)"},
		{name: "no retry period", args: []string{"--leader-election-retry-period=0s"},
			wantErr: "--leader-election-retry-period must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			timing := DefaultLeaderElectionTiming()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			timing.BindFlags(fs)
			g.Expect(fs.Parse(tt.args)).To(Succeed())
			err := timing.Validate()
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

package managersetup

// The leader election timing shared by the operator's two processes (the
// Helm runtime and the extensions sidecar), its flags, and the failover
// time it implies.

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
)

// LeaderElectionTiming is how long a Lease is valid and how often it is renewed and
// retried.
//
// A standby replica takes over a killed leader's Lease at most
// MaxTakeover() after the kill: it notices the last renewal up to one
// jittered retry late, waits LeaseDuration from then, and tries again up
// to one jittered retry later (client-go jitters retries by up to 1.2x
// RetryPeriod). The defaults give 16.4 s, inside the 20 s the operator
// promises.
type LeaderElectionTiming struct {
	// LeaseDuration is how long standbys wait, from the last renewal they
	// saw, before they take the Lease.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leadership.
	RenewDeadline time.Duration
	// RetryPeriod is the interval between renewals and acquisition tries.
	RetryPeriod time.Duration
}

// retryJitter is client-go's jitter factor on acquisition retries.
const retryJitter = 1.2

// DefaultLeaderElectionTiming returns the timing used when no flag is given.
func DefaultLeaderElectionTiming() LeaderElectionTiming {
	return LeaderElectionTiming{LeaseDuration: 12 * time.Second, RenewDeadline: 8 * time.Second, RetryPeriod: time.Second}
}

// BindFlags registers the timing as flags; call it on DefaultLeaderElectionTiming.
func (t *LeaderElectionTiming) BindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&t.LeaseDuration, "leader-election-lease-duration", t.LeaseDuration,
		"How long standby replicas wait after the leader's last renewal before they take over.")
	fs.DurationVar(&t.RenewDeadline, "leader-election-renew-deadline", t.RenewDeadline,
		"How long the leader retries renewing its Lease before it steps down; below the lease duration.")
	fs.DurationVar(&t.RetryPeriod, "leader-election-retry-period", t.RetryPeriod,
		"Interval between Lease renewals and acquisition tries.")
}

// Validate reports timings client-go would refuse, with the flag names.
func (t LeaderElectionTiming) Validate() error {
	var errs []error
	if t.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--leader-election-retry-period must be positive, got %s", t.RetryPeriod))
	}
	if float64(t.RenewDeadline) <= retryJitter*float64(t.RetryPeriod) {
		errs = append(errs, fmt.Errorf("--leader-election-renew-deadline (%s) must be more than %.1f times --leader-election-retry-period (%s)",
			t.RenewDeadline, retryJitter, t.RetryPeriod))
	}
	if t.LeaseDuration <= t.RenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-election-lease-duration (%s) must be more than --leader-election-renew-deadline (%s)",
			t.LeaseDuration, t.RenewDeadline))
	}
	return errors.Join(errs...)
}

// MaxTakeover is the longest a standby takes to lead after the leader was
// killed (see LeaderElectionTiming).
func (t LeaderElectionTiming) MaxTakeover() time.Duration {
	retry := time.Duration((1 + retryJitter) * float64(t.RetryPeriod))
	return retry + t.LeaseDuration + retry
}

// Apply sets the timing on manager options.
func (t LeaderElectionTiming) Apply(o *ctrl.Options) {
	o.LeaseDuration = &t.LeaseDuration
	o.RenewDeadline = &t.RenewDeadline
	o.RetryPeriod = &t.RetryPeriod
}

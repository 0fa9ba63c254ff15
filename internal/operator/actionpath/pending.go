package actionpath

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/release"
)

// A Helm action first stores its new revision as pending-install,
// pending-upgrade or pending-rollback and marks it deployed or failed when
// it ends. A process killed in between (kill -9, OOM, node loss), or an
// action whose final write the API server did not take (an outage), leaves
// the revision pending for good, and Helm then refuses every later action on
// the release with "another operation (install/upgrade/rollback) is in
// progress". helm-operator-plugins does not recover from that; the runtime
// does, deliberately:
//
//   - Only the leader unlocks: the check runs inside the reconcile, and the
//     library's controllers run only on the elected leader.
//   - A pending revision is stale when no action of this process is running
//     on the release and one of these holds: it was started before this
//     process became the leader (whoever started it has lost the lease, so
//     it cannot finish it); it was started by an action of this process that
//     has returned (Helm could not record the outcome); or it is older than
//     the stale-pending timeout (a third party, say a person running helm,
//     that never finished).
//   - Unlocking marks the stale revision failed, as a person would with
//     `helm rollback` or Flux's helm-controller does: no objects are touched
//     and the values stored with the release (including generated ones) are
//     kept. The same reconcile then goes on as for any failed release: the
//     library upgrades it to the current spec, and if that upgrade fails it
//     rolls back to the last deployed revision.
//   - The unlock is reported as a Warning Event (reason
//     PendingReleaseUnlocked), a log line, and the Recovered condition of the
//     custom resource, whose message says which revision was left in which
//     state since when, and why it was judged stale.

const (
	// DefaultStalePendingTimeout is how old a pending revision that this
	// process knows nothing about must be before it is unlocked. It is
	// longer than DefaultHookTimeout, so that an action started by a
	// healthy third party has ended by then.
	DefaultStalePendingTimeout = 10 * time.Minute

	// ConditionRecovered is the condition type the runtime adds to a custom
	// resource whose release it unlocked. It stays as the record of the last
	// recovery; the library's conditions describe the release itself.
	ConditionRecovered = "Recovered"
	// ReasonPendingReleaseUnlocked is the reason of the Recovered condition
	// and of the Warning Event emitted when a stale pending release is
	// unlocked.
	ReasonPendingReleaseUnlocked = "PendingReleaseUnlocked"
)

// Why a pending revision was judged stale.
const (
	staleBeforeLeadership = "it was started before this process became the leader, so the process that started it no longer holds the leader lease"
	staleOwnActionEnded   = "the action of this process that started it has returned without recording its outcome"
	staleTimeout          = "it is older than the stale-pending timeout and no action of this process is running on it"
)

// staleUnlocker unlocks the stale pending releases of one kind.
type staleUnlocker struct {
	log        logr.Logger
	recorder   record.EventRecorder
	status     client.Client
	activity   *Activity
	shardID    string
	staleAfter time.Duration
}

func newStaleUnlocker(log logr.Logger, recorder record.EventRecorder, status client.Client, activity *Activity, shardID string, staleAfter time.Duration) *staleUnlocker {
	return &staleUnlocker{log: log, recorder: recorder, status: status, activity: activity, shardID: shardID, staleAfter: staleAfter}
}

// unlockIfStale marks the latest revision of t's release failed when it
// is pending and stale, and reports it. ac is t's action client: the
// release is read as every layer reads it.
func (u *staleUnlocker) unlockIfStale(ctx context.Context, ac actionClient, t target) error {
	obj, key := t.obj, t.key()
	cfg := ac.Config()
	if cfg == nil || cfg.Releases == nil {
		return nil
	}
	name := obj.GetName()
	last, err := ac.Get(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read release %s: %w", key, err)
	}
	if last.Info == nil || !last.Info.Status.IsPending() {
		return nil
	}
	log := u.log.WithValues("release", key, "version", last.Version, "status", string(last.Info.Status))
	started := last.Info.LastDeployed.Time
	otherShard := last.Labels[release.ShardLabel] != u.shardID
	why, stale := u.activity.staleness(key, started, u.staleAfter, otherShard)
	if !stale {
		log.Info("Release is pending and may still be in progress; not unlocking it yet",
			"since", started.UTC().Format(time.RFC3339), "staleAfter", u.staleAfter.String(), "otherShard", otherShard)
		return nil
	}

	pendingStatus := last.Info.Status
	msg := fmt.Sprintf("revision %d of release %s was left %s since %s (%s ago): %s; marked it failed, so that the release is upgraded to the current spec (or rolled back to its last deployed revision if that upgrade fails)",
		last.Version, key, pendingStatus, started.UTC().Format(time.RFC3339),
		u.activity.clock.Since(started).Round(time.Second), why)
	unlocked := *last
	info := *last.Info
	unlocked.Info = &info
	unlocked.SetStatus(hrelease.StatusFailed, "Unlocked by the operator: "+msg)
	if err := cfg.Releases.Update(&unlocked); err != nil {
		return fmt.Errorf("unlock release %s left %s: %w", key, pendingStatus, err)
	}
	log.Info("Unlocked a stale pending release", "reason", why)
	u.recorder.Event(obj, corev1.EventTypeWarning, ReasonPendingReleaseUnlocked, "Unlocked: "+msg)
	if err := u.setRecoveredCondition(ctx, obj, msg); err != nil {
		// The Event and the release record tell the story already.
		log.Info("Could not set the Recovered condition", "error", err.Error())
	}
	return nil
}

// setRecoveredCondition sets the Recovered condition on obj.
func (u *staleUnlocker) setRecoveredCondition(ctx context.Context, obj client.Object, msg string) error {
	return patchCondition(ctx, u.status, obj, ConditionRecovered,
		&condition{Status: string(metav1.ConditionTrue), Reason: ReasonPendingReleaseUnlocked, Message: msg}, u.activity.clock.Now())
}

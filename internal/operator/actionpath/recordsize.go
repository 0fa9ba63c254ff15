package actionpath

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/acme/platform-operator/internal/operator/release"
)

// The record size layer refuses a release whose record Helm could not
// store: each revision is one Secret, which the API server refuses over
// 1 MiB (the rule is release.CheckRecord's; the admission check applies it
// at apply, this layer to what the webhook did not see):
//
//   - The release storage measures each new record before it sends it, and
//     refuses one that is too large (helmstorage.LimitRecordSize). An
//     install's first write is its record, so a refused install has
//     written nothing.
//   - The release of a dry-run upgrade is measured here, so that an upgrade
//     whose record is too large is refused before Helm writes anything,
//     not even the pruning of the oldest revision that makes room for the
//     new one. A dry-run the digest layer answers is not measured: its
//     release is stored already.
//   - The API server's own refusal of a record for its size
//     (release.RecordRefused), for a limit the measure did not foresee, is
//     refused the same way.
//   - The refusal is terminal and reported as the confinement layer's: a
//     Warning Event with ReasonReleaseTooLarge, the reason kept for the
//     status writer (refusals.go), the resource reconciled again when it
//     changes or at its periodic resync, not retried with backoff.

// ReasonReleaseTooLarge is the reason of the Warning Event, and of the
// status conditions, of a release refused because its record would be
// larger than a Secret may hold.
const ReasonReleaseTooLarge = "ReleaseTooLarge"

// recordSizes is the layer that refuses a release whose record is too
// large (see above).
func recordSizes(log logr.Logger, recorder record.EventRecorder) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, t target, below actionClient) actionClient {
		return &recordSizeClient{actionClient: below, log: log, recorder: recorder, t: t}
	}
}

// recordSizeClient reports the installs and upgrades of one resource that
// are refused for the size of their record.
type recordSizeClient struct {
	actionClient
	log      logr.Logger
	recorder record.EventRecorder
	t        target
}

// Install installs the release unless its record is too large.
func (c *recordSizeClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*hrelease.Release, error) {
	rel, err := c.actionClient.Install(name, namespace, chrt, vals, opts...)
	return rel, c.refused(name, vals, err)
}

// Upgrade upgrades the release unless its record is too large.
func (c *recordSizeClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	rel, err := c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
	return rel, c.refused(name, vals, err)
}

// DryRunUpgrade renders the upgrade, refused when the record of the
// release it renders is too large.
func (c *recordSizeClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	rel, err := c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
	if err == nil && rel != nil {
		if err = release.CheckRecord(rel); err != nil {
			rel = nil
		}
	}
	return rel, c.refused(name, vals, err)
}

// refused reports a refusal for the record's size in err, and returns it
// terminal and without Helm's wrapping, so that the condition's message is
// the refusal's alone; any other err is returned as it is.
func (c *recordSizeClient) refused(name string, vals map[string]interface{}, err error) error {
	var tooLarge *release.RecordTooLargeError
	if !errors.As(err, &tooLarge) {
		if !release.RecordRefused(err) {
			return err
		}
		tooLarge = &release.RecordTooLargeError{Release: name, Namespace: c.t.namespace, Largest: release.LargestValues(vals), Err: err}
	}
	c.log.Info("The release's record is larger than a Secret may hold; not applying it",
		"release", c.t.key(), "size", tooLarge.Size, "error", tooLarge.Error())
	c.recorder.Event(c.t.obj, corev1.EventTypeWarning, ReasonReleaseTooLarge, tooLarge.Error())
	refused(c.t.obj, ReasonReleaseTooLarge, tooLarge.Error())
	return terminal{tooLarge}
}

// refusedForSize reports whether err is the record size layer's refusal,
// which that layer has reported already.
func refusedForSize(err error) bool {
	var tooLarge *release.RecordTooLargeError
	return errors.As(err, &tooLarge)
}

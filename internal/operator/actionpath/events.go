package actionpath

import (
	"context"
	"errors"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// Reasons of the Warning Events of failed actions.
const (
	ReasonInstallFailed       = "InstallFailed"
	ReasonUpgradeFailed       = "UpgradeFailed"
	ReasonUpgradeDryRunFailed = "UpgradeDryRunFailed"
	ReasonUninstallFailed     = "UninstallFailed"
)

// failureEvents is the layer that reports every failed action as a Warning
// Event on the custom resource: the library only sets conditions, which
// keep the last failure, while Events keep each one for `kubectl
// describe`. Refusals of the ownership, confinement and record size layers
// are not reported here; those layers report them with their own reasons.
func failureEvents(recorder record.EventRecorder) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, t target, below actionClient) actionClient {
		return &failureEventsClient{actionClient: below, t: t, recorder: recorder}
	}
}

// failureEventsClient records an Event for each failed action.
type failureEventsClient struct {
	actionClient
	t        target
	recorder record.EventRecorder
}

// Install installs the release; a failure is an Event.
func (c *failureEventsClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	rel, err := c.actionClient.Install(name, namespace, chrt, vals, opts...)
	c.failed(err, ReasonInstallFailed, "Install")
	return rel, err
}

// DryRunUpgrade renders the release for the current spec; a failure is an Event.
func (c *failureEventsClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	rel, err := c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
	if err != nil && !reportedRefusal(err) {
		c.recorder.Eventf(c.t.obj, corev1.EventTypeWarning, ReasonUpgradeDryRunFailed, "Rendering release %s for the current spec failed (retried with backoff): %v", c.t.key(), err)
	}
	return rel, err
}

// Upgrade upgrades the release; a failure is an Event.
func (c *failureEventsClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	rel, err := c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
	c.failed(err, ReasonUpgradeFailed, "Upgrade")
	return rel, err
}

// Uninstall uninstalls the release; a failure is an Event (a release that
// is already gone is not a failure).
func (c *failureEventsClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	resp, err := c.actionClient.Uninstall(name, opts...)
	if !errors.Is(err, driver.ErrReleaseNotFound) {
		c.failed(err, ReasonUninstallFailed, "Uninstall")
	}
	return resp, err
}

// failed records the Event of a failed action, unless err is nil or a
// refusal the ownership, confinement or record size layer reported.
func (c *failureEventsClient) failed(err error, reason, action string) {
	if err == nil || reportedRefusal(err) {
		return
	}
	c.recorder.Eventf(c.t.obj, corev1.EventTypeWarning, reason, "%s of release %s failed (retried with backoff): %v", action, c.t.key(), err)
}

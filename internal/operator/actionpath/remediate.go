package actionpath

import (
	"context"
	"errors"
	"fmt"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// Remediation of a revision that did not become Ready in time.
//
// The readiness controller decides (readycontroller/remediation.go): when an
// upgrade misses its deadline and the revision before it was Ready, it
// writes its decision to the resource's status.remediation and wakes the
// kind's reconciler. This layer carries the decision out in that
// reconcile, where no other action on the release can run: at the
// library's dry-run upgrade it rolls the release back to the Ready
// revision, and from then on answers the dry-run upgrade of the same spec
// with the release as it is, so that the library finds nothing to upgrade
// and only repairs drift. The spec is applied again when it changes (a new
// generation) or when platform.acme.com/retry takes a new value. The
// decision lives on the resource, so an operator restart between the
// decision and the rollback still rolls back once.

// StatusRemediation is the field of status that holds a Remediation.
const StatusRemediation = "remediation"

// Remediation actions.
const (
	RemediationRollback = "rollback"
	// RemediationNone: the release was reported Stalled and left as it is.
	RemediationNone = "none"
	// RemediationUninstall: a first install was uninstalled.
	RemediationUninstall = "uninstall"
)

// Reasons of the Warning Events of a rollback and of an uninstall, and of
// the refusal to install a spec that was uninstalled.
const (
	ReasonRolledBack  = "RolledBack"
	ReasonUninstalled = "Uninstalled"
)

// HeldError refuses to install a spec whose install was uninstalled for
// not becoming Ready in time, until the spec changes or the retry
// annotation takes a new value.
type HeldError struct{ Message string }

func (e *HeldError) Error() string { return e.Message }

// refusedByRemediation reports whether err is the remediation layer's
// refusal.
func refusedByRemediation(err error) bool {
	var held *HeldError
	return errors.As(err, &held)
}

// Remediation is the last remediation of a resource's release: what the
// readiness controller decided and, once done, what the rollback stored.
// Every field is written, empty or not: the readiness controller writes
// status with a merge patch, which keeps a field the new value omits.
type Remediation struct {
	// Revision is the revision that did not become Ready in time, and
	// Generation the spec generation it applied.
	Revision   int   `json:"revision"`
	Generation int64 `json:"generation"`
	// Retry is the value of the retry annotation when it was decided.
	Retry string `json:"retry"`
	// Action is RemediationRollback or RemediationNone.
	Action string `json:"action"`
	// To is the revision rolled back to; RolledBackAs the revision the
	// rollback stored (0 until it is done).
	To           int `json:"to"`
	RolledBackAs int `json:"rolledBackAs"`
	// Attempt counts the rollbacks of this spec; RetriesLeft is how often
	// it is still upgraded to again, once the rollback is Ready, before it
	// is held back.
	Attempt     int `json:"attempt"`
	RetriesLeft int `json:"retriesLeft"`
	// At is when it was decided (RFC 3339), and Message why.
	At      string `json:"at"`
	Message string `json:"message"`
}

// ReadRemediation reads status.remediation of obj; false when there is
// none or it does not parse.
func ReadRemediation(obj client.Object) (Remediation, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return Remediation{}, false
	}
	m, found, err := unstructured.NestedMap(u.Object, "status", StatusRemediation)
	if err != nil || !found {
		return Remediation{}, false
	}
	return RemediationFrom(m)
}

// RemediationFrom reads a Remediation from its status form.
func RemediationFrom(m map[string]any) (Remediation, bool) {
	var r Remediation
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &r); err != nil || r.Revision == 0 {
		return Remediation{}, false
	}
	return r, true
}

// Map is r's status form.
func (r Remediation) Map() map[string]any {
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&r)
	return m
}

// SameSpec reports whether r was decided for obj's spec as it is: the
// same generation, and the retry annotation with the value it had then.
func (r Remediation) SameSpec(obj client.Object) bool {
	return r.Generation == obj.GetGeneration() && r.Retry == obj.GetAnnotations()[watchconfig.RetryAnnotation]
}

// Holds reports whether r keeps obj's spec from being applied: it rolled
// back (or is to roll back) the revision of obj's spec as it is, and no
// retry is left.
func (r Remediation) Holds(obj client.Object) bool {
	return r.Action == RemediationRollback && r.SameSpec(obj) && r.RetriesLeft == 0
}

// remediations is the layer.
func remediations(recorder record.EventRecorder, activity *Activity) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, t target, below actionClient) actionClient {
		r, ok := ReadRemediation(t.obj)
		if !ok || !r.SameSpec(t.obj) {
			return below
		}
		switch r.Action {
		case RemediationRollback:
			return &remediatingClient{actionClient: below, t: t, r: r, recorder: recorder, activity: activity}
		case RemediationUninstall:
			return &uninstallingClient{actionClient: below, t: t, r: r, recorder: recorder, activity: activity}
		}
		return below
	}
}

// uninstallingClient uninstalls a first install the readiness controller
// gave up on, and installs the same spec no more.
type uninstallingClient struct {
	actionClient
	t        target
	r        Remediation
	recorder record.EventRecorder
	activity *Activity
}

// DryRunUpgrade uninstalls the release when its current revision is the
// one the remediation names.
func (c *uninstallingClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	cur, err := c.Get(name)
	if err != nil || cur.Version != c.r.Revision {
		return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
	}
	if c.activity != nil {
		defer c.activity.begin(c.t.key())()
	}
	if _, err := c.Uninstall(name); err != nil {
		err = fmt.Errorf("uninstall revision %d: %w", c.r.Revision, err)
		c.recorder.Eventf(c.t.obj, corev1.EventTypeWarning, ReasonUninstalled, "Uninstall failed: %v", err)
		return nil, err
	}
	c.recorder.Eventf(c.t.obj, corev1.EventTypeWarning, ReasonUninstalled, "%s; uninstalled. %s", c.r.Message, c.notAgain())
	return nil, c.held()
}

// Install of the spec that was uninstalled is refused.
func (c *uninstallingClient) Install(string, string, *chart.Chart, map[string]interface{}, ...helmclient.InstallOption) (*hrelease.Release, error) {
	return nil, c.held()
}

func (c *uninstallingClient) notAgain() string {
	return fmt.Sprintf("This spec (generation %d) is not installed again until it changes or the annotation %s takes a new value", c.r.Generation, watchconfig.RetryAnnotation)
}

// held is the terminal refusal, with its reason for the status writer.
func (c *uninstallingClient) held() error {
	msg := fmt.Sprintf("%s; uninstalled. %s", c.r.Message, c.notAgain())
	refused(c.t.obj, ReasonUninstalled, msg)
	return terminal{&HeldError{Message: msg}}
}

type remediatingClient struct {
	actionClient
	t        target
	r        Remediation
	recorder record.EventRecorder
	activity *Activity
	// rolledBack: this reconcile rolled back; it upgrades nothing more.
	rolledBack bool
}

// DryRunUpgrade rolls back the revision the remediation names when it is
// still the current one, and answers with the release as it then is;
// once rolled back, the spec is tried again while retries are left, and
// else held back.
func (c *remediatingClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	cur, err := c.Get(name)
	if err != nil {
		return nil, err
	}
	if cur.Version == c.r.Revision {
		c.rolledBack = true
		return c.rollback(name)
	}
	if c.rolledBack || c.r.RetriesLeft == 0 {
		return cur, nil
	}
	return c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
}

// Upgrade upgrades only a spec that is tried again: not in the reconcile
// that rolled back, and not a spec held back.
func (c *remediatingClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	if c.rolledBack || c.r.RetriesLeft == 0 {
		return c.DryRunUpgrade(name, namespace, chrt, vals, opts...)
	}
	return c.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
}

// rollback rolls the release back to c.r.To and returns the revision it
// stored.
func (c *remediatingClient) rollback(name string) (*hrelease.Release, error) {
	if c.activity != nil {
		defer c.activity.begin(c.t.key())()
	}
	cfg := c.Config()
	rb := action.NewRollback(cfg)
	rb.Version = c.r.To
	rb.Timeout = 5 * time.Minute
	if err := rb.Run(name); err != nil {
		err = fmt.Errorf("roll back revision %d to revision %d: %w", c.r.Revision, c.r.To, err)
		c.recorder.Eventf(c.t.obj, corev1.EventTypeWarning, ReasonRolledBack, "Rollback failed: %v", err)
		return nil, err
	}
	rel, err := cfg.Releases.Last(name)
	if err != nil {
		return nil, fmt.Errorf("read the release after its rollback: %w", err)
	}
	next := fmt.Sprintf("This spec (generation %d) is not applied again until it changes or the annotation %s takes a new value", c.r.Generation, watchconfig.RetryAnnotation)
	if c.r.RetriesLeft > 0 {
		next = fmt.Sprintf("It is tried again once the rollback is Ready (%d more time(s))", c.r.RetriesLeft)
	}
	c.recorder.Eventf(c.t.obj, corev1.EventTypeWarning, ReasonRolledBack,
		"%s; rolled back to revision %d (now revision %d). %s", c.r.Message, c.r.To, rel.Version, next)
	return rel, nil
}

package actionpath

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/helmconfig"
	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// The CRD layer applies the CustomResourceDefinitions of a chart's crds/
// directories (its own and those of the subcharts the values enable) as
// the kind's policy says
// (watchconfig.CRDPolicy), in place of Helm:
//
//   - Helm never installs crds/ itself here (Install.SkipCRDs): it would
//     do so as the release's identity, a ServiceAccount of the resource's
//     namespace, which may not and should not write cluster-wide objects.
//     The layer writes them with the operator's own rights instead: the
//     policy in watches.yaml is the platform team's grant, which no tenant
//     sets, and the confinement layer never sees crds/ (they are not in
//     the release's manifest).
//   - create: before an install, a dry-run upgrade and an upgrade, each CRD
//     that does not exist is created; one that exists is left as it is.
//   - create-replace: before each of them every CRD is applied
//     (server-side apply as watchconfig.CRDFieldManager, forcing
//     conflicts), so that it is created or updated to the chart's
//     version. An apply that changes nothing writes nothing. The digest
//     layer above answers the dry-run of an unchanged release, so this
//     happens when the chart or the values changed.
//   - skip: nothing.
//   - Each CRD created or changed must become Established (its names
//     accepted) before the release goes on, so that the templates can
//     render objects of it; the kind's shared capabilities are dropped and
//     the action's are read again.
//   - No policy deletes a CRD: uninstalls pass untouched.

// crdEstablishTimeout bounds the wait for a CRD to be Established.
const crdEstablishTimeout = time.Minute

// crdsOf is the layer that applies the chart's crds/ as policy says (see
// above), writing with c and reading with r, the operator's own.
func crdsOf(policy watchconfig.CRDPolicy, c client.Client, r client.Reader, caps *helmconfig.Capabilities, log logr.Logger) func(context.Context, target, actionClient) actionClient {
	if policy == "" {
		policy = watchconfig.CRDsCreate
	}
	return func(ctx context.Context, t target, below actionClient) actionClient {
		return &crdsActionClient{actionClient: below, ctx: ctx, policy: policy, c: c, r: r, caps: caps, log: log, t: t}
	}
}

// crdsActionClient applies the chart's CRDs before installs and upgrades.
type crdsActionClient struct {
	actionClient
	ctx    context.Context
	policy watchconfig.CRDPolicy
	c      client.Client
	r      client.Reader
	caps   *helmconfig.Capabilities
	log    logr.Logger
	t      target
}

// Install applies the CRDs, then installs the release without Helm's own
// install of crds/.
func (a *crdsActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	if err := a.ensure(chrt, vals); err != nil {
		return nil, err
	}
	return a.actionClient.Install(name, namespace, chrt, vals, append(opts, func(i *action.Install) error {
		i.SkipCRDs = true
		return nil
	})...)
}

// DryRunUpgrade applies the CRDs, so that the dry-run renders objects of
// a CRD the chart adds, then renders the upgrade.
func (a *crdsActionClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	if err := a.ensure(chrt, vals); err != nil {
		return nil, err
	}
	return a.actionClient.DryRunUpgrade(name, namespace, chrt, vals, opts...)
}

// Upgrade applies the CRDs, then upgrades the release.
func (a *crdsActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	if err := a.ensure(chrt, vals); err != nil {
		return nil, err
	}
	return a.actionClient.Upgrade(name, namespace, chrt, vals, opts...)
}

// ensure applies the CRDs of chrt and of the subcharts vals enable, as
// the policy says, and waits for each it changed to be Established.
func (a *crdsActionClient) ensure(chrt *chart.Chart, vals map[string]interface{}) error {
	if a.policy == watchconfig.CRDsSkip || chrt == nil || len(chrt.CRDObjects()) == 0 {
		return nil
	}
	if manifest.HasDependencies(chrt) {
		// As Helm: the crds/ of a subchart that a condition or a tag turns
		// off are not installed.
		chrt = manifest.CopyChart(chrt)
		if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
			return err
		}
	}
	crds, err := manifest.ChartCRDs(chrt)
	if err != nil || len(crds) == 0 {
		return err
	}
	var changed []*unstructured.Unstructured
	for _, crd := range crds {
		did, err := a.apply(crd)
		if err != nil {
			return fmt.Errorf("CRD %s of the chart's crds/ (watches.yaml crds: %s): %w", crd.GetName(), a.policy, err)
		}
		if did {
			changed = append(changed, crd)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	for _, crd := range changed {
		if err := a.established(crd.GetName()); err != nil {
			return fmt.Errorf("CRD %s of the chart's crds/: %w", crd.GetName(), err)
		}
		if err := a.mapped(crd); err != nil {
			return fmt.Errorf("CRD %s of the chart's crds/: %w", crd.GetName(), err)
		}
	}
	// The templates may ask .Capabilities for the new APIs.
	a.caps.Invalidate()
	if cfg := a.Config(); cfg != nil {
		cfg.Capabilities = nil
	}
	return nil
}

// apply creates crd when it is missing (create), or applies it
// (create-replace), and reports whether that changed the server's copy.
// A create is a plain create, which RBAC cannot restrict by name; an
// apply is a patch of one name, which it can (docs/adding-a-kind.md,
// "Charts with CRDs").
func (a *crdsActionClient) apply(crd *unstructured.Unstructured) (bool, error) {
	current := &apiextensionsv1.CustomResourceDefinition{}
	err := a.r.Get(a.ctx, client.ObjectKey{Name: crd.GetName()}, current)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return false, err
	case a.policy == watchconfig.CRDsCreate && err == nil:
		return false, nil
	case a.policy == watchconfig.CRDsCreate:
		obj := crd.DeepCopy()
		if err := a.c.Create(a.ctx, obj, client.FieldOwner(watchconfig.CRDFieldManager)); err != nil {
			if apierrors.IsAlreadyExists(err) { // created meanwhile, by someone else
				return false, nil
			}
			return false, err
		}
		a.log.Info("Created a CRD of the chart's crds/", "crd", crd.GetName(), "policy", string(a.policy), "release", a.t.key())
		return true, nil
	}
	before := current.ResourceVersion
	obj := crd.DeepCopy()
	if err := a.c.Patch(a.ctx, obj, client.Apply, client.FieldOwner(watchconfig.CRDFieldManager), client.ForceOwnership); err != nil {
		return false, err
	}
	if obj.GetResourceVersion() == before {
		return false, nil
	}
	verb := "Updated"
	if before == "" {
		verb = "Created"
	}
	a.log.Info(verb+" a CRD of the chart's crds/", "crd", crd.GetName(), "policy", string(a.policy), "release", a.t.key())
	return true, nil
}

// mapped waits until the RESTMapper Helm's client builds objects with
// maps the kind of crd. Established says the API server serves it; its
// discovery, which the mapper reads, can follow a moment later, and an
// install that renders an object of the kind in that moment fails with
// "no matches for kind".
func (a *crdsActionClient) mapped(crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	if group == "" || kind == "" {
		return nil
	}
	gk := schema.GroupKind{Group: group, Kind: kind}
	ctx, cancel := context.WithTimeout(a.ctx, crdEstablishTimeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		_, last = a.c.RESTMapper().RESTMapping(gk)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s not in the API server's discovery within %s: %w", gk, crdEstablishTimeout, last)
	}
	return nil
}

// established waits until the CRD name is Established, or says why not.
func (a *crdsActionClient) established(name string) error {
	ctx, cancel := context.WithTimeout(a.ctx, crdEstablishTimeout)
	defer cancel()
	var why string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := a.r.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, c := range crd.Status.Conditions {
			switch {
			case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
				return true, nil
			case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
				return false, fmt.Errorf("names not accepted: %s", c.Message)
			case c.Type == apiextensionsv1.Established:
				why = c.Message
			}
		}
		return false, nil
	})
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("not Established within %s: %s", crdEstablishTimeout, why)
	}
	return err
}

package actionpath

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	hrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"

	"github.com/acme/platform-operator/internal/operator/claims"
	"github.com/acme/platform-operator/internal/operator/release"
)

// The confinement layer keeps a release's objects where its kind's
// allowance lets them land (the rule is release.Confinement's; the
// admission check applies it at apply, this layer to what the webhook did
// not see):
//
//   - Installs, upgrades and dry-run upgrades get a Helm post-renderer that
//     runs after the chart's (and after any post-renderer the options
//     already set, the library's owner references among them), maps each
//     rendered object's kind with the API server's RESTMapper and refuses
//     the release before Helm writes anything: not an object, not a
//     release record.
//   - The refusal is terminal and reported as the ownership layer's are:
//     a Warning Event with ReasonConfinement, the reason kept for the
//     status writer (refusals.go), the resource reconciled again when it
//     changes or at its periodic resync, not retried with backoff.
//   - Only the manifest passes the post-renderer; Helm hooks do not. The
//     hooks of a dry-run upgrade, which writes nothing, are checked after
//     it; the hooks of an install are checked at apply only.

// ReasonConfinement is the reason of the Warning Event, and of the status
// conditions, of a release refused because an object it renders would land
// outside its resource's namespace, or is cluster-scoped and not allowed
// for the kind.
const ReasonConfinement = "OutsideNamespace"

// confine is the layer that refuses a release that renders objects outside
// what its kind's allowance lets it place (see above).
func confine(log logr.Logger, recorder record.EventRecorder, allow release.Confinement) func(context.Context, target, actionClient) actionClient {
	return func(_ context.Context, t target, below actionClient) actionClient {
		return &confinedActionClient{actionClient: below, log: log, recorder: recorder, allow: allow, t: t}
	}
}

// confinedActionClient checks what the installs and upgrades of one
// resource render.
type confinedActionClient struct {
	actionClient
	log      logr.Logger
	recorder record.EventRecorder
	allow    release.Confinement
	t        target
}

// Install installs the release unless it renders an object it may not place.
func (c *confinedActionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*hrelease.Release, error) {
	rel, err := c.actionClient.Install(name, namespace, chrt, vals, append(opts, func(i *action.Install) error {
		i.PostRenderer = c.checker(i.PostRenderer)
		return nil
	})...)
	return rel, c.refused(err)
}

// Upgrade upgrades the release unless it renders an object it may not place.
func (c *confinedActionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	rel, err := c.actionClient.Upgrade(name, namespace, chrt, vals, append(opts, c.checkUpgrade())...)
	return rel, c.refused(err)
}

// DryRunUpgrade renders the upgrade, refused when it renders an object, or
// a hook, it may not place.
func (c *confinedActionClient) DryRunUpgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	rel, err := c.actionClient.DryRunUpgrade(name, namespace, chrt, vals, append(opts, c.checkUpgrade())...)
	if err == nil && rel != nil && len(rel.Hooks) > 0 {
		var hooks bytes.Buffer
		for _, h := range rel.Hooks {
			fmt.Fprintf(&hooks, "---\n%s\n", h.Manifest)
		}
		err = c.check(&hooks)
		if err != nil {
			rel = nil
		}
	}
	return rel, c.refused(err)
}

// checkUpgrade is the upgrade option that sets the checking post-renderer.
func (c *confinedActionClient) checkUpgrade() helmclient.UpgradeOption {
	return func(u *action.Upgrade) error {
		u.PostRenderer = c.checker(u.PostRenderer)
		return nil
	}
}

// checker returns a post-renderer that runs first (when set), then checks
// what it returns.
func (c *confinedActionClient) checker(first postrender.PostRenderer) postrender.PostRenderer {
	return checkingPostRenderer{first: first, check: c.check}
}

// keptBuilds is a kube client that keeps the objects of the manifests it
// built, or that the owner post-renderer wrote (helmconfig's).
type keptBuilds interface {
	KeptBuild(manifest []byte) (kube.ResourceList, bool)
}

// check applies the kind's allowance to the manifests of b, whose
// namespaced objects without a namespace land in the release namespace.
// The objects of a post-rendered manifest are the owner post-renderer's,
// kept by the action's kube client: their placements are read from them,
// not from a parse of b.
func (c *confinedActionClient) check(b *bytes.Buffer) error {
	cfg := c.Config()
	if cfg == nil || cfg.RESTClientGetter == nil {
		return errors.New("confinement: no REST mapper to tell namespaced kinds from cluster-scoped ones")
	}
	if k, ok := cfg.KubeClient.(keptBuilds); ok {
		if list, ok := k.KeptBuild(b.Bytes()); ok {
			if placements, ok := placementsOf(list); ok {
				return c.allow.Check(release.OwnerOf(c.t.obj).GroupKind.Kind, c.t.obj.GetNamespace(), placements)
			}
		}
	}
	mapper, err := cfg.RESTClientGetter.ToRESTMapper()
	if err != nil {
		return fmt.Errorf("confinement: %w", err)
	}
	objs, err := claims.FromManifests(map[string]string{"manifest": b.String()}, c.t.namespace, mapper)
	if err != nil {
		return fmt.Errorf("confinement: %w", err)
	}
	return c.allow.Check(release.OwnerOf(c.t.obj).GroupKind.Kind, c.t.obj.GetNamespace(), claims.Placements(objs))
}

// placementsOf returns where the objects of list land, as
// claims.Placements does for the same manifest parsed; false when an
// object has no REST mapping to tell its scope.
func placementsOf(list kube.ResourceList) ([]release.Placement, bool) {
	out := make([]release.Placement, 0, len(list))
	for _, info := range list {
		if info.Mapping == nil || info.Object == nil {
			return nil, false
		}
		p := release.Placement{GVK: info.Object.GetObjectKind().GroupVersionKind(), Name: info.Name, Namespace: info.Namespace, Scope: release.Namespaced}
		if info.Mapping.Scope.Name() == meta.RESTScopeNameRoot {
			p.Namespace, p.Scope = "", release.ClusterScoped
		}
		out = append(out, p)
	}
	return out, true
}

// refused reports a confinement refusal in err, and returns it terminal
// and without Helm's wrapping, so that the condition's message is the
// refusal's alone; any other err is returned as it is.
func (c *confinedActionClient) refused(err error) error {
	var refusal *release.ConfinementError
	if !errors.As(err, &refusal) {
		return err
	}
	c.log.Info("The release renders an object outside what its kind may place; not applying it",
		"release", c.t.key(), "error", refusal.Error())
	c.recorder.Event(c.t.obj, corev1.EventTypeWarning, ReasonConfinement, refusal.Error())
	refused(c.t.obj, ReasonConfinement, refusal.Error())
	return terminal{refusal}
}

// refusedByConfinement reports whether err is the confinement layer's
// refusal, which that layer has reported already.
func refusedByConfinement(err error) bool {
	var refusal *release.ConfinementError
	return errors.As(err, &refusal)
}

// checkingPostRenderer runs first, then check on its output.
type checkingPostRenderer struct {
	first postrender.PostRenderer
	check func(*bytes.Buffer) error
}

// Run returns what first returns (or in), when check accepts it.
func (p checkingPostRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := in
	if p.first != nil {
		var err error
		if out, err = p.first.Run(in); err != nil {
			return nil, err
		}
	}
	if err := p.check(out); err != nil {
		return nil, err
	}
	return out, nil
}

package actionpath

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	hrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// Drift modes. Between upgrades the library "reconciles" a deployed
// release: it patches every object back to the stored manifest and
// recreates the deleted ones (drift repair). The drift layer decides, per
// resource, whether that happens:
//
//   - repair (the default): it does, except for the fields the ignore
//     rules name, which stay as they are on the API server (an object that
//     is recreated gets them as rendered);
//   - warn: nothing is changed; the objects are compared with the manifest
//     (driftdiff.go) and the Drifted condition says which objects and
//     fields differ, with one Event each time that list changes;
//   - off: nothing is compared or changed.
//
// The mode is the kind's (watches.yaml drift.mode) unless the resource's
// DriftAnnotation says otherwise; ignore rules are the kind's plus the
// resource's DriftIgnoreAnnotation. The Drifted condition exists only in
// warn mode. Upgrades are not affected: a spec edit applies the chart's
// changes, ignored fields included, with Helm's three-way merge.

const (
	// ConditionDrifted is True while, in warn mode, objects of the release
	// differ from its manifest.
	ConditionDrifted = "Drifted"
	// Reasons of the Drifted condition and of its Events.
	ReasonDriftDetected = "DriftDetected"
	ReasonNoDrift       = "NoDrift"
	ReasonDriftResolved = "DriftResolved"
	// maxDriftFields is how many fields of one object a message names.
	maxDriftFields = 5
)

// drifts is the layer that applies the drift policy of the kind and of
// each resource to the library's drift repair.
func drifts(kind watchconfig.Drift, status client.Client, recorder record.EventRecorder, log logr.Logger) func(context.Context, target, actionClient) actionClient {
	return func(ctx context.Context, t target, below actionClient) actionClient {
		return &driftPolicy{actionClient: below, ctx: ctx, t: t, kind: kind, status: status, recorder: recorder, log: log}
	}
}

type driftPolicy struct {
	actionClient
	ctx      context.Context
	t        target
	kind     watchconfig.Drift
	status   client.Client
	recorder record.EventRecorder
	log      logr.Logger
}

// policy returns the resource's mode and ignore rules; an annotation that
// does not parse is reported in a Warning Event and the kind's setting
// applies.
func (c *driftPolicy) policy() (watchconfig.DriftMode, []watchconfig.DriftIgnore) {
	mode, ignores := c.kind.Mode, c.kind.Ignore
	ann := c.t.obj.GetAnnotations()
	if v, ok := ann[watchconfig.DriftAnnotation]; ok {
		m, err := watchconfig.ParseDriftMode(v)
		if err != nil {
			c.recorder.Eventf(c.t.obj, corev1.EventTypeWarning, "InvalidAnnotation",
				"%s: %v; the kind's drift mode applies (%s)", watchconfig.DriftAnnotation, err, mode)
		} else {
			mode = m
		}
	}
	if v, ok := ann[watchconfig.DriftIgnoreAnnotation]; ok {
		rules, err := watchconfig.ParseDriftIgnores(v)
		if err != nil {
			c.recorder.Eventf(c.t.obj, corev1.EventTypeWarning, "InvalidAnnotation",
				"%s: %v; only the kind's ignore rules apply", watchconfig.DriftIgnoreAnnotation, err)
		} else {
			ignores = append(append([]watchconfig.DriftIgnore{}, ignores...), rules...)
		}
	}
	if mode == "" {
		mode = watchconfig.DriftRepair
	}
	return mode, ignores
}

// Reconcile applies the resource's drift mode to the library's repair.
func (c *driftPolicy) Reconcile(rel *hrelease.Release) error {
	if rel == nil {
		return c.actionClient.Reconcile(rel)
	}
	mode, ignores := c.policy()
	if mode != watchconfig.DriftWarn {
		c.clearCondition()
	}
	switch mode {
	case watchconfig.DriftOff:
		return nil
	case watchconfig.DriftWarn:
		return c.warn(rel, ignores)
	}
	if len(ignores) == 0 {
		return c.actionClient.Reconcile(rel)
	}
	objs, err := c.compare(rel, ignores, false)
	if err != nil {
		return err
	}
	docs := make([]string, 0, len(objs))
	for _, o := range objs {
		out, err := yaml.Marshal(o.expected)
		if err != nil {
			return fmt.Errorf("release %s: %w", c.t.key(), err)
		}
		docs = append(docs, string(out))
	}
	trimmed := *rel
	trimmed.Manifest = "---\n" + strings.Join(docs, "---\n")
	return c.actionClient.Reconcile(&trimmed)
}

// renderedObject is one object of a release's manifest: as rendered (its
// ignored fields removed when it exists) and what drifted.
type renderedObject struct {
	name     string
	expected map[string]any
	gone     bool
	drifted  []string
}

// compare reads every object of rel's manifest from the API server. Of an
// object that exists, the ignored fields are removed from expected; with
// diff, the fields that differ are listed.
func (c *driftPolicy) compare(rel *hrelease.Release, ignores []watchconfig.DriftIgnore, diff bool) ([]renderedObject, error) {
	cfg := c.Config()
	if cfg == nil || cfg.KubeClient == nil {
		return nil, fmt.Errorf("release %s: no Kubernetes client to compare its objects with", c.t.key())
	}
	infos, err := cfg.KubeClient.Build(strings.NewReader(rel.Manifest), false)
	if err != nil {
		return nil, fmt.Errorf("read the objects of release %s: %w", c.t.key(), err)
	}
	out := make([]renderedObject, 0, len(infos))
	for _, info := range infos {
		expected, err := runtime.DefaultUnstructuredConverter.ToUnstructured(info.Object)
		if err != nil {
			return nil, fmt.Errorf("release %s: %w", c.t.key(), err)
		}
		expected = runtime.DeepCopyJSON(expected)
		gvk := info.Mapping.GroupVersionKind
		obj := renderedObject{name: describeObject(gvk.Kind, info.Namespace, info.Name), expected: expected}
		var paths []watchconfig.FieldPath
		for _, r := range ignores {
			if !r.Matches(gvk.Group, gvk.Kind, info.Name) {
				continue
			}
			for _, p := range r.Paths {
				fp, _ := watchconfig.ParseFieldPath(p) // validated when read
				paths = append(paths, fp)
			}
		}
		if !diff && len(paths) == 0 {
			out = append(out, obj)
			continue
		}
		switch err := info.Get(); {
		case apierrors.IsNotFound(err):
			obj.gone = true
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", obj.name, err)
		default:
			removeFields(obj.expected, paths)
			if diff {
				live, err := runtime.DefaultUnstructuredConverter.ToUnstructured(info.Object)
				if err != nil {
					return nil, fmt.Errorf("read %s: %w", obj.name, err)
				}
				obj.drifted = driftedFields(obj.expected, live)
			}
		}
		out = append(out, obj)
	}
	return out, nil
}

// warn compares the release's objects with its manifest and reports what
// differs, changing nothing.
func (c *driftPolicy) warn(rel *hrelease.Release, ignores []watchconfig.DriftIgnore) error {
	objs, err := c.compare(rel, ignores, true)
	if err != nil {
		return err
	}
	var parts []string
	for _, o := range objs {
		switch {
		case o.gone:
			parts = append(parts, o.name+": deleted")
		case len(o.drifted) > maxDriftFields:
			parts = append(parts, fmt.Sprintf("%s: %s and %d more", o.name, strings.Join(o.drifted[:maxDriftFields], ", "), len(o.drifted)-maxDriftFields))
		case len(o.drifted) > 0:
			parts = append(parts, o.name+": "+strings.Join(o.drifted, ", "))
		}
	}
	prev, had := conditionOf(c.t.obj, ConditionDrifted)
	var cond condition
	if len(parts) == 0 {
		cond = condition{Status: string(metav1.ConditionFalse), Reason: ReasonNoDrift,
			Message: "Every object matches the release's manifest (drift mode warn)"}
	} else {
		cond = condition{Status: string(metav1.ConditionTrue), Reason: ReasonDriftDetected,
			Message: fmt.Sprintf("Objects differ from release %s; not repaired (drift mode warn): %s", c.t.key(), strings.Join(parts, "; "))}
	}
	if had && prev.Status == cond.Status && prev.Message == cond.Message {
		return nil
	}
	switch {
	case cond.Status == string(metav1.ConditionTrue):
		c.recorder.Event(c.t.obj, corev1.EventTypeWarning, ReasonDriftDetected, cond.Message)
	case had && prev.Status == string(metav1.ConditionTrue):
		c.recorder.Eventf(c.t.obj, corev1.EventTypeNormal, ReasonDriftResolved, "Every object of release %s matches its manifest again", c.t.key())
	}
	if err := patchCondition(c.ctx, c.status, c.t.obj, ConditionDrifted, &cond, time.Now()); err != nil {
		return fmt.Errorf("set the %s condition: %w", ConditionDrifted, err)
	}
	return nil
}

// clearCondition removes a Drifted condition left from warn mode.
func (c *driftPolicy) clearCondition() {
	if _, had := conditionOf(c.t.obj, ConditionDrifted); !had {
		return
	}
	if err := patchCondition(c.ctx, c.status, c.t.obj, ConditionDrifted, nil, time.Now()); err != nil {
		c.log.Info("Could not remove the Drifted condition", "release", c.t.key(), "error", err.Error())
	}
}

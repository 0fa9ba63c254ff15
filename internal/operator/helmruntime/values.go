package helmruntime

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/hook"
	"github.com/operator-framework/helm-operator-plugins/pkg/values"
	"helm.sh/helm/v3/pkg/chartutil"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/reconcilerecord"
	"github.com/acme/platform-operator/internal/operator/release"
)

// generatedAlphabet is the alphabet of generated values: letters and
// digits are safe in URLs, shells and connection strings.
const generatedAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// Event reasons of generated values. Messages name the value's path,
// never the value.
const (
	// ReasonValueGenerated: a value was generated for a new release.
	ReasonValueGenerated = "ValueGenerated"
	// ReasonValueRecovered: a value was taken from a Secret kept from an
	// earlier release of the same name.
	ReasonValueRecovered = "ValueRecovered"
)

// valuesTranslator is the values.Translator of every kind: the values of a
// custom resource's spec, computed by release.Values.Translate, the chain
// the admission check computes them with. It fills every generated value
// the spec leaves empty from (in order) the release's stored values, the
// declared Secret, or crypto/rand.
//
// The release's stored values (rel.Config) are what the library passed to
// the last install or upgrade, so a value once generated is passed again
// to every later dry-run and upgrade: the rendered manifest does not
// change on idle reconciles, a restart of the operator changes nothing, and
// a Secret deleted by hand is recreated from the release with the same
// value. The stored release is the one the reconcile read before asking
// for the values, through the action path (so a release another resource
// owns is none), taken from the reconcile's record.
//
// As a post hook it records the Events of the translation: they wait in
// the reconcile's record until a reconcile with those values succeeds, so
// a failed install claims nothing, and its retries do not repeat the claim.
type valuesTranslator struct {
	values release.Values
	nsFor  helmclient.ObjectToStringMapper
	reader client.Reader
	// sources reads the Secrets and ConfigMaps a spec's valuesFrom names
	// from the API server, with the operator's identity: the manager
	// caches neither kind's data for them (valuesfrom.go).
	sources  client.Reader
	recorder record.EventRecorder
	log      logr.Logger
	// random returns a random string of n letters and digits.
	random func(n int) (string, error)
}

var (
	_ values.Translator = (*valuesTranslator)(nil)
	_ hook.PostHook     = (*valuesTranslator)(nil)
)

func newValuesTranslator(v release.Values, nsFor helmclient.ObjectToStringMapper,
	reader, sources client.Reader, recorder record.EventRecorder, log logr.Logger) *valuesTranslator {
	return &valuesTranslator{values: v, nsFor: nsFor, reader: reader, sources: sources, recorder: recorder, log: log, random: randomString}
}

// Exec records the Events of obj's translation: the reconcile that used
// its values succeeded, so the release keeps them.
func (t *valuesTranslator) Exec(obj *unstructured.Unstructured, _ hrelease.Release, _ logr.Logger) error {
	for _, e := range reconcilerecord.Of(obj).TakeEvents() {
		t.recorder.Event(obj, corev1.EventTypeNormal, e.Reason, e.Message)
	}
	return nil
}

// Translate returns the values of obj's spec, on a copy: the object is
// written back to the API server later on.
func (t *valuesTranslator) Translate(ctx context.Context, obj *unstructured.Unstructured) (chartutil.Values, error) {
	spec, ok := obj.Object["spec"].(map[string]interface{})
	if !ok && obj.Object["spec"] != nil {
		return nil, errors.New("spec must be a map")
	}
	rec := reconcilerecord.Of(obj)
	var events []reconcilerecord.Event
	fill := func(gv manifest.CompiledValue) (string, error) {
		rel, read, err := rec.Release()
		switch {
		case !read:
			// Never regenerate a value for want of a read.
			return "", fmt.Errorf("fill %s: the release %s was not read before its values", gv.Path, obj.GetName())
		case err != nil && !errors.Is(err, driver.ErrReleaseNotFound):
			return "", fmt.Errorf("read release %s: %w", obj.GetName(), err)
		}
		var stored map[string]interface{}
		if rel != nil {
			stored = rel.Config
		}
		v, event, err := t.resolve(ctx, obj, gv, stored)
		if event != nil {
			events = append(events, *event)
		}
		return v, err
	}
	vals, defaulted, err := t.values.TranslateNoting(spec, fill, release.SourceReader(ctx, t.sources, obj.GetNamespace()))
	rec.SetEvents(events)
	if err != nil {
		return nil, err
	}
	// The action path merges these with the defaults of the chart version
	// the release renders with (actionpath/chartversion.go).
	rec.SetValues(vals, defaulted)
	return vals, nil
}

// resolve finds or makes the value of gv for obj, and the Event to record
// once a release keeps it (nil for a value the release has already). It
// never logs the value.
func (t *valuesTranslator) resolve(ctx context.Context, obj *unstructured.Unstructured, gv manifest.CompiledValue, stored map[string]interface{}) (string, *reconcilerecord.Event, error) {
	log := t.log.WithValues("namespace", obj.GetNamespace(), "name", obj.GetName(), "path", gv.Path)
	if s, _ := release.NestedString(stored, gv.Segments); s != "" {
		return s, nil, nil
	}
	if gv.Secret != nil {
		ns, err := t.nsFor(obj)
		if err != nil {
			return "", nil, fmt.Errorf("map release namespace: %w", err)
		}
		name, err := gv.SecretName(obj.GetName(), ns)
		if err != nil {
			return "", nil, err
		}
		var secret corev1.Secret
		err = t.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &secret)
		switch {
		case err == nil:
			if v := string(secret.Data[gv.Secret.Key]); v != "" {
				log.V(1).Info("Recovered generated value from a kept Secret", "secret", name)
				return v, &reconcilerecord.Event{Reason: ReasonValueRecovered,
					Message: fmt.Sprintf("Took %s from Secret %s, kept from an earlier release of the same name", gv.Path, name)}, nil
			}
		case !apierrors.IsNotFound(err):
			return "", nil, fmt.Errorf("read Secret %s/%s for %s: %w", ns, name, gv.Path, err)
		}
	}
	v, err := t.random(gv.Length)
	if err != nil {
		return "", nil, fmt.Errorf("generate %s: %w", gv.Path, err)
	}
	log.V(1).Info("Generated value", "length", gv.Length)
	return v, &reconcilerecord.Event{Reason: ReasonValueGenerated, Message: fmt.Sprintf("Generated %s; it is kept for the life of the release", gv.Path)}, nil
}

// randomString returns n letters and digits from crypto/rand.
func randomString(n int) (string, error) {
	size := big.NewInt(int64(len(generatedAlphabet)))
	b := make([]byte, n)
	for i := range b {
		k, err := rand.Int(rand.Reader, size)
		if err != nil {
			return "", err
		}
		b[i] = generatedAlphabet[k.Int64()]
	}
	return string(b), nil
}

// describeImageDefaults renders image defaults for logs: "path=image".
func describeImageDefaults(ds []release.ImageDefault) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.Path+"="+d.Image.String())
	}
	return out
}

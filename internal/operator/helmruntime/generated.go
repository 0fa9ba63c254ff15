package helmruntime

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"sync"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/hook"
	"github.com/operator-framework/helm-operator-plugins/pkg/values"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/manifest"
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

// generatedValuesTranslator is the values.Translator of a chart with
// generated values: the custom resource's spec, plus every declared value
// the spec leaves empty, taken from (in order) the release's stored values,
// the declared Secret, or crypto/rand.
//
// The release's stored values (rel.Config) are what the library passed to
// the last install or upgrade, so a value once generated is passed again
// to every later dry-run and upgrade: the rendered manifest does not
// change on idle reconciles, a restart of the operator changes nothing, and
// a Secret deleted by hand is recreated from the release with the same
// value.
type generatedValuesTranslator struct {
	values   []manifest.CompiledValue
	acg      helmclient.ActionClientGetter
	nsFor    helmclient.ObjectToStringMapper
	reader   client.Reader
	recorder record.EventRecorder
	log      logr.Logger
	// random returns a random string of n letters and digits.
	random func(n int) (string, error)

	// pending holds, per resource, the Events of its last translation,
	// recorded once a reconcile with those values succeeds (Exec): a
	// failed install keeps nothing, so it claims nothing, and its retries
	// do not repeat the claim.
	mu      sync.Mutex
	pending map[types.UID][]pendingEvent
}

// pendingEvent is a Normal Event waiting for its release.
type pendingEvent struct{ reason, message string }

var (
	_ values.Translator = (*generatedValuesTranslator)(nil)
	_ hook.PostHook     = (*generatedValuesTranslator)(nil)
)

// newGeneratedValuesTranslator returns the translator for the values ch
// declares, or nil when it declares none.
func newGeneratedValuesTranslator(ch *chart.Chart, acg helmclient.ActionClientGetter, nsFor helmclient.ObjectToStringMapper,
	reader client.Reader, recorder record.EventRecorder, log logr.Logger) (*generatedValuesTranslator, error) {
	gvs, err := manifest.CompileGeneratedValues(ch)
	if err != nil || len(gvs) == 0 {
		return nil, err
	}
	return &generatedValuesTranslator{
		values: gvs, acg: acg, nsFor: nsFor, reader: reader, recorder: recorder, log: log,
		random: randomString, pending: map[types.UID][]pendingEvent{},
	}, nil
}

// Exec records the Events of obj's last translation: the reconcile that
// used its values succeeded, so the release keeps them.
func (t *generatedValuesTranslator) Exec(obj *unstructured.Unstructured, _ hrelease.Release, _ logr.Logger) error {
	t.mu.Lock()
	events := t.pending[obj.GetUID()]
	delete(t.pending, obj.GetUID())
	t.mu.Unlock()
	for _, e := range events {
		t.recorder.Event(obj, corev1.EventTypeNormal, e.reason, e.message)
	}
	return nil
}

// Translate returns a copy of obj's spec with the generated values filled in.
func (t *generatedValuesTranslator) Translate(ctx context.Context, obj *unstructured.Unstructured) (chartutil.Values, error) {
	spec, ok := obj.Object["spec"]
	if !ok {
		return nil, errors.New("spec not found")
	}
	specMap, ok := spec.(map[string]interface{})
	if !ok {
		return nil, errors.New("spec must be a map")
	}
	// A copy: the object is written back to the API server later on. The
	// library has set the override values on it already and coalesces
	// what this returns with the chart's defaults: release.Values.Compute
	// is the same three steps in one call.
	vals := runtime.DeepCopyJSON(specMap)

	// The values stored with the release, read at the first missing value
	// (a spec that sets every generated value reads nothing).
	var stored map[string]interface{}
	read := false
	var events []pendingEvent
	fill := func(gv manifest.CompiledValue) (string, error) {
		if !read {
			ac, err := t.acg.ActionClientFor(ctx, obj)
			if err != nil {
				return "", fmt.Errorf("get Helm action client: %w", err)
			}
			rel, err := ac.Get(obj.GetName())
			switch {
			case err == nil:
				stored = rel.Config
			case !errors.Is(err, driver.ErrReleaseNotFound):
				return "", fmt.Errorf("read release %s: %w", obj.GetName(), err)
			}
			read = true
		}
		v, event, err := t.resolve(ctx, obj, gv, stored)
		if event != nil {
			events = append(events, *event)
		}
		return v, err
	}
	err := release.FillGenerated(vals, t.values, fill)
	t.mu.Lock()
	if len(events) > 0 {
		t.pending[obj.GetUID()] = events
	} else {
		delete(t.pending, obj.GetUID())
	}
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return vals, nil
}

// resolve finds or makes the value of gv for obj, and the Event to record
// once a release keeps it (nil for a value the release has already). It
// never logs the value.
func (t *generatedValuesTranslator) resolve(ctx context.Context, obj *unstructured.Unstructured, gv manifest.CompiledValue, stored map[string]interface{}) (string, *pendingEvent, error) {
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
				return v, &pendingEvent{ReasonValueRecovered,
					fmt.Sprintf("Took %s from Secret %s, kept from an earlier release of the same name", gv.Path, name)}, nil
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
	return v, &pendingEvent{ReasonValueGenerated, fmt.Sprintf("Generated %s; it is kept for the life of the release", gv.Path)}, nil
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

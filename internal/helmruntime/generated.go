package helmruntime

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/values"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// GeneratedValuesAnnotation is the Chart.yaml annotation by which a chart
// declares values the runtime generates once per release and then keeps
// for the release's whole life (typically passwords). Its value is a YAML
// list of [GeneratedValue]:
//
//	annotations:
//	  platform.acme.com/generated-values: |
//	    - path: database.auth.password   # dotted path in the values
//	      length: 32                     # optional, 16-256, default 32
//	      secret:                        # optional: where an earlier value may be kept
//	        name: '{{ .Release.Name }}-db'
//	        key: password
//
// A chart must not generate such values in its templates: randAlphaNum
// renders a new value on every server-side dry-run, which the library
// compares with the deployed manifest on every reconcile, so every
// reconcile would upgrade the release; and a lookup of the existing Secret
// returns nothing once someone deleted the Secret, so the repair would
// bring back a different value.
const GeneratedValuesAnnotation = "platform.acme.com/generated-values"

const (
	// DefaultGeneratedLength is the length of a generated value whose
	// declaration sets none.
	DefaultGeneratedLength = 32
	minGeneratedLength     = 16
	maxGeneratedLength     = 256
	// generatedAlphabet is the alphabet of generated values: letters and
	// digits are safe in URLs, shells and connection strings.
	generatedAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

// Event reasons of generated values. Messages name the value's path,
// never the value.
const (
	// ReasonValueGenerated: a value was generated for a new release.
	ReasonValueGenerated = "ValueGenerated"
	// ReasonValueRecovered: a value was taken from a Secret kept from an
	// earlier release of the same name.
	ReasonValueRecovered = "ValueRecovered"
)

// GeneratedValue declares one generated value of a chart.
type GeneratedValue struct {
	// Path is the dotted path of the value in the chart's values, e.g.
	// "database.auth.password". The value is a string.
	Path string `json:"path"`
	// Length of a generated value; 0 means DefaultGeneratedLength.
	Length int `json:"length,omitempty"`
	// Secret optionally names a Secret in the release namespace that may
	// hold the value from an earlier release of the same name (a chart
	// marks it helm.sh/resource-policy: keep so that it outlives its
	// release). It is read only when no release exists or the release
	// has no value.
	Secret *GeneratedValueSecret `json:"secret,omitempty"`
}

// GeneratedValueSecret names a Secret and its data key.
type GeneratedValueSecret struct {
	// Name is a Go text/template (with the sprig functions) of the Secret
	// name; .Release.Name and .Release.Namespace are set.
	Name string `json:"name"`
	// Key is the data key holding the value.
	Key string `json:"key"`
}

// generatedValue is a validated GeneratedValue.
type generatedValue struct {
	GeneratedValue
	segments   []string
	secretName *template.Template
}

// ParseGeneratedValues reads the generated values a chart declares in its
// Chart.yaml annotations; none is not an error.
func ParseGeneratedValues(ch *chart.Chart) ([]GeneratedValue, error) {
	gvs, err := parseGeneratedValues(ch)
	if err != nil {
		return nil, err
	}
	out := make([]GeneratedValue, 0, len(gvs))
	for _, gv := range gvs {
		out = append(out, gv.GeneratedValue)
	}
	return out, nil
}

func parseGeneratedValues(ch *chart.Chart) ([]generatedValue, error) {
	if ch == nil || ch.Metadata == nil {
		return nil, nil
	}
	raw, ok := ch.Metadata.Annotations[GeneratedValuesAnnotation]
	if !ok {
		return nil, nil
	}
	var decl []GeneratedValue
	if err := yaml.UnmarshalStrict([]byte(raw), &decl); err != nil {
		return nil, fmt.Errorf("chart %s: annotation %s: %w", ch.Name(), GeneratedValuesAnnotation, err)
	}
	seen := map[string]bool{}
	var out []generatedValue
	for i, d := range decl {
		gv, err := validateGeneratedValue(d)
		if err == nil && seen[d.Path] {
			err = errors.New("declared twice")
		}
		if err != nil {
			return nil, fmt.Errorf("chart %s: annotation %s: entry %d (%q): %w", ch.Name(), GeneratedValuesAnnotation, i, d.Path, err)
		}
		seen[d.Path] = true
		out = append(out, gv)
	}
	return out, nil
}

func validateGeneratedValue(d GeneratedValue) (generatedValue, error) {
	gv := generatedValue{GeneratedValue: d}
	if d.Path == "" {
		return gv, errors.New("path must be set")
	}
	gv.segments = strings.Split(d.Path, ".")
	for _, s := range gv.segments {
		if s == "" {
			return gv, errors.New("path has an empty segment")
		}
	}
	if gv.Length == 0 {
		gv.Length = DefaultGeneratedLength
	}
	if gv.Length < minGeneratedLength || gv.Length > maxGeneratedLength {
		return gv, fmt.Errorf("length must be %d-%d, got %d", minGeneratedLength, maxGeneratedLength, gv.Length)
	}
	if d.Secret != nil {
		if d.Secret.Name == "" || d.Secret.Key == "" {
			return gv, errors.New("secret needs a name and a key")
		}
		t, err := template.New("secret").Funcs(sprig.TxtFuncMap()).Option("missingkey=error").Parse(d.Secret.Name)
		if err != nil {
			return gv, fmt.Errorf("secret name: %w", err)
		}
		gv.secretName = t
	}
	return gv, nil
}

// SecretName renders the name of the Secret that may hold the value of a
// release; "" when the declaration names no Secret.
func (d GeneratedValue) SecretName(releaseName, releaseNamespace string) (string, error) {
	gv, err := validateGeneratedValue(d)
	if err != nil {
		return "", err
	}
	return gv.renderSecretName(releaseName, releaseNamespace)
}

func (gv generatedValue) renderSecretName(releaseName, releaseNamespace string) (string, error) {
	if gv.secretName == nil {
		return "", nil
	}
	var b strings.Builder
	data := map[string]any{"Release": map[string]any{"Name": releaseName, "Namespace": releaseNamespace}}
	if err := gv.secretName.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render secret name of %s: %w", gv.Path, err)
	}
	return strings.TrimSpace(b.String()), nil
}

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
	values   []generatedValue
	acg      helmclient.ActionClientGetter
	nsFor    helmclient.ObjectToStringMapper
	reader   client.Reader
	recorder record.EventRecorder
	log      logr.Logger
	// random returns a random string of n letters and digits.
	random func(n int) (string, error)
}

var _ values.Translator = (*generatedValuesTranslator)(nil)

// newGeneratedValuesTranslator returns the translator for the values ch
// declares, or nil when it declares none.
func newGeneratedValuesTranslator(ch *chart.Chart, acg helmclient.ActionClientGetter, nsFor helmclient.ObjectToStringMapper,
	reader client.Reader, recorder record.EventRecorder, log logr.Logger) (*generatedValuesTranslator, error) {
	gvs, err := parseGeneratedValues(ch)
	if err != nil || len(gvs) == 0 {
		return nil, err
	}
	return &generatedValuesTranslator{
		values: gvs, acg: acg, nsFor: nsFor, reader: reader, recorder: recorder, log: log,
		random: randomString,
	}, nil
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
	// A copy: the object is written back to the API server later on.
	vals := runtime.DeepCopyJSON(specMap)

	var missing []generatedValue
	for _, gv := range t.values {
		if s, _ := nestedString(vals, gv.segments); s == "" {
			missing = append(missing, gv)
		}
	}
	if len(missing) == 0 {
		return vals, nil
	}

	var stored map[string]interface{}
	ac, err := t.acg.ActionClientFor(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("get Helm action client: %w", err)
	}
	rel, err := ac.Get(obj.GetName())
	switch {
	case err == nil:
		stored = rel.Config
	case !errors.Is(err, driver.ErrReleaseNotFound):
		return nil, fmt.Errorf("read release %s: %w", obj.GetName(), err)
	}

	for _, gv := range missing {
		value, err := t.resolve(ctx, obj, gv, stored)
		if err != nil {
			return nil, err
		}
		if err := setNestedString(vals, gv.segments, value); err != nil {
			return nil, fmt.Errorf("set generated value %s: %w", gv.Path, err)
		}
	}
	return vals, nil
}

// resolve finds or makes the value of gv for obj. It never logs the value.
func (t *generatedValuesTranslator) resolve(ctx context.Context, obj *unstructured.Unstructured, gv generatedValue, stored map[string]interface{}) (string, error) {
	log := t.log.WithValues("namespace", obj.GetNamespace(), "name", obj.GetName(), "path", gv.Path)
	if s, _ := nestedString(stored, gv.segments); s != "" {
		return s, nil
	}
	if gv.secretName != nil {
		ns, err := t.nsFor(obj)
		if err != nil {
			return "", fmt.Errorf("map release namespace: %w", err)
		}
		name, err := gv.renderSecretName(obj.GetName(), ns)
		if err != nil {
			return "", err
		}
		var secret corev1.Secret
		err = t.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &secret)
		switch {
		case err == nil:
			if v := string(secret.Data[gv.Secret.Key]); v != "" {
				log.Info("Recovered generated value from a kept Secret", "secret", name)
				t.recorder.Eventf(obj, corev1.EventTypeNormal, ReasonValueRecovered,
					"Took %s from Secret %s, kept from an earlier release of the same name", gv.Path, name)
				return v, nil
			}
		case !apierrors.IsNotFound(err):
			return "", fmt.Errorf("read Secret %s/%s for %s: %w", ns, name, gv.Path, err)
		}
	}
	v, err := t.random(gv.Length)
	if err != nil {
		return "", fmt.Errorf("generate %s: %w", gv.Path, err)
	}
	log.Info("Generated value", "length", gv.Length)
	t.recorder.Eventf(obj, corev1.EventTypeNormal, ReasonValueGenerated,
		"Generated %s; it is kept for the life of the release", gv.Path)
	return v, nil
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

// nestedString returns the string at path in m; "" and false when a step
// is missing or not a map, or the leaf is not a string.
func nestedString(m map[string]interface{}, path []string) (string, bool) {
	var cur interface{} = m
	for _, p := range path {
		mm, ok := cur.(map[string]interface{})
		if !ok {
			return "", false
		}
		if cur, ok = mm[p]; !ok {
			return "", false
		}
	}
	s, ok := cur.(string)
	return s, ok
}

// setNestedString sets the string at path in m, creating missing maps.
func setNestedString(m map[string]interface{}, path []string, value string) error {
	cur := m
	for i, p := range path[:len(path)-1] {
		next, ok := cur[p]
		if !ok || next == nil {
			nm := map[string]interface{}{}
			cur[p] = nm
			cur = nm
			continue
		}
		if cur, ok = next.(map[string]interface{}); !ok {
			return fmt.Errorf("%s is not a map", strings.Join(path[:i+1], "."))
		}
	}
	cur[path[len(path)-1]] = value
	return nil
}

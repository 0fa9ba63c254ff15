package manifest

import (
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"helm.sh/helm/v3/pkg/chart"
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

// CompiledValue is a validated GeneratedValue, ready to use: its length
// defaulted, its path split and its Secret name template parsed.
type CompiledValue struct {
	GeneratedValue
	// Segments is Path split at its dots.
	Segments   []string
	secretName *template.Template
}

// ParseGeneratedValues reads the generated values a chart declares in its
// Chart.yaml annotations; none is not an error.
func ParseGeneratedValues(ch *chart.Chart) ([]GeneratedValue, error) {
	gvs, err := CompileGeneratedValues(ch)
	if err != nil {
		return nil, err
	}
	out := make([]GeneratedValue, 0, len(gvs))
	for _, gv := range gvs {
		out = append(out, gv.GeneratedValue)
	}
	return out, nil
}

// CompileGeneratedValues reads and validates the generated values a chart
// declares; none is not an error.
func CompileGeneratedValues(ch *chart.Chart) ([]CompiledValue, error) {
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
	var out []CompiledValue
	for i, d := range decl {
		gv, err := compile(d)
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

func compile(d GeneratedValue) (CompiledValue, error) {
	gv := CompiledValue{GeneratedValue: d}
	if d.Path == "" {
		return gv, errors.New("path must be set")
	}
	gv.Segments = strings.Split(d.Path, ".")
	for _, s := range gv.Segments {
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
	gv, err := compile(d)
	if err != nil {
		return "", err
	}
	return gv.SecretName(releaseName, releaseNamespace)
}

// SecretName renders the name of the Secret that may hold the value of a
// release; "" when the declaration names no Secret.
func (gv CompiledValue) SecretName(releaseName, releaseNamespace string) (string, error) {
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

// Package chartrender renders and lints the operator's Helm charts offline,
// the way `helm install --dry-run` (client only) and `helm lint` do, so that
// chart tests can assert on the Kubernetes objects a custom resource's spec
// turns into.
//
// Rendering goes through Helm's own install action: the chart's kubeVersion
// constraint is checked, values are coalesced with values.yaml and validated
// against values.schema.json exactly as on install, and the manifest is
// split and ordered by Helm. Nothing contacts a cluster.
package chartrender

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/acme/platform-operator/internal/operator/manifest"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// DefaultKubeVersion is the Kubernetes version charts are rendered and
// linted for when Options.KubeVersion is empty.
const DefaultKubeVersion = "v1.35.4"

// Default release coordinates used when Options leaves them empty.
const (
	DefaultReleaseName = "release-name"
	DefaultNamespace   = "default"
)

// Options says how to render a chart.
type Options struct {
	// ReleaseName is the Helm release name; for the operator it is the
	// custom resource's name. Defaults to DefaultReleaseName.
	ReleaseName string
	// Namespace of the release. Defaults to DefaultNamespace.
	Namespace string
	// KubeVersion reported to templates as .Capabilities.KubeVersion and
	// checked against Chart.yaml kubeVersion. Defaults to DefaultKubeVersion.
	KubeVersion string
	// Values supplied by the user (the custom resource's spec), merged over
	// the chart's values.yaml. May be nil.
	Values map[string]interface{}
	// IsUpgrade renders as an upgrade (.Release.IsUpgrade) instead of an
	// install.
	IsUpgrade bool
}

func (o Options) withDefaults() Options {
	if o.ReleaseName == "" {
		o.ReleaseName = DefaultReleaseName
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.KubeVersion == "" {
		o.KubeVersion = DefaultKubeVersion
	}
	return o
}

// Result is a rendered release.
type Result struct {
	// Manifest is the rendered manifest as Helm stores it in the release
	// (hooks and NOTES.txt excluded).
	Manifest string
	// Notes is the rendered NOTES.txt.
	Notes string
	// Objects are the manifest's objects in Helm's install order.
	Objects []*unstructured.Unstructured
	// Hooks are the objects of hook templates, in Helm's order.
	Hooks []*unstructured.Unstructured
}

// Get returns the object of the given kind and name, or nil.
func (r *Result) Get(kind, name string) *unstructured.Unstructured {
	for _, o := range r.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// OfKind returns the objects of a kind, in manifest order.
func (r *Result) OfKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Kinds returns the sorted "Kind/name" of every object, handy for asserting
// exactly what a release contains.
func (r *Result) Kinds() []string {
	out := make([]string, 0, len(r.Objects))
	for _, o := range r.Objects {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	sort.Strings(out)
	return out
}

// LoadChart loads an unpacked chart directory (honouring .helmignore).
func LoadChart(dir string) (*chart.Chart, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	return ch, nil
}

// Render loads the chart in dir and renders it; see RenderChart.
func Render(dir string, opts Options) (*Result, error) {
	ch, err := LoadChart(dir)
	if err != nil {
		return nil, err
	}
	return RenderChart(ch, opts)
}

// RenderChart renders a loaded chart as a client-only dry-run install. Values
// that break the chart's schema, an unsatisfied kubeVersion constraint and
// template failures (required, fail) are returned as errors.
func RenderChart(ch *chart.Chart, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	kv, err := chartutil.ParseKubeVersion(opts.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("kube version %q: %w", opts.KubeVersion, err)
	}

	cfg := &action.Configuration{Log: func(string, ...interface{}) {}}
	install := action.NewInstall(cfg)
	install.DryRun = true
	install.DryRunOption = "client"
	install.ClientOnly = true
	install.Replace = true // no release store to check names against
	install.ReleaseName = opts.ReleaseName
	install.Namespace = opts.Namespace
	install.KubeVersion = kv
	install.IsUpgrade = opts.IsUpgrade

	vals := opts.Values
	if vals == nil {
		vals = map[string]interface{}{}
	}

	// Helm's dependency processing edits the chart it installs: a render
	// that turns a subchart off would drop it from ch for the next.
	if manifest.HasDependencies(ch) {
		ch = manifest.CopyChart(ch)
	}
	rel, err := install.Run(ch, vals)
	if err != nil {
		return nil, err
	}

	res := &Result{Manifest: rel.Manifest, Notes: rel.Info.Notes}
	if res.Objects, err = ParseManifest(rel.Manifest); err != nil {
		return nil, err
	}
	for _, h := range rel.Hooks {
		objs, err := ParseManifest(h.Manifest)
		if err != nil {
			return nil, fmt.Errorf("hook %s: %w", h.Path, err)
		}
		res.Hooks = append(res.Hooks, objs...)
	}
	return res, nil
}

// ParseManifest splits a multi-document manifest into objects, in order,
// skipping empty documents. Numbers decode as int64 or float64 the way the
// API machinery does.
func ParseManifest(manifest string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading manifest: %w", err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("parsing manifest document: %w\n%s", err, doc)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" || string(t) == "{}" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("decoding manifest document: %w\n%s", err, doc)
		}
		out = append(out, u)
	}
	return out, nil
}

// LintOptions says how to lint a chart.
type LintOptions struct {
	// Values merged over values.yaml for the template checks. May be nil.
	Values map[string]interface{}
	// Namespace used for rendering. Defaults to DefaultNamespace.
	Namespace string
	// KubeVersion rendered against and checked for deprecated APIs.
	// Defaults to DefaultKubeVersion.
	KubeVersion string
}

// Lint runs `helm lint` (all of Helm's lint rules, schema validation
// included) on the chart directory and returns its messages. The error is
// only for bad options; lint findings, errors included, are messages.
func Lint(dir string, opts LintOptions) ([]support.Message, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.KubeVersion == "" {
		opts.KubeVersion = DefaultKubeVersion
	}
	kv, err := chartutil.ParseKubeVersion(opts.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("kube version %q: %w", opts.KubeVersion, err)
	}
	vals := opts.Values
	if vals == nil {
		vals = map[string]interface{}{}
	}
	linter := lint.AllWithKubeVersion(dir, vals, opts.Namespace, kv)
	return linter.Messages, nil
}

// AtLeast keeps the messages of the given severity (support.InfoSev,
// support.WarningSev, support.ErrorSev) or worse.
func AtLeast(msgs []support.Message, severity int) []support.Message {
	var out []support.Message
	for _, m := range msgs {
		if m.Severity >= severity {
			out = append(out, m)
		}
	}
	return out
}

// ValuesFromYAML parses a YAML document into values, the way Helm reads a
// values file; it is how tests write a custom resource's spec.
func ValuesFromYAML(doc string) (map[string]interface{}, error) {
	v, err := chartutil.ReadValues([]byte(doc))
	if err != nil {
		return nil, err
	}
	return v.AsMap(), nil
}

// ToYAML returns the objects as one multi-document YAML stream, useful in
// failure messages.
func ToYAML(objs []*unstructured.Unstructured) string {
	var b bytes.Buffer
	for _, o := range objs {
		b.WriteString("---\n")
		s, err := chartutil.Values(o.Object).YAML()
		if err != nil {
			fmt.Fprintf(&b, "# %v\n", err)
			continue
		}
		b.WriteString(s)
	}
	return b.String()
}

// Package apikinds reads config/crd/kinds.yaml, the declaration of every
// chart-backed API kind: its names, scope, name limit and the further
// versions it serves with their field renames. The CRD generator builds
// the CRDs from it; the sidecar reads it at run time to convert between
// versions and to know which CRDs it converts.
package apikinds

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Kind is one entry of config/crd/kinds.yaml: a custom resource kind whose
// spec holds the values of a Helm chart.
type Kind struct {
	// Chart is the chart directory, relative to the repository root. Its
	// values.schema.json becomes the CRD's spec schema.
	Chart string `json:"chart"`
	// Group, Version and Kind identify the custom resource.
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Plural and Singular are the resource names (lower case).
	Plural   string `json:"plural"`
	Singular string `json:"singular,omitempty"`
	// ListKind defaults to Kind+"List".
	ListKind string `json:"listKind,omitempty"`
	// Scope is Namespaced or Cluster.
	Scope      apiextensionsv1.ResourceScope `json:"scope"`
	ShortNames []string                      `json:"shortNames,omitempty"`
	Categories []string                      `json:"categories,omitempty"`
	// Description is the CRD's top-level schema description, what
	// `kubectl explain <plural>` prints first.
	Description string `json:"description"`
	// PrinterColumns are the extra columns of `kubectl get`.
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition `json:"printerColumns,omitempty"`
	// NameLimit is which metadata.name the chart can be installed under;
	// required, see NameLimit.
	NameLimit *NameLimit `json:"nameLimit"`
	// Versions are further versions the CRD serves, each differing from
	// Version by field renames; Version stays the storage version. See
	// ServedVersion.
	Versions []ServedVersion `json:"versions,omitempty"`
}

// MaxReleaseNameLength is the longest Helm release name Helm accepts
// (helm.sh/helm/v3/pkg/chartutil ValidateReleaseName).
const MaxReleaseNameLength = 53

// NameLimit says which custom resource names the chart can be installed
// under. The operator names the Helm release after the custom resource and
// the chart names its objects after the release, so a name the release or
// those objects cannot hold would be accepted by the API server and then
// never install. The CRD refuses such names at apply time (see NameRule).
//
// It is required for every kind: the right limit depends on the chart's
// templates, and a default (Helm's 53) would be wrong for any chart that
// appends to the release name.
type NameLimit struct {
	// MaxLength is the longest name, 1 to MaxReleaseNameLength.
	MaxLength int `json:"maxLength"`
	// DNS1035Label also requires the name to be a DNS-1035 label: lower-case
	// letters, digits and '-', starting with a letter and ending with a
	// letter or digit (no dots, no leading digit). Needed when the chart
	// names a Service after the release. Required, true or false, so the
	// choice is made on purpose.
	DNS1035Label *bool `json:"dns1035Label"`
	// Reason finishes the refusal message: what the name is used for that
	// sets the limit, e.g. "it names the Helm release and the chart's
	// Service".
	Reason string `json:"reason"`
}

// SchemaPath is the chart's values.schema.json, relative to the repository
// root, with forward slashes.
func (k *Kind) SchemaPath() string {
	return path.Join(k.Chart, "values.schema.json")
}

// CRDName is the CRD's metadata.name.
func (k *Kind) CRDName() string { return k.Plural + "." + k.Group }

// FileName is the base name of the generated CRD file.
func (k *Kind) FileName() string { return k.Group + "_" + k.Plural + ".yaml" }

var (
	dnsLabel = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	goIdent  = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
)

// LoadKinds reads and checks a kinds file. Decoding is strict: unknown or
// duplicated keys are errors, so a typo cannot silently drop a setting.
func LoadKinds(file string) ([]Kind, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	kinds, err := ParseKinds(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return kinds, nil
}

// ParseKinds decodes the content of a kinds file, fills in defaults and checks
// every entry.
func ParseKinds(data []byte) ([]Kind, error) {
	var kinds []Kind
	if err := yaml.UnmarshalStrict(data, &kinds); err != nil {
		return nil, err
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("no kinds listed")
	}
	var problems []string
	seen := map[string]int{}
	for i := range kinds {
		k := &kinds[i]
		if k.Singular == "" {
			k.Singular = strings.ToLower(k.Kind)
		}
		if k.ListKind == "" && k.Kind != "" {
			k.ListKind = k.Kind + "List"
		}
		for _, p := range k.check() {
			problems = append(problems, fmt.Sprintf("[%d] (%s): %s", i, k.Kind, p))
		}
		if j, dup := seen[k.CRDName()]; dup {
			problems = append(problems, fmt.Sprintf("[%d] (%s): %s is also defined by entry [%d]", i, k.Kind, k.CRDName(), j))
		}
		seen[k.CRDName()] = i
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid kinds:\n  %s", strings.Join(problems, "\n  "))
	}
	return kinds, nil
}

func (k *Kind) check() []string {
	var p []string
	need := func(field, v string) {
		if v == "" {
			p = append(p, field+" is required")
		}
	}
	need("chart", k.Chart)
	need("group", k.Group)
	need("version", k.Version)
	need("kind", k.Kind)
	need("plural", k.Plural)
	need("description", k.Description)
	if k.Chart != "" && (path.IsAbs(k.Chart) || strings.Contains(k.Chart, `\`) || path.Clean(k.Chart) != k.Chart) {
		p = append(p, fmt.Sprintf("chart %q must be a clean, relative, slash-separated path", k.Chart))
	}
	if k.Kind != "" && !goIdent.MatchString(k.Kind) {
		p = append(p, fmt.Sprintf("kind %q must be UpperCamelCase", k.Kind))
	}
	for _, f := range [][2]string{{"version", k.Version}, {"plural", k.Plural}, {"singular", k.Singular}} {
		if f[1] != "" && !dnsLabel.MatchString(f[1]) {
			p = append(p, fmt.Sprintf("%s %q must be a lower-case DNS label", f[0], f[1]))
		}
	}
	if k.Scope != apiextensionsv1.NamespaceScoped && k.Scope != apiextensionsv1.ClusterScoped {
		p = append(p, fmt.Sprintf("scope %q must be %s or %s", k.Scope, apiextensionsv1.NamespaceScoped, apiextensionsv1.ClusterScoped))
	}
	p = append(p, k.NameLimit.check()...)
	p = append(p, k.checkVersions()...)
	// Everything else (group syntax, short names, categories, columns) is
	// checked by the API server's CRD validation after the CRD is built.
	return p
}

func (l *NameLimit) check() []string {
	if l == nil {
		return []string{"nameLimit is required: the longest metadata.name the chart's release and object names can hold " +
			"(maxLength), whether it must be a DNS-1035 label (dns1035Label) and why (reason)"}
	}
	var p []string
	if l.MaxLength < 1 || l.MaxLength > MaxReleaseNameLength {
		p = append(p, fmt.Sprintf("nameLimit.maxLength %d must be between 1 and %d (Helm's limit for release names)", l.MaxLength, MaxReleaseNameLength))
	}
	if l.DNS1035Label == nil {
		p = append(p, "nameLimit.dns1035Label is required (true when the chart names a Service after the release)")
	}
	if strings.TrimSpace(l.Reason) == "" {
		p = append(p, "nameLimit.reason is required")
	}
	return p
}

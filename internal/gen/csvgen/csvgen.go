// Package csvgen keeps the "owned CRDs" section of the operator's
// ClusterServiceVersion base in step with the CRDs: for every CRD in
// config/crd/bases it writes the display name, description, the kinds of
// objects a resource creates, and spec and status descriptors derived from
// the CRD's OpenAPI schema, so that OLM consoles render a form for every
// field without a second, hand-kept copy of the API.
package csvgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Descriptor is one OLM spec or status descriptor.
type Descriptor struct {
	Path         string   `json:"path"`
	DisplayName  string   `json:"displayName"`
	Description  string   `json:"description,omitempty"`
	XDescriptors []string `json:"x-descriptors,omitempty"`
}

// Resource is a kind of object the operator creates for a resource.
type Resource struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// OwnedCRD is one entry of spec.customresourcedefinitions.owned.
type OwnedCRD struct {
	Name              string       `json:"name"`
	Version           string       `json:"version"`
	Kind              string       `json:"kind"`
	DisplayName       string       `json:"displayName"`
	Description       string       `json:"description"`
	Resources         []Resource   `json:"resources,omitempty"`
	SpecDescriptors   []Descriptor `json:"specDescriptors,omitempty"`
	StatusDescriptors []Descriptor `json:"statusDescriptors,omitempty"`
}

// maxDepth bounds how deep into nested objects spec descriptors go; deeper
// fields are still editable through the YAML view.
const maxDepth = 3

const (
	xText       = "urn:alm:descriptor:com.tectonic.ui:text"
	xNumber     = "urn:alm:descriptor:com.tectonic.ui:number"
	xBool       = "urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	xSelect     = "urn:alm:descriptor:com.tectonic.ui:select:"
	xFieldGroup = "urn:alm:descriptor:com.tectonic.ui:fieldGroup:"
	xResources  = "urn:alm:descriptor:com.tectonic.ui:resourceRequirements"
	xConditions = "urn:alm:descriptor:io.kubernetes.conditions"
	xAdvanced   = "urn:alm:descriptor:com.tectonic.ui:advanced"
)

// Owned derives the owned-CRD entry of crd's storage version.
func Owned(crd *apiextensionsv1.CustomResourceDefinition, resources []Resource) (OwnedCRD, error) {
	var v *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Storage {
			v = &crd.Spec.Versions[i]
		}
	}
	if v == nil {
		return OwnedCRD{}, fmt.Errorf("%s: no storage version", crd.Name)
	}
	return ownedVersion(crd, v, resources)
}

// OwnedVersions derives the owned-CRD entries of every version crd
// serves, the storage version first: a version that names its fields
// differently (apikinds.ServedVersion) gets descriptors with its own paths.
func OwnedVersions(crd *apiextensionsv1.CustomResourceDefinition, resources []Resource) ([]OwnedCRD, error) {
	storage, err := Owned(crd, resources)
	if err != nil {
		return nil, err
	}
	out := []OwnedCRD{storage}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Storage || !v.Served {
			continue
		}
		o, err := ownedVersion(crd, v, resources)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func ownedVersion(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, resources []Resource) (OwnedCRD, error) {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return OwnedCRD{}, fmt.Errorf("%s: version %s has no schema", crd.Name, v.Name)
	}
	root := v.Schema.OpenAPIV3Schema
	o := OwnedCRD{
		Name:        crd.Name,
		Version:     v.Name,
		Kind:        crd.Spec.Names.Kind,
		DisplayName: humanize(crd.Spec.Names.Kind),
		Description: firstSentence(root.Description),
		Resources:   resources,
	}
	if spec, ok := root.Properties["spec"]; ok {
		o.SpecDescriptors = walk(spec, "", 1)
	}
	status := root.Properties["status"]
	if _, ok := status.Properties["conditions"]; ok || status.XPreserveUnknownFields != nil {
		// Helm-backed kinds have an open status written by the runtime;
		// both kinds of status carry conditions.
		o.StatusDescriptors = append(o.StatusDescriptors, Descriptor{
			Path: "conditions", DisplayName: "Conditions",
			Description:  "Latest observations of the resource's state.",
			XDescriptors: []string{xConditions},
		})
	}
	if status.XPreserveUnknownFields != nil {
		// What the Helm runtime writes besides the library's conditions
		// (internal/operator/helmruntime/ready.go).
		o.StatusDescriptors[len(o.StatusDescriptors)-1].Description = "Latest observations of the resource's state: " +
			"Ready (every object of the release works: Deployments available, StatefulSets ready, claims bound; " +
			"reason Progressing, Failed or ReleaseFailed and a message naming what is not when False), " +
			"Deployed (Helm applied the release), ReleaseFailed, Irreconcilable, Initialized and Paused, " +
			"each with the generation it describes."
		o.StatusDescriptors = append(o.StatusDescriptors, Descriptor{
			Path: "observedGeneration", DisplayName: "Observed Generation",
			Description:  "The generation of the spec the status describes.",
			XDescriptors: []string{"urn:alm:descriptor:text"},
		}, Descriptor{
			Path: "chartVersion", DisplayName: "Chart Version",
			Description:  "The version of the chart the release runs: the kind's default, a version the resource pins, or during a rollout the one it has not moved from yet.",
			XDescriptors: []string{"urn:alm:descriptor:text"},
		})
	}
	for _, name := range sortedKeys(status.Properties) {
		if name == "conditions" {
			continue
		}
		p := status.Properties[name]
		o.StatusDescriptors = append(o.StatusDescriptors, Descriptor{
			Path: name, DisplayName: humanize(name), Description: firstSentence(p.Description),
			XDescriptors: []string{"urn:alm:descriptor:text"},
		})
	}
	return o, nil
}

// walk returns descriptors for the properties of s, depth-first in name
// order. prefix is the dotted path of s.
func walk(s apiextensionsv1.JSONSchemaProps, prefix string, depth int) []Descriptor {
	var out []Descriptor
	for _, name := range sortedKeys(s.Properties) {
		p := s.Properties[name]
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		d := Descriptor{Path: path, DisplayName: humanize(name), Description: firstSentence(p.Description)}
		if prefix != "" {
			d.XDescriptors = append(d.XDescriptors, xFieldGroup+strings.SplitN(prefix, ".", 2)[0])
		}
		switch {
		case name == "resources" && p.Type == "object":
			d.XDescriptors = append(d.XDescriptors, xResources)
			out = append(out, d)
			continue
		case p.Type == "object" && len(p.Properties) > 0:
			if prefix == "" {
				// The group itself: the console and the scorecard look
				// for a descriptor of every top-level field of a spec.
				out = append(out, d)
			}
			if depth < maxDepth {
				out = append(out, walk(p, path, depth+1)...)
			}
			continue
		case p.Type == "boolean":
			d.XDescriptors = append(d.XDescriptors, xBool)
		case p.Type == "integer" || p.Type == "number":
			d.XDescriptors = append(d.XDescriptors, xNumber)
		case p.Type == "string" && len(p.Enum) > 0:
			for _, e := range p.Enum {
				d.XDescriptors = append(d.XDescriptors, xSelect+strings.Trim(string(e.Raw), `"`))
			}
		case p.Type == "string" || p.XIntOrString:
			d.XDescriptors = append(d.XDescriptors, xText)
		default:
			// Lists, maps and free-form objects: YAML view only.
			d.XDescriptors = append(d.XDescriptors, xAdvanced)
		}
		out = append(out, d)
	}
	return out
}

// humanize turns "webAppHostname" or "NamespaceTenant" into
// "Web App Hostname" / "Namespace Tenant".
func humanize(s string) string {
	var b strings.Builder
	runes := []rune(s)
	for i, r := range runes {
		if i > 0 && unicode.IsUpper(r) && (unicode.IsLower(runes[i-1]) ||
			(i+1 < len(runes) && unicode.IsLower(runes[i+1]) && unicode.IsUpper(runes[i-1]))) {
			b.WriteRune(' ')
		}
		if i == 0 {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
	}
	words := strings.Fields(b.String())
	for i, w := range words {
		if a, ok := acronyms[w]; ok {
			words[i] = a
		}
	}
	return strings.Join(words, " ")
}

// acronyms are written in capitals in display names.
var acronyms = map[string]string{"Api": "API", "Cpu": "CPU", "Dns": "DNS", "Hpa": "HPA", "Id": "ID", "Ip": "IP", "Pdb": "PDB", "Tls": "TLS", "Url": "URL", "Uid": "UID"}

// firstSentence keeps descriptions short enough for a form's help text.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// LoadCRDs reads every CRD in dir, sorted by name.
func LoadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(bytes.TrimPrefix(stripLeadingComments(data), []byte("---\n")), crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			continue
		}
		crds = append(crds, crd)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	return crds, nil
}

func stripLeadingComments(data []byte) []byte {
	for bytes.HasPrefix(data, []byte("#")) {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil
		}
		data = data[i+1:]
	}
	return data
}

// Update rewrites spec.customresourcedefinitions.owned of the CSV in
// csvData with an entry per CRD. resources maps a CRD name to the kinds of
// objects its resources create. Everything else in the CSV is kept.
func Update(csvData []byte, crds []*apiextensionsv1.CustomResourceDefinition, resources map[string][]Resource) ([]byte, error) {
	var csv map[string]any
	if err := yaml.Unmarshal(csvData, &csv); err != nil {
		return nil, fmt.Errorf("parse CSV: %w", err)
	}
	if csv["kind"] != "ClusterServiceVersion" {
		return nil, fmt.Errorf("not a ClusterServiceVersion")
	}
	var owned []OwnedCRD
	for _, crd := range crds {
		o, err := OwnedVersions(crd, resources[crd.Name])
		if err != nil {
			return nil, err
		}
		owned = append(owned, o...)
	}
	// Round-trip through JSON to store plain maps.
	raw, err := yaml.Marshal(owned)
	if err != nil {
		return nil, err
	}
	var ownedAny []any
	if err := yaml.Unmarshal(raw, &ownedAny); err != nil {
		return nil, err
	}
	spec, _ := csv["spec"].(map[string]any)
	if spec == nil {
		return nil, fmt.Errorf("CSV has no spec")
	}
	spec["customresourcedefinitions"] = map[string]any{"owned": ownedAny}
	return yaml.Marshal(csv)
}

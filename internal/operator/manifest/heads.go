package manifest

import (
	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Head is what a manifest document says about the object it holds: its
// kind, name, namespace and annotations, without the rest. The hooks that
// run after every install and upgrade (which kinds to watch, which
// objects' readiness to judge) need no more, and reading only these
// fields decodes a small struct instead of converting the whole document
// to JSON and then to maps.
type Head struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
}

// GroupVersionKind is the head's apiVersion and kind.
func (h Head) GroupVersionKind() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(h.APIVersion, h.Kind)
}

// Heads returns the head of each document of manifest, in order. A
// document that is empty, or that does not parse as a mapping, has none
// (as with a full parse, the caller skips it).
func Heads(manifest string) []Head {
	var out []Head
	for _, doc := range documentSeparator.Split(manifest, -1) {
		var h Head
		if err := yamlv2.Unmarshal([]byte(doc), &h); err != nil {
			continue
		}
		if h.APIVersion == "" && h.Kind == "" && h.Metadata.Name == "" {
			continue
		}
		out = append(out, h)
	}
	return out
}

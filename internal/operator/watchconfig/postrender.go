package watchconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/postrender"
)

// LoadPostRender reads the postRender field of every entry of the watches
// file at path, in the order of the entries, and compiles each
// (postrender.New); an entry without one has a nil Renderer, which changes
// nothing. A field it does not know, a patch that does not parse, a
// missing or bad target and a bad image rewrite are errors naming the
// entry, so that the operator does not start with them.
func LoadPostRender(path string) ([]*postrender.Renderer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []struct {
		Kind       string          `json:"kind"`
		PostRender json.RawMessage `json:"postRender"`
	}
	if err := yaml.Unmarshal(b, &entries); err != nil {
		return nil, err
	}
	out := make([]*postrender.Renderer, len(entries))
	for i, e := range entries {
		if len(e.PostRender) == 0 || string(e.PostRender) == "null" {
			continue
		}
		var c postrender.Config
		dec := json.NewDecoder(bytes.NewReader(e.PostRender))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("entry %d (%s): postRender: not {patches: [{target: {...}, patch: ...}], images: [{name: ..., newName: ..., newTag: ...}]}: %w", i, e.Kind, err)
		}
		if out[i], err = postrender.New(c); err != nil {
			return nil, fmt.Errorf("entry %d (%s): postRender: %w", i, e.Kind, err)
		}
	}
	return out, nil
}

// SetPostRender gives each resolved watch the post-renderer of its entry
// (LoadPostRender).
func SetPostRender(resolved []ResolvedWatch, renderers []*postrender.Renderer) {
	for i := range resolved {
		if i < len(renderers) {
			resolved[i].PostRender = renderers[i]
		}
	}
}

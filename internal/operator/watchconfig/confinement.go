package watchconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/release"
)

// ConfinementField is the confinement field of a watches.yaml entry, as
// written: what a release of the kind may place outside its resource's
// namespace (the rule is release.Confinement's).
type ConfinementField struct {
	// ClusterScopedKinds are the cluster-scoped kinds a release may
	// create: Kind for the core group ("Namespace"), group/Kind otherwise
	// ("rbac.authorization.k8s.io/ClusterRole").
	ClusterScopedKinds []string `json:"clusterScopedKinds,omitempty"`
	// Namespaces are further namespaces a release of a namespaced kind
	// may place objects in.
	Namespaces []string `json:"namespaces,omitempty"`
}

// Parse checks every listed kind and namespace and returns the allowance.
func (f ConfinementField) Parse() (release.Confinement, error) {
	var c release.Confinement
	var errs []error
	for i, s := range f.ClusterScopedKinds {
		gk, err := release.ParseGroupKind(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("clusterScopedKinds[%d]: %w", i, err))
			continue
		}
		c.ClusterScopedKinds = append(c.ClusterScopedKinds, gk)
	}
	for i, ns := range f.Namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("namespaces[%d]: %q is not a namespace name: %v", i, ns, msgs))
			continue
		}
		c.Namespaces = append(c.Namespaces, ns)
	}
	return c, errors.Join(errs...)
}

// LoadConfinement reads the confinement field of every entry of the
// watches file at path, in the order of the entries; an entry without one
// may place nothing outside its resource's namespace and no cluster-scoped
// object. A field that is not a list of kinds and a list of namespaces is
// an error, and so is a field it does not know (a misspelt allowance
// would otherwise allow nothing, silently).
func LoadConfinement(path string) ([]release.Confinement, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []struct {
		Kind        string          `json:"kind"`
		Confinement json.RawMessage `json:"confinement"`
	}
	if err := yaml.Unmarshal(b, &entries); err != nil {
		return nil, err
	}
	out := make([]release.Confinement, len(entries))
	for i, e := range entries {
		if len(e.Confinement) == 0 || string(e.Confinement) == "null" {
			continue
		}
		var f ConfinementField
		dec := json.NewDecoder(bytes.NewReader(e.Confinement))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("entry %d (%s): confinement: not {clusterScopedKinds: [...], namespaces: [...]}: %w", i, e.Kind, err)
		}
		if out[i], err = f.Parse(); err != nil {
			return nil, fmt.Errorf("entry %d (%s): confinement: %w", i, e.Kind, err)
		}
	}
	return out, nil
}

// SetConfinement gives each resolved watch the allowance of its entry
// (LoadConfinement).
func SetConfinement(resolved []ResolvedWatch, confinements []release.Confinement) {
	for i := range resolved {
		if i < len(confinements) {
			resolved[i].Confinement = confinements[i]
		}
	}
}

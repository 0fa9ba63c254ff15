package watchconfig

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// LoadServiceAccountNames reads the serviceAccountName field of every
// entry of the watches file at path, in the order of the entries: the
// ServiceAccount, in each release's namespace, that the runtime acts as
// for the kind's releases (Kubernetes impersonation). "" for an entry
// without one: its releases are applied with the operator's own rights. A
// name that is not a ServiceAccount name is an error.
func LoadServiceAccountNames(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []struct {
		Kind               string `json:"kind"`
		ServiceAccountName string `json:"serviceAccountName"`
	}
	if err := yaml.Unmarshal(b, &entries); err != nil {
		return nil, err
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		if e.ServiceAccountName == "" {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(e.ServiceAccountName); len(msgs) > 0 {
			return nil, fmt.Errorf("entry %d (%s): serviceAccountName: %q is not a ServiceAccount name: %v", i, e.Kind, e.ServiceAccountName, msgs)
		}
		out[i] = e.ServiceAccountName
	}
	return out, nil
}

// SetServiceAccountNames gives each resolved watch the ServiceAccount of
// its entry (LoadServiceAccountNames).
func SetServiceAccountNames(resolved []ResolvedWatch, names []string) {
	for i := range resolved {
		if i < len(names) {
			resolved[i].ServiceAccountName = names[i]
		}
	}
}

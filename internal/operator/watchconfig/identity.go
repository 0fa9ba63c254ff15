package watchconfig

import (
	"fmt"
	"os"
	"strings"

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
		if err := CheckServiceAccountName(e.ServiceAccountName); err != nil {
			return nil, fmt.Errorf("entry %d (%s): serviceAccountName: %w", i, e.Kind, err)
		}
		out[i] = e.ServiceAccountName
	}
	return out, nil
}

// CheckServiceAccountName returns an error saying why name cannot name a
// ServiceAccount, nil when it can.
func CheckServiceAccountName(name string) error {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%q is not a ServiceAccount name: %s", name, strings.Join(msgs, "; "))
	}
	return nil
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

package watchconfig

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// What the runtime does with the CustomResourceDefinitions in a chart's
// crds/ directory (and in its subcharts'), per kind (watches.yaml crds).
//
// Helm installs crds/ before the templates of a first install when a CRD
// is missing, never updates one that exists, does nothing with crds/ on an
// upgrade and never deletes them. The runtime applies crds/ itself, with
// the operator's own rights (never a tenant's ServiceAccount: a CRD is
// cluster-wide, and the policy is the platform team's grant), before the
// release's install or upgrade, and waits until each CRD it created or
// changed is Established, so that the templates may render objects of it.
// No policy deletes a CRD: uninstalling a release leaves its CRDs, as
// Helm does.

// CRDPolicy is what happens to a kind's charts' CRDs.
type CRDPolicy string

const (
	// CRDsCreate, the default, is Helm's behaviour: a CRD missing at an
	// install or an upgrade is created; one that exists is never changed.
	CRDsCreate CRDPolicy = "create"
	// CRDsSkip installs no CRD of crds/ (helm install --skip-crds): the
	// platform team installs them.
	CRDsSkip CRDPolicy = "skip"
	// CRDsCreateReplace creates missing CRDs and updates existing ones to
	// the chart's version (server-side apply as CRDFieldManager) before
	// every install and upgrade.
	CRDsCreateReplace CRDPolicy = "create-replace"
)

// CRDFieldManager is the field manager of the runtime's applies of CRDs.
const CRDFieldManager = "platform-operator-crds"

// ParseCRDPolicy reads a policy; the empty string is CRDsCreate.
func ParseCRDPolicy(s string) (CRDPolicy, error) {
	switch p := CRDPolicy(strings.TrimSpace(s)); p {
	case "":
		return CRDsCreate, nil
	case CRDsCreate, CRDsSkip, CRDsCreateReplace:
		return p, nil
	}
	return "", fmt.Errorf("%q is not one of skip, create, create-replace", s)
}

// LoadCRDPolicies reads the crds field of every entry of the watches file
// at path, in the order of the entries; an entry without one gets
// CRDsCreate. A value that is not a policy is an error naming the entry.
func LoadCRDPolicies(path string) ([]CRDPolicy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []struct {
		Kind string  `json:"kind"`
		CRDs *string `json:"crds"`
	}
	if err := yaml.Unmarshal(b, &entries); err != nil {
		return nil, err
	}
	out := make([]CRDPolicy, len(entries))
	for i, e := range entries {
		v := ""
		if e.CRDs != nil {
			if v = *e.CRDs; strings.TrimSpace(v) == "" {
				return nil, fmt.Errorf("entry %d (%s): crds: empty; write one of skip, create, create-replace, or leave the field out for create", i, e.Kind)
			}
		}
		p, err := ParseCRDPolicy(v)
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s): crds: %w", i, e.Kind, err)
		}
		out[i] = p
	}
	return out, nil
}

// SetCRDPolicies gives each resolved watch the CRD policy of its entry
// (LoadCRDPolicies).
func SetCRDPolicies(resolved []ResolvedWatch, policies []CRDPolicy) {
	for i := range resolved {
		if i < len(policies) {
			resolved[i].CRDs = policies[i]
		}
	}
}

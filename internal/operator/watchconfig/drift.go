package watchconfig

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// DriftMode says what the runtime does when an object of a release no
// longer matches what the release rendered (edited or deleted by hand or by
// another controller).
type DriftMode string

const (
	// DriftRepair puts the object back as rendered: the default, and
	// operator-sdk's behaviour.
	DriftRepair DriftMode = "repair"
	// DriftWarn changes nothing: the custom resource's Drifted condition
	// and an Event name the objects and fields that differ.
	DriftWarn DriftMode = "warn"
	// DriftOff neither compares nor repairs between upgrades.
	DriftOff DriftMode = "off"
)

// ParseDriftMode reads a drift mode; the empty string is DriftRepair.
func ParseDriftMode(s string) (DriftMode, error) {
	switch m := DriftMode(strings.TrimSpace(s)); m {
	case "":
		return DriftRepair, nil
	case DriftRepair, DriftWarn, DriftOff:
		return m, nil
	default:
		return "", fmt.Errorf("drift mode %q is not one of repair, warn, off", s)
	}
}

// DriftIgnore names fields of rendered objects that another controller
// owns: drift repair leaves them as they are on the API server and warn
// mode does not report them. An upgrade still applies a change the chart
// makes to them.
type DriftIgnore struct {
	// Group and Kind select the objects (Group empty: the core group, or
	// any group when Kind names no core kind; see Matches).
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	// Name, when set, selects one object by its name.
	Name string `json:"name,omitempty"`
	// Paths are the ignored fields: dot-separated keys, where key[x]
	// selects the list element whose name is x (or the map entry x, for
	// keys with dots such as annotations) and key[*] every element:
	// spec.replicas, spec.template.spec.containers[*].resources,
	// metadata.annotations[example.com/owner].
	Paths []string `json:"paths"`
}

// Matches reports whether the rule selects an object of group, kind and
// name. A rule without a group matches the kind in any group.
func (d DriftIgnore) Matches(group, kind, name string) bool {
	if d.Kind != kind {
		return false
	}
	if d.Group != "" && d.Group != group {
		return false
	}
	return d.Name == "" || d.Name == name
}

// Validate reports a rule without a kind or paths, or with a path that
// does not parse.
func (d DriftIgnore) Validate() error {
	var errs []error
	if d.Kind == "" {
		errs = append(errs, errors.New("kind must be set"))
	}
	if len(d.Paths) == 0 {
		errs = append(errs, errors.New("paths must name at least one field"))
	}
	for _, p := range d.Paths {
		if _, err := ParseFieldPath(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Drift is the drift policy of a kind: the drift field of its watches.yaml
// entry.
type Drift struct {
	// Mode is repair (the default), warn or off. A resource's DriftAnnotation
	// overrides it.
	Mode DriftMode `json:"mode,omitempty"`
	// Ignore lists fields other controllers own. A resource's
	// DriftIgnoreAnnotation adds to it.
	Ignore []DriftIgnore `json:"ignore,omitempty"`
}

// Validate checks the mode and every ignore rule.
func (d Drift) Validate() error {
	var errs []error
	if _, err := ParseDriftMode(string(d.Mode)); err != nil {
		errs = append(errs, err)
	}
	for i, ig := range d.Ignore {
		if err := ig.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("ignore[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Annotations of a custom resource that set its drift policy.
const (
	// DriftAnnotation sets the resource's drift mode: repair, warn or off.
	DriftAnnotation = "platform.acme.com/drift"
	// DriftIgnoreAnnotation adds ignore rules for the resource's objects,
	// in the form of the drift.ignore field of watches.yaml (a YAML or
	// JSON list).
	DriftIgnoreAnnotation = "platform.acme.com/drift-ignore"
)

// ParseDriftIgnores reads the value of DriftIgnoreAnnotation.
func ParseDriftIgnores(s string) ([]DriftIgnore, error) {
	var rules []DriftIgnore
	if err := yaml.UnmarshalStrict([]byte(s), &rules); err != nil {
		return nil, fmt.Errorf("not a list of {group, kind, name, paths}: %w", err)
	}
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("rule %d: %w", i, err)
		}
	}
	return rules, nil
}

// FieldStep is one step of a FieldPath: a key, and optionally a selector
// in brackets (Select: a list element's name or a map key; "*" for all).
type FieldStep struct {
	Key       string
	Select    string
	HasSelect bool
}

// FieldPath is a parsed ignore path; see DriftIgnore.Paths.
type FieldPath []FieldStep

// ParseFieldPath parses a path such as
// spec.template.spec.containers[*].resources.
func ParseFieldPath(s string) (FieldPath, error) {
	var path FieldPath
	rest := s
	for rest != "" {
		var step FieldStep
		i := strings.IndexAny(rest, ".[")
		if i < 0 {
			step.Key, rest = rest, ""
		} else {
			step.Key, rest = rest[:i], rest[i:]
		}
		if step.Key == "" {
			return nil, fmt.Errorf("path %q: empty key", s)
		}
		if strings.HasPrefix(rest, "[") {
			end := strings.Index(rest, "]")
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", s)
			}
			step.Select, step.HasSelect = rest[1:end], true
			if step.Select == "" {
				return nil, fmt.Errorf("path %q: empty []", s)
			}
			rest = rest[end+1:]
		}
		if rest != "" {
			if !strings.HasPrefix(rest, ".") || len(rest) == 1 {
				return nil, fmt.Errorf("path %q: expected a dot and a key after %q", s, step.Key)
			}
			rest = rest[1:]
		}
		path = append(path, step)
	}
	if len(path) == 0 {
		return nil, errors.New("empty path")
	}
	return path, nil
}

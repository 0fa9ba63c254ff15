package watchconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// What the runtime does when a revision does not become Ready in time.
//
// After every install and upgrade a release has ReadyTimeout to become
// Ready. When an upgrade misses it and the revision before it was Ready,
// the release is rolled back to that revision (RemediateRollback, the
// default) and the spec that broke it is not applied again until it
// changes or RetryAnnotation asks. Per kind in watches.yaml
// (remediation.readyTimeout, remediation.strategy), per resource by
// annotation.

// RemediationStrategy says what happens to an upgrade that did not become
// Ready in time.
type RemediationStrategy string

const (
	// RemediateRollback rolls the release back to its last Ready revision.
	RemediateRollback RemediationStrategy = "rollback"
	// RemediateNone reports the release Stalled and changes nothing.
	RemediateNone RemediationStrategy = "none"
)

// Bounds and default of the time a revision has to become Ready.
const (
	DefaultReadyTimeout = 5 * time.Minute
	MinReadyTimeout     = 10 * time.Second
	MaxReadyTimeout     = 24 * time.Hour
	// MaxRetries bounds how often a spec that was rolled back is tried
	// again on its own.
	MaxRetries = 10
)

// Annotations that set a resource's remediation, in place of its kind's.
const (
	// ReadyTimeoutAnnotation: how long each revision has to become Ready
	// (a Go duration between MinReadyTimeout and MaxReadyTimeout).
	ReadyTimeoutAnnotation = "platform.acme.com/ready-timeout"
	// RemediationAnnotation: rollback or none.
	RemediationAnnotation = "platform.acme.com/remediation"
	// RetriesAnnotation: how often a spec that was rolled back is tried
	// again before it is held back (0 to MaxRetries).
	RetriesAnnotation = "platform.acme.com/remediation-retries"
	// TestAnnotation: "true" runs the chart's test hooks after each
	// install and upgrade, once every object is ready; "false" does not.
	TestAnnotation = "platform.acme.com/test"
	// InstallRemediationAnnotation: keep or uninstall, what happens to a
	// first install that does not become Ready in time.
	InstallRemediationAnnotation = "platform.acme.com/remediation-install"
	// RetryAnnotation: a new value (a timestamp, say) applies a spec that
	// was rolled back once more.
	RetryAnnotation = "platform.acme.com/retry"
)

// Remediation is the remediation of a kind, or of one resource.
type Remediation struct {
	// ReadyTimeout is how long a revision has to become Ready.
	ReadyTimeout time.Duration
	Strategy     RemediationStrategy
	// Retries is how often a spec that was rolled back is upgraded to
	// again, once the rollback is Ready, before it is held back.
	Retries int
	// Test runs the chart's test hooks (helm test) on each revision once
	// its objects are ready; a failing test counts as not Ready.
	Test bool
	// UninstallInstalls uninstalls a first install that does not become
	// Ready in time (install: uninstall), instead of keeping it.
	UninstallInstalls bool
}

// DefaultRemediation is the remediation of a kind whose entry sets none.
func DefaultRemediation() Remediation {
	return Remediation{ReadyTimeout: DefaultReadyTimeout, Strategy: RemediateRollback}
}

// ParseRemediationStrategy reads a strategy; the empty string is
// RemediateRollback.
func ParseRemediationStrategy(s string) (RemediationStrategy, error) {
	switch r := RemediationStrategy(strings.TrimSpace(s)); r {
	case "":
		return RemediateRollback, nil
	case RemediateRollback, RemediateNone:
		return r, nil
	default:
		return "", fmt.Errorf("%q is not one of rollback, none", s)
	}
}

// ParseReadyTimeout reads a ready timeout: a Go duration (90s, 5m, 1h)
// between MinReadyTimeout and MaxReadyTimeout.
func ParseReadyTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 90s, 5m or 1h", s)
	}
	if d < MinReadyTimeout || d > MaxReadyTimeout {
		return 0, fmt.Errorf("%q is outside %s to %s", s, MinReadyTimeout, shortDuration(MaxReadyTimeout))
	}
	return d, nil
}

// shortDuration writes 24h0m0s as 24h.
func shortDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}

// parseInstallRemediation reads keep (false) or uninstall (true).
func parseInstallRemediation(s string) (bool, error) {
	switch strings.TrimSpace(s) {
	case "keep":
		return false, nil
	case "uninstall":
		return true, nil
	}
	return false, fmt.Errorf("%q is not one of keep, uninstall", s)
}

// ParseRetries reads a number of retries, 0 to MaxRetries.
func ParseRetries(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > MaxRetries {
		return 0, fmt.Errorf("%q is not a number from 0 to %d", s, MaxRetries)
	}
	return n, nil
}

// For returns the remediation of a resource with annotations: r with what
// the annotations set. An annotation that does not parse is an error
// naming it; the admission webhook refuses such a resource, and the
// runtime keeps r for it.
func (r Remediation) For(annotations map[string]string) (Remediation, error) {
	var errs []error
	if v, ok := annotations[ReadyTimeoutAnnotation]; ok {
		if d, err := ParseReadyTimeout(v); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", ReadyTimeoutAnnotation, err))
		} else {
			r.ReadyTimeout = d
		}
	}
	if v, ok := annotations[RemediationAnnotation]; ok {
		if s, err := ParseRemediationStrategy(v); err != nil || strings.TrimSpace(v) == "" {
			if err == nil {
				err = errors.New(`"" is not one of rollback, none`)
			}
			errs = append(errs, fmt.Errorf("annotation %s: %w", RemediationAnnotation, err))
		} else {
			r.Strategy = s
		}
	}
	if v, ok := annotations[RetriesAnnotation]; ok {
		if n, err := ParseRetries(v); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", RetriesAnnotation, err))
		} else {
			r.Retries = n
		}
	}
	if v, ok := annotations[InstallRemediationAnnotation]; ok {
		if u, err := parseInstallRemediation(v); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", InstallRemediationAnnotation, err))
		} else {
			r.UninstallInstalls = u
		}
	}
	if v, ok := annotations[TestAnnotation]; ok {
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %q is not true or false", TestAnnotation, v))
		} else {
			r.Test = b
		}
	}
	return r, errors.Join(errs...)
}

// RemediationField is the remediation field of a watches.yaml entry, as
// written.
type RemediationField struct {
	ReadyTimeout string `json:"readyTimeout,omitempty"`
	Strategy     string `json:"strategy,omitempty"`
	Retries      *int   `json:"retries,omitempty"`
	Test         bool   `json:"test,omitempty"`
	Install      string `json:"install,omitempty"`
}

// Parse checks the field and returns the remediation, defaults filled in.
func (f RemediationField) Parse() (Remediation, error) {
	r := DefaultRemediation()
	var errs []error
	if f.ReadyTimeout != "" {
		d, err := ParseReadyTimeout(f.ReadyTimeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("readyTimeout: %w", err))
		}
		r.ReadyTimeout = d
	}
	s, err := ParseRemediationStrategy(f.Strategy)
	if err != nil {
		errs = append(errs, fmt.Errorf("strategy: %w", err))
	}
	r.Strategy = s
	r.Test = f.Test
	if f.Install != "" {
		u, err := parseInstallRemediation(f.Install)
		if err != nil {
			errs = append(errs, fmt.Errorf("install: %w", err))
		}
		r.UninstallInstalls = u
	}
	if f.Retries != nil {
		if *f.Retries < 0 || *f.Retries > MaxRetries {
			errs = append(errs, fmt.Errorf("retries: %d is not a number from 0 to %d", *f.Retries, MaxRetries))
		} else {
			r.Retries = *f.Retries
		}
	}
	return r, errors.Join(errs...)
}

// LoadRemediation reads the remediation field of every entry of the
// watches file at path, in the order of the entries; an entry without one
// has DefaultRemediation. A field it does not know is an error.
func LoadRemediation(path string) ([]Remediation, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []struct {
		Kind        string          `json:"kind"`
		Remediation json.RawMessage `json:"remediation"`
	}
	if err := yaml.Unmarshal(b, &entries); err != nil {
		return nil, err
	}
	out := make([]Remediation, len(entries))
	for i, e := range entries {
		out[i] = DefaultRemediation()
		if len(e.Remediation) == 0 || string(e.Remediation) == "null" {
			continue
		}
		var f RemediationField
		dec := json.NewDecoder(bytes.NewReader(e.Remediation))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("entry %d (%s): remediation: not {readyTimeout: 5m, strategy: rollback|none, retries: 0, test: false, install: keep|uninstall}: %w", i, e.Kind, err)
		}
		if out[i], err = f.Parse(); err != nil {
			return nil, fmt.Errorf("entry %d (%s): remediation: %w", i, e.Kind, err)
		}
	}
	return out, nil
}

// SetRemediation gives each resolved watch the remediation of its entry
// (LoadRemediation).
func SetRemediation(resolved []ResolvedWatch, remediations []Remediation) {
	for i := range resolved {
		if i < len(remediations) {
			resolved[i].Remediation = remediations[i]
		}
	}
}

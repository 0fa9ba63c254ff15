// Package rollout moves the releases of a kind to a new chart version in
// waves: a canary wave first, then growing waves, each started only when
// the releases of the waves before it are Ready, and halted when a wave's
// failures exceed the kind's threshold.
//
// The package holds what the runtime's rollout controller
// (helmruntime/rollout.go) and the action path (actionpath/chartversion.go)
// share: the policy of a kind (watches.yaml rollout), the order in which
// releases move (Plan), the judgement of a wave (Judge) and the Gate the
// action path asks whether a release may move yet.
package rollout

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Annotations and labels a resource carries.
const (
	// PinAnnotation pins the chart version a resource runs: a version the
	// operator ships. A pinned resource is never moved by a rollout; a
	// version the operator does not ship is refused at apply.
	PinAnnotation = "platform.acme.com/chart-version"
	// CanaryLabel marks the resources that move first ("true"): the first
	// wave is every canary, or, without canaries, the policy's first wave.
	CanaryLabel = "platform.acme.com/canary"
)

// Strategies of a rollout.
const (
	// StrategyWaves moves releases in the policy's waves.
	StrategyWaves = "waves"
	// StrategyAllAtOnce moves every release at once: one wave of 100%.
	StrategyAllAtOnce = "all-at-once"
)

// DefaultWaves are the waves of a kind whose policy names none: one
// release (or the canaries), a tenth, half, and the rest.
var DefaultWaves = []Step{{Count: 1}, {Percent: 10}, {Percent: 50}, {Percent: 100}}

// DefaultWaveTimeoutMargin is added to the kind's ready timeout to give a
// wave's deadline when the policy sets none: each release of the wave
// has its ready timeout, counted from its own upgrade, to become Ready.
const DefaultWaveTimeoutMargin = 2 * time.Minute

// Step is one wave: how many releases have moved once it is done, a
// number of releases or a percentage of the kind's releases (cumulative).
type Step struct {
	Count   int
	Percent int
}

// String writes s as in watches.yaml: 10 or 10%.
func (s Step) String() string {
	if s.Percent > 0 {
		return fmt.Sprintf("%d%%", s.Percent)
	}
	return strconv.Itoa(s.Count)
}

// Of is how many of total releases have moved once the wave is done: a
// percentage rounds up, so that every wave moves at least one release.
func (s Step) Of(total int) int {
	n := s.Count
	if s.Percent > 0 {
		n = int(math.Ceil(float64(total) * float64(s.Percent) / 100))
	}
	return min(n, total)
}

// ParseStep reads a wave: a positive number or a percentage (1% to 100%).
func ParseStep(s string) (Step, error) {
	v := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 {
			return Step{}, fmt.Errorf("%q is not a percentage from 1%% to 100%%", s)
		}
		return Step{Percent: n}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return Step{}, fmt.Errorf("%q is not a positive number of releases or a percentage such as 10%%", s)
	}
	return Step{Count: n}, nil
}

// Threshold is how many failed releases a wave tolerates: a number, or a
// percentage of the wave's releases (rounded down).
type Threshold struct {
	Count   int
	Percent int
}

// Of is how many failures a wave of size releases tolerates.
func (t Threshold) Of(size int) int {
	if t.Percent > 0 {
		return size * t.Percent / 100
	}
	return t.Count
}

// String writes t as in watches.yaml.
func (t Threshold) String() string {
	if t.Percent > 0 {
		return fmt.Sprintf("%d%%", t.Percent)
	}
	return strconv.Itoa(t.Count)
}

// ParseThreshold reads a threshold: a number from 0, or a percentage
// from 0% to 100%.
func ParseThreshold(s string) (Threshold, error) {
	v := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 100 {
			return Threshold{}, fmt.Errorf("%q is not a percentage from 0%% to 100%%", s)
		}
		return Threshold{Percent: n}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return Threshold{}, fmt.Errorf("%q is not a number of releases from 0 or a percentage such as 10%%", s)
	}
	return Threshold{Count: n}, nil
}

// Policy is how a kind's releases move to a new chart version.
type Policy struct {
	// Strategy is StrategyWaves or StrategyAllAtOnce.
	Strategy string
	// Waves are cumulative; the last is 100%.
	Waves []Step
	// MaxFailures is how many failed releases a wave tolerates before the
	// rollout halts.
	MaxFailures Threshold
	// Pause is how long the rollout waits between a wave that is done
	// and the next.
	Pause time.Duration
	// WaveTimeout is how long a wave has, from its start, for each of its
	// releases to move and become Ready; 0 is the kind's ready timeout
	// and DefaultWaveTimeoutMargin.
	WaveTimeout time.Duration
}

// DefaultPolicy is the policy of a kind whose entry sets none: the
// default waves, no failure tolerated, no pause.
func DefaultPolicy() Policy {
	return Policy{Strategy: StrategyWaves, Waves: DefaultWaves}
}

// Steps are the waves the policy runs: one of 100% for all-at-once.
func (p Policy) Steps() []Step {
	if p.Strategy == StrategyAllAtOnce {
		return []Step{{Percent: 100}}
	}
	return p.Waves
}

// Timeout is the wave deadline, with readyTimeout the kind's.
func (p Policy) Timeout(readyTimeout time.Duration) time.Duration {
	if p.WaveTimeout > 0 {
		return p.WaveTimeout
	}
	return readyTimeout + DefaultWaveTimeoutMargin
}

// Field is the rollout field of a watches.yaml entry, as written.
type Field struct {
	Strategy    string   `json:"strategy,omitempty"`
	Waves       []string `json:"waves,omitempty"`
	MaxFailures *string  `json:"maxFailures,omitempty"`
	Pause       string   `json:"pause,omitempty"`
	WaveTimeout string   `json:"waveTimeout,omitempty"`
}

// Parse checks the field and returns the policy, defaults filled in.
func (f Field) Parse() (Policy, error) {
	p := DefaultPolicy()
	var errs []error
	switch s := strings.TrimSpace(f.Strategy); s {
	case "", StrategyWaves:
	case StrategyAllAtOnce:
		p.Strategy = s
		if len(f.Waves) > 0 {
			errs = append(errs, errors.New("waves: not read with strategy all-at-once; leave it out"))
		}
	default:
		errs = append(errs, fmt.Errorf("strategy: %q is not one of waves, all-at-once", f.Strategy))
	}
	if len(f.Waves) > 0 && p.Strategy == StrategyWaves {
		waves, err := parseWaves(f.Waves)
		if err != nil {
			errs = append(errs, err)
		}
		p.Waves = waves
	}
	if f.MaxFailures != nil {
		t, err := ParseThreshold(*f.MaxFailures)
		if err != nil {
			errs = append(errs, fmt.Errorf("maxFailures: %w", err))
		}
		p.MaxFailures = t
	}
	if f.Pause != "" {
		d, err := time.ParseDuration(strings.TrimSpace(f.Pause))
		if err != nil || d < 0 || d > 24*time.Hour {
			errs = append(errs, fmt.Errorf("pause: %q is not a duration from 0s to 24h", f.Pause))
		}
		p.Pause = d
	}
	if f.WaveTimeout != "" {
		d, err := time.ParseDuration(strings.TrimSpace(f.WaveTimeout))
		if err != nil || d < 10*time.Second || d > 24*time.Hour {
			errs = append(errs, fmt.Errorf("waveTimeout: %q is not a duration from 10s to 24h", f.WaveTimeout))
		}
		p.WaveTimeout = d
	}
	return p, errors.Join(errs...)
}

// parseWaves reads the waves: each larger than the one before it, the
// last 100%.
func parseWaves(ws []string) ([]Step, error) {
	out := make([]Step, 0, len(ws))
	for i, w := range ws {
		s, err := ParseStep(w)
		if err != nil {
			return nil, fmt.Errorf("waves[%d]: %w", i, err)
		}
		if i > 0 {
			prev := out[i-1]
			if prev.Percent == 100 || (prev.Percent > 0 && s.Percent > 0 && s.Percent <= prev.Percent) ||
				(prev.Count > 0 && s.Count > 0 && s.Count <= prev.Count) || (prev.Percent > 0 && s.Count > 0) {
				return nil, fmt.Errorf("waves[%d]: %s does not grow from %s; waves are cumulative, numbers first, then growing percentages", i, s, prev)
			}
		}
		out = append(out, s)
	}
	if last := out[len(out)-1]; last.Percent != 100 {
		return nil, fmt.Errorf("waves: the last wave is %s; it must be 100%%, so that every release moves", last)
	}
	return out, nil
}

package rollout

import (
	"cmp"
	"hash/fnv"
	"slices"
	"time"
)

// Member is one resource of a kind, as the rollout controller sees it.
type Member struct {
	// Key is namespace/name (name for a cluster-scoped kind).
	Key string
	// UID orders the releases that are not canaries.
	UID string
	// Canary: labelled CanaryLabel=true.
	Canary bool
	// Version is the chart version its release runs ("" until its status
	// says).
	Version string
	// Ready: Ready=True for its current spec.
	Ready bool
	// Failed: a revision of the rollout's version was remediated (rolled
	// back, or left Stalled) since the rollout's attempt began.
	Failed bool
	// HeldMove is the chart version of an upgrade that was rolled back
	// and whose remediation holds the release back, when that upgrade
	// moved it to another version: a rollout to a version retries it.
	HeldMove string
}

// Plan is the order in which a rollout moves releases and how many have
// moved once each wave is done.
type Plan struct {
	// Order is every member, canaries first, then by a digest of the UID:
	// the same order in every pass and after a restart.
	Order []Member
	// Ends[i] is how many of Order have moved once wave i is done;
	// strictly growing, the last len(Order).
	Ends []int
}

// NewPlan orders members and sizes the waves of steps.
func NewPlan(members []Member, steps []Step) Plan {
	order := slices.Clone(members)
	rank := func(m Member) uint64 {
		h := fnv.New64a()
		h.Write([]byte(m.UID))
		return h.Sum64()
	}
	slices.SortFunc(order, func(a, b Member) int {
		if a.Canary != b.Canary {
			if a.Canary {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Key, b.Key))
	})
	canaries := 0
	for _, m := range order {
		if m.Canary {
			canaries++
		}
	}
	total := len(order)
	var ends []int
	for i, s := range steps {
		n := s.Of(total)
		if i == 0 && canaries > 0 {
			n = canaries
		}
		if len(ends) > 0 && n <= ends[len(ends)-1] {
			continue
		}
		ends = append(ends, n)
		if n == total {
			break
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] < total {
		ends = append(ends, total)
	}
	return Plan{Order: order, Ends: ends}
}

// Wave is the members wave i (0-based) moves.
func (p Plan) Wave(i int) []Member {
	if i < 0 || i >= len(p.Ends) {
		return nil
	}
	start := 0
	if i > 0 {
		start = p.Ends[i-1]
	}
	return p.Order[start:p.Ends[i]]
}

// Admitted is the members that may move while wave i runs: every wave up
// to and including i.
func (p Plan) Admitted(i int) []Member {
	if i < 0 {
		return nil
	}
	if i >= len(p.Ends) {
		return p.Order
	}
	return p.Order[:p.Ends[i]]
}

// Verdict is the judgement of a running wave.
type Verdict struct {
	// Moved: at the rollout's version and Ready; Failed: remediated, or not
	// moved and Ready by the wave's deadline; Pending: neither yet.
	Moved, Failed, Pending int
	// Halt: more failures than the policy tolerates.
	Halt bool
	// Done: nothing pending, and no halt.
	Done bool
}

// Judge judges the members of a wave for a rollout to version, the wave
// having begun at start.
func Judge(wave []Member, version string, p Policy, readyTimeout time.Duration, start, now time.Time) Verdict {
	var v Verdict
	late := now.Sub(start) > p.Timeout(readyTimeout)
	for _, m := range wave {
		switch {
		case m.Failed:
			v.Failed++
		case m.Version == version && m.Ready:
			v.Moved++
		case late:
			v.Failed++
		default:
			v.Pending++
		}
	}
	v.Halt = v.Failed > p.MaxFailures.Of(len(wave))
	v.Done = !v.Halt && v.Pending == 0
	return v
}

package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// members returns n members with UIDs uid-0…; the indexes in canaries
// are canaries.
func members(n int, canaries ...int) []Member {
	out := make([]Member, n)
	for i := range out {
		out[i] = Member{Key: fmt.Sprintf("ns/web-%d", i), UID: fmt.Sprintf("uid-%d", i), Canary: slices.Contains(canaries, i)}
	}
	return out
}

// firsts is 0…n-1.
func firsts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func keys(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Key
	}
	return out
}

func TestNewPlanOrder(t *testing.T) {
	g := NewWithT(t)
	in := members(50, 7, 31, 44)
	before := slices.Clone(in)
	p := NewPlan(in, DefaultWaves)
	g.Expect(in).To(Equal(before), "the members given are not reordered")
	g.Expect(p.Order).To(HaveLen(50))
	g.Expect(p.Order).To(ConsistOf(in))

	// Canaries first, whatever their place in the list.
	g.Expect(keys(p.Order[:3])).To(ConsistOf("ns/web-7", "ns/web-31", "ns/web-44"))
	for _, m := range p.Order[3:] {
		g.Expect(m.Canary).To(BeFalse())
	}
	// Not the order given: a digest of the UID spreads the releases.
	g.Expect(keys(p.Order[3:])).NotTo(Equal(keys(slices.DeleteFunc(slices.Clone(in), func(m Member) bool { return m.Canary }))))

	// The same order in every pass, whatever order the cache lists the
	// members in.
	reversed := slices.Clone(in)
	slices.Reverse(reversed)
	g.Expect(NewPlan(reversed, DefaultWaves).Order).To(Equal(p.Order))
	g.Expect(NewPlan(in, DefaultWaves).Order).To(Equal(p.Order))
	// A member that leaves does not reorder the others.
	fewer := NewPlan(slices.Delete(slices.Clone(in), 10, 11), DefaultWaves).Order
	g.Expect(keys(fewer)).To(Equal(slices.DeleteFunc(keys(p.Order), func(k string) bool { return k == "ns/web-10" })))
}

// Members with one UID (none known yet) are ordered by key.
func TestNewPlanOrdersTiesByKey(t *testing.T) {
	in := []Member{{Key: "ns/c"}, {Key: "ns/a"}, {Key: "ns/b"}}
	NewWithT(t).Expect(keys(NewPlan(in, DefaultWaves).Order)).To(Equal([]string{"ns/a", "ns/b", "ns/c"}))
}

func TestNewPlanEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []Member
		steps   []Step
		// want are the plan's Ends.
		want []int
	}{
		{name: "200 releases, the default waves", members: members(200), steps: DefaultWaves, want: []int{1, 20, 100, 200}},
		{name: "three canaries make the first wave", members: members(200, 0, 1, 2), steps: DefaultWaves, want: []int{3, 20, 100, 200}},
		{name: "canaries past the second wave skip it", members: members(200, firsts(30)...), steps: DefaultWaves, want: []int{30, 100, 200}},
		{name: "5 releases: 10% rounds up to the first wave's 1 and is skipped", members: members(5), steps: DefaultWaves, want: []int{1, 3, 5}},
		{name: "one release", members: members(1), steps: DefaultWaves, want: []int{1}},
		{name: "no release", members: nil, steps: DefaultWaves, want: []int{0}},
		{name: "all at once", members: members(40), steps: []Step{{Percent: 100}}, want: []int{40}},
		{name: "counts past the total stop at it", members: members(4), steps: []Step{{Count: 2}, {Count: 10}, {Percent: 100}}, want: []int{2, 4}},
		{name: "steps short of every release get a last wave", members: members(10), steps: []Step{{Count: 2}}, want: []int{2, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := NewPlan(tc.members, tc.steps)
			g.Expect(p.Ends).To(Equal(tc.want))
			g.Expect(p.Ends[len(p.Ends)-1]).To(Equal(len(p.Order)), "the last wave moves every release")
		})
	}
}

func TestPlanWaves(t *testing.T) {
	g := NewWithT(t)
	p := NewPlan(members(200, 5), DefaultWaves)
	g.Expect(p.Ends).To(Equal([]int{1, 20, 100, 200}))

	g.Expect(p.Wave(0)).To(Equal(p.Order[:1]))
	g.Expect(p.Wave(0)[0].Key).To(Equal("ns/web-5"), "the canary")
	g.Expect(p.Wave(1)).To(Equal(p.Order[1:20]))
	g.Expect(p.Wave(3)).To(Equal(p.Order[100:200]))
	g.Expect(p.Wave(4)).To(BeNil())
	g.Expect(p.Wave(-1)).To(BeNil())

	g.Expect(p.Admitted(-1)).To(BeNil())
	g.Expect(p.Admitted(0)).To(Equal(p.Order[:1]))
	g.Expect(p.Admitted(2)).To(Equal(p.Order[:100]), "every wave up to the running one")
	g.Expect(p.Admitted(9)).To(Equal(p.Order))
}

func TestJudge(t *testing.T) {
	const version = "0.2.0"
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	const readyTimeout = 5 * time.Minute // the wave's deadline: 7m (DefaultWaveTimeoutMargin)
	moved := Member{Version: version, Ready: true}
	pending := Member{Version: "0.1.0", Ready: true}
	notReady := Member{Version: version}
	failed := Member{Version: version, Failed: true}
	for _, tc := range []struct {
		name   string
		wave   []Member
		policy Policy
		// after is the time since the wave began.
		after time.Duration
		want  Verdict
	}{
		{name: "every release moved and Ready", wave: []Member{moved, moved, moved}, policy: DefaultPolicy(), after: time.Minute,
			want: Verdict{Moved: 3, Done: true}},
		{name: "one not moved yet, one not Ready yet", wave: []Member{moved, pending, notReady}, policy: DefaultPolicy(), after: time.Minute,
			want: Verdict{Moved: 1, Pending: 2}},
		{name: "a remediated release halts a policy that tolerates none", wave: []Member{moved, failed, pending}, policy: DefaultPolicy(), after: time.Minute,
			want: Verdict{Moved: 1, Failed: 1, Pending: 1, Halt: true}},
		{name: "a tolerated failure: done once the others moved", wave: []Member{moved, failed, moved}, policy: Policy{MaxFailures: Threshold{Count: 1}}, after: time.Minute,
			want: Verdict{Moved: 2, Failed: 1, Done: true}},
		{name: "one failure more than tolerated", wave: []Member{failed, failed, moved}, policy: Policy{MaxFailures: Threshold{Count: 1}}, after: time.Minute,
			want: Verdict{Moved: 1, Failed: 2, Halt: true}},
		{name: "a percentage of the wave, rounded down", wave: []Member{failed, failed, moved, moved, moved}, policy: Policy{MaxFailures: Threshold{Percent: 50}}, after: time.Minute,
			want: Verdict{Moved: 3, Failed: 2, Done: true}},
		{name: "at the deadline a release is still pending", wave: []Member{moved, pending}, policy: DefaultPolicy(), after: 7 * time.Minute,
			want: Verdict{Moved: 1, Pending: 1}},
		{name: "past the deadline the releases not moved fail", wave: []Member{moved, pending, notReady}, policy: DefaultPolicy(), after: 7*time.Minute + time.Second,
			want: Verdict{Moved: 1, Failed: 2, Halt: true}},
		{name: "the policy's wave timeout", wave: []Member{moved, pending}, policy: Policy{WaveTimeout: time.Minute, MaxFailures: Threshold{Count: 1}}, after: 61 * time.Second,
			want: Verdict{Moved: 1, Failed: 1, Done: true}},
		{name: "an empty wave is done", policy: DefaultPolicy(), after: 0,
			want: Verdict{Done: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Judge(tc.wave, version, tc.policy, readyTimeout, start, start.Add(tc.after))).To(Equal(tc.want))
		})
	}
}

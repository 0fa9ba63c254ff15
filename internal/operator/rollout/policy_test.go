package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
)

func TestParseStep(t *testing.T) {
	for _, tc := range []struct {
		in string
		// want is the step read; wantErr a part of the error instead.
		want    Step
		wantErr string
	}{
		{in: "1", want: Step{Count: 1}},
		{in: " 25 ", want: Step{Count: 25}},
		{in: "1%", want: Step{Percent: 1}},
		{in: "100%", want: Step{Percent: 100}},
		{in: "0", wantErr: `"0" is not a positive number of releases or a percentage such as 10%`},
		{in: "-3", wantErr: "not a positive number"},
		{in: "1.5", wantErr: "not a positive number"},
		{in: "", wantErr: "not a positive number"},
		{in: "half", wantErr: "not a positive number"},
		{in: "0%", wantErr: `"0%" is not a percentage from 1% to 100%`},
		{in: "101%", wantErr: "not a percentage from 1% to 100%"},
		{in: "%", wantErr: "not a percentage"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			s, err := ParseStep(tc.in)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s).To(Equal(tc.want))
		})
	}
}

func TestStepOf(t *testing.T) {
	for _, tc := range []struct {
		step  Step
		total int
		// want is how many of total have moved once the wave is done.
		want int
	}{
		{Step{Count: 1}, 200, 1},
		{Step{Count: 5}, 3, 3},
		{Step{Count: 1}, 0, 0},
		{Step{Percent: 10}, 200, 20},
		{Step{Percent: 10}, 5, 1},  // rounds up: every wave moves one
		{Step{Percent: 50}, 5, 3},  // 2.5 rounds up
		{Step{Percent: 100}, 7, 7}, // the rest
	} {
		NewWithT(t).Expect(tc.step.Of(tc.total)).To(Equal(tc.want), "%s of %d", tc.step, tc.total)
	}
}

func TestParseThreshold(t *testing.T) {
	for _, tc := range []struct {
		in string
		// want is the threshold read; wantErr a part of the error instead.
		want    Threshold
		wantErr string
	}{
		{in: "0", want: Threshold{}},
		{in: "3", want: Threshold{Count: 3}},
		{in: "0%", want: Threshold{}},
		{in: "25%", want: Threshold{Percent: 25}},
		{in: " 100% ", want: Threshold{Percent: 100}},
		{in: "-1", wantErr: `"-1" is not a number of releases from 0 or a percentage such as 10%`},
		{in: "many", wantErr: "not a number of releases from 0"},
		{in: "-1%", wantErr: `"-1%" is not a percentage from 0% to 100%`},
		{in: "101%", wantErr: "not a percentage from 0% to 100%"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			th, err := ParseThreshold(tc.in)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(th).To(Equal(tc.want))
		})
	}
}

func TestThresholdOf(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Threshold{Count: 2}.Of(100)).To(Equal(2))
	g.Expect(Threshold{Percent: 25}.Of(10)).To(Equal(2), "rounds down")
	g.Expect(Threshold{Percent: 10}.Of(5)).To(Equal(0))
	g.Expect(Threshold{}.Of(50)).To(Equal(0))
}

// Steps and thresholds are written back as watches.yaml has them.
func TestStringsReadBack(t *testing.T) {
	g := NewWithT(t)
	for _, s := range []string{"1", "20", "10%", "100%"} {
		step, err := ParseStep(s)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(step.String()).To(Equal(s))
	}
	for _, s := range []string{"0", "3", "25%"} {
		th, err := ParseThreshold(s)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(th.String()).To(Equal(s))
	}
}

func TestFieldParse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		field Field
		// want is the policy; wantErrs parts of the error instead, each
		// of which it must name.
		want     Policy
		wantErrs []string
	}{
		{
			name:  "empty: the defaults",
			field: Field{},
			want:  Policy{Strategy: StrategyWaves, Waves: DefaultWaves},
		},
		{
			name:  "strategy waves named",
			field: Field{Strategy: "waves"},
			want:  DefaultPolicy(),
		},
		{
			name:  "all-at-once",
			field: Field{Strategy: "all-at-once"},
			want:  Policy{Strategy: StrategyAllAtOnce, Waves: DefaultWaves},
		},
		{
			name: "every field",
			field: Field{Waves: []string{"2", "5", "25%", "100%"}, MaxFailures: ptr.To("10%"),
				Pause: "5m", WaveTimeout: "30m"},
			want: Policy{Strategy: StrategyWaves, Waves: []Step{{Count: 2}, {Count: 5}, {Percent: 25}, {Percent: 100}},
				MaxFailures: Threshold{Percent: 10}, Pause: 5 * time.Minute, WaveTimeout: 30 * time.Minute},
		},
		{
			name:  "maxFailures 0 and a pause of 0s",
			field: Field{MaxFailures: ptr.To("0"), Pause: "0s"},
			want:  DefaultPolicy(),
		},
		{
			name:     "unknown strategy",
			field:    Field{Strategy: "canary"},
			wantErrs: []string{`strategy: "canary" is not one of waves, all-at-once`},
		},
		{
			name:     "waves with all-at-once",
			field:    Field{Strategy: "all-at-once", Waves: []string{"100%"}},
			wantErrs: []string{"waves: not read with strategy all-at-once; leave it out"},
		},
		{
			name:     "a wave that does not parse",
			field:    Field{Waves: []string{"1", "ten", "100%"}},
			wantErrs: []string{`waves[1]: "ten" is not a positive number`},
		},
		{
			name:     "a number that does not grow",
			field:    Field{Waves: []string{"5", "5", "100%"}},
			wantErrs: []string{"waves[1]: 5 does not grow from 5; waves are cumulative"},
		},
		{
			name:     "a percentage that does not grow",
			field:    Field{Waves: []string{"50%", "10%", "100%"}},
			wantErrs: []string{"waves[1]: 10% does not grow from 50%"},
		},
		{
			name:     "a number after a percentage",
			field:    Field{Waves: []string{"10%", "50", "100%"}},
			wantErrs: []string{"waves[1]: 50 does not grow from 10%; waves are cumulative, numbers first, then growing percentages"},
		},
		{
			name:     "a wave after 100%",
			field:    Field{Waves: []string{"100%", "100%"}},
			wantErrs: []string{"waves[1]: 100% does not grow from 100%"},
		},
		{
			name:     "the last wave short of 100%",
			field:    Field{Waves: []string{"1", "50%"}},
			wantErrs: []string{"waves: the last wave is 50%; it must be 100%, so that every release moves"},
		},
		{
			name:     "maxFailures",
			field:    Field{MaxFailures: ptr.To("some")},
			wantErrs: []string{`maxFailures: "some" is not a number of releases from 0`},
		},
		{
			name:     "pause out of bounds",
			field:    Field{Pause: "25h"},
			wantErrs: []string{`pause: "25h" is not a duration from 0s to 24h`},
		},
		{
			name:     "negative pause",
			field:    Field{Pause: "-1m"},
			wantErrs: []string{`pause: "-1m" is not a duration from 0s to 24h`},
		},
		{
			name:     "waveTimeout too short",
			field:    Field{WaveTimeout: "5s"},
			wantErrs: []string{`waveTimeout: "5s" is not a duration from 10s to 24h`},
		},
		{
			name:     "waveTimeout not a duration",
			field:    Field{WaveTimeout: "later"},
			wantErrs: []string{`waveTimeout: "later" is not a duration from 10s to 24h`},
		},
		{
			name:  "every error at once",
			field: Field{Strategy: "slow", MaxFailures: ptr.To("-1"), Pause: "x", WaveTimeout: "48h"},
			wantErrs: []string{
				`strategy: "slow"`, `maxFailures: "-1"`, `pause: "x"`, `waveTimeout: "48h"`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := tc.field.Parse()
			if len(tc.wantErrs) > 0 {
				g.Expect(err).To(HaveOccurred())
				for _, w := range tc.wantErrs {
					g.Expect(err.Error()).To(ContainSubstring(w))
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p).To(Equal(tc.want))
		})
	}
}

func TestPolicySteps(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DefaultPolicy().Steps()).To(Equal(DefaultWaves))
	p, err := Field{Strategy: StrategyAllAtOnce}.Parse()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Steps()).To(Equal([]Step{{Percent: 100}}), "all-at-once is one wave of every release")
}

func TestPolicyTimeout(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DefaultPolicy().Timeout(5*time.Minute)).To(Equal(7*time.Minute), "the kind's ready timeout and the margin")
	g.Expect(Policy{WaveTimeout: time.Minute}.Timeout(5 * time.Minute)).To(Equal(time.Minute))
}

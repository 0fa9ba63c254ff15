package benchkit

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var out []time.Duration
		for _, v := range vs {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{name: "none", sorted: nil, p: 50, want: 0},
		{name: "one value is every percentile", sorted: ms(7), p: 99, want: 7 * time.Millisecond},
		{name: "p50 of 1..100 is the 50th value (nearest rank)", sorted: ms(hundred...), p: 50, want: 50 * time.Millisecond},
		{name: "p99 of 1..100 is the 99th value", sorted: ms(hundred...), p: 99, want: 99 * time.Millisecond},
		{name: "p100 is the maximum", sorted: ms(hundred...), p: 100, want: 100 * time.Millisecond},
		{name: "p50 of four values rounds the rank up: the 2nd", sorted: ms(1, 2, 3, 4), p: 50, want: 2 * time.Millisecond},
		{name: "p99 of four values is the last", sorted: ms(1, 2, 3, 4), p: 99, want: 4 * time.Millisecond},
		{name: "a tiny percentile is the first value", sorted: ms(5, 6), p: 0.1, want: 5 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Percentile(tc.sorted, tc.p)).To(Equal(tc.want))
		})
	}
}

func TestSorted(t *testing.T) {
	in := []time.Duration{3, 1, 2}
	NewWithT(t).Expect(Sorted(in)).To(Equal([]time.Duration{1, 2, 3}))
	NewWithT(t).Expect(in).To(Equal([]time.Duration{3, 1, 2})) // a copy
}

func TestSettled(t *testing.T) {
	g := NewWithT(t)
	t.Log("a value that stops changing settles once it held for quiet and done holds")
	n := 0
	read := func() int {
		if n < 3 {
			n++
		}
		return n
	}
	waited, last := Settled(read, func(v int) bool { return v == 3 }, 300*time.Millisecond, 5*time.Second)
	g.Expect(last).To(Equal(3))
	g.Expect(waited).To(BeNumerically(">=", 300*time.Millisecond))
	g.Expect(waited).To(BeNumerically("<", 5*time.Second))

	t.Log("done that never holds runs into the timeout")
	waited, _ = Settled(func() int { return 1 }, func(int) bool { return false }, 0, 600*time.Millisecond)
	g.Expect(waited).To(BeNumerically(">=", 600*time.Millisecond))
	g.Expect(PollUntil(100*time.Millisecond, 10*time.Millisecond, func() bool { return false })).To(BeFalse())
	g.Expect(PollUntil(time.Second, 10*time.Millisecond, func() bool { return true })).To(BeTrue())
}

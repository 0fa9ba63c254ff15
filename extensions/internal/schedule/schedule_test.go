package schedule

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
)

// at parses an RFC 3339 instant; tests write instants with their offset so
// that the expected local reading is visible.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// business is the example rhythm.
var business = []Job{
	{Name: "workday-up", Schedule: "0 8 * * 1-5", Replicas: 5},
	{Name: "night-down", Schedule: "0 20 * * *", Replicas: 1},
}

func TestAt(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		now  string // the fake clock's time
		// want: active job name ("" for none), its fire time, replicas, and
		// the plan's next change.
		active     string
		activeFire string
		replicas   int32
		next       string
	}{
		{
			// Weekday morning in Shanghai: the 08:00 job is active, the 20:00
			// job is next.
			name: "business hours", spec: Spec{TimeZone: "Asia/Shanghai", Jobs: business},
			now: "2026-11-23T09:30:00+08:00", active: "workday-up", activeFire: "2026-11-23T08:00:00+08:00",
			replicas: 5, next: "2026-11-23T20:00:00+08:00",
		},
		{
			// A fire time equal to now counts as fired (most recent fire <= now).
			name: "exactly at a fire", spec: Spec{TimeZone: "Asia/Shanghai", Jobs: business},
			now: "2026-11-23T20:00:00+08:00", active: "night-down", activeFire: "2026-11-23T20:00:00+08:00",
			replicas: 1, next: "2026-11-24T08:00:00+08:00",
		},
		{
			// One nanosecond before a fire the previous job is still active.
			name: "just before a fire", spec: Spec{TimeZone: "Asia/Shanghai", Jobs: business},
			now: "2026-11-23T19:59:59.999999999+08:00", active: "workday-up", activeFire: "2026-11-23T08:00:00+08:00",
			replicas: 5, next: "2026-11-23T20:00:00+08:00",
		},
		{
			// Saturday: the weekday job last fired on Friday morning, the
			// nightly job on Friday evening, which is later.
			name: "weekend", spec: Spec{TimeZone: "Asia/Shanghai", Jobs: business},
			now: "2026-11-28T12:00:00+08:00", active: "night-down", activeFire: "2026-11-27T20:00:00+08:00",
			replicas: 1, next: "2026-11-28T20:00:00+08:00",
		},
		{
			// Empty time zone means UTC.
			name: "default zone is UTC", spec: Spec{Jobs: business},
			now: "2026-11-23T08:00:00Z", active: "workday-up", activeFire: "2026-11-23T08:00:00Z",
			replicas: 5, next: "2026-11-23T20:00:00Z",
		},
		{
			// A yearly job found by the look-back months later.
			name: "yearly look-back", spec: Spec{Jobs: []Job{{Name: "new-year", Schedule: "@yearly", Replicas: 7}}},
			now: "2026-06-01T00:00:00Z", active: "new-year", activeFire: "2026-01-01T00:00:00Z",
			replicas: 7, next: "2027-01-01T00:00:00Z",
		},
		{
			// A leap-day job last fired more than two years ago: still within
			// the five-year look-back.
			name: "leap day", spec: Spec{Jobs: []Job{{Name: "leap", Schedule: "0 12 29 2 *", Replicas: 2}}},
			now: "2026-06-01T00:00:00Z", active: "leap", activeFire: "2024-02-29T12:00:00Z",
			replicas: 2, next: "2028-02-29T12:00:00Z",
		},
		{
			// A schedule that can never fire (30 February): no active job, no
			// next time.
			name: "never fires", spec: Spec{Jobs: []Job{{Name: "never", Schedule: "0 0 30 2 *", Replicas: 2}}},
			now: "2026-06-01T00:00:00Z",
		},
		{
			// Two jobs with the same schedule: the later-listed one wins.
			name: "tie goes to the later job",
			spec: Spec{Jobs: []Job{{Name: "a", Schedule: "0 * * * *", Replicas: 1}, {Name: "b", Schedule: "@hourly", Replicas: 2}}},
			now:  "2026-06-01T10:15:00Z", active: "b", activeFire: "2026-06-01T10:00:00Z", replicas: 2, next: "2026-06-01T11:00:00Z",
		},
		{
			// Every minute: the current minute's fire.
			name: "every minute", spec: Spec{Jobs: []Job{{Name: "m", Schedule: "* * * * *", Replicas: 3}}},
			now: "2026-06-01T10:15:42Z", active: "m", activeFire: "2026-06-01T10:15:00Z", replicas: 3, next: "2026-06-01T10:16:00Z",
		},
		{
			// Zero replicas is a valid count (weekend shutdown).
			name: "scale to zero", spec: Spec{Jobs: []Job{{Name: "off", Schedule: "0 0 * * 6", Replicas: 0}, {Name: "on", Schedule: "0 0 * * 1", Replicas: 4}}},
			now: "2026-11-29T10:00:00Z", active: "off", activeFire: "2026-11-28T00:00:00Z", replicas: 0, next: "2026-11-30T00:00:00Z",
		},

		// Excluded dates (in the CronScaler's zone).
		{
			// Christmas (a Friday) is excluded: the 08:00 job does not fire,
			// the previous evening's job stays active.
			name: "excluded date keeps the previous job",
			spec: Spec{TimeZone: "Europe/Berlin", Jobs: business, ExcludeDates: []string{"2026-12-25"}},
			now:  "2026-12-25T10:00:00+01:00", active: "night-down", activeFire: "2026-12-24T20:00:00+01:00",
			replicas: 1, next: "2026-12-26T20:00:00+01:00",
		},
		{
			// Consecutive excluded dates are skipped together, for next too.
			name: "excluded run of dates",
			spec: Spec{TimeZone: "Europe/Berlin", Jobs: business, ExcludeDates: []string{"2026-12-25", "2026-12-26", "2026-12-24"}},
			now:  "2026-12-26T22:00:00+01:00", active: "night-down", activeFire: "2026-12-23T20:00:00+01:00",
			replicas: 1, next: "2026-12-27T20:00:00+01:00",
		},
		{
			// The date is read in the CronScaler's zone, not UTC: 00:30 in
			// Tokyo on the 25th is still the 24th in UTC.
			name: "excluded date in zone",
			spec: Spec{TimeZone: "Asia/Tokyo", Jobs: []Job{{Name: "a", Schedule: "30 0 * * *", Replicas: 2}}, ExcludeDates: []string{"2026-12-25"}},
			now:  "2026-12-25T01:00:00+09:00", active: "a", activeFire: "2026-12-24T00:30:00+09:00",
			replicas: 2, next: "2026-12-26T00:30:00+09:00",
		},

		// Daylight saving: America/New_York springs forward on 2026-03-08
		// (02:00 EST → 03:00 EDT) and falls back on 2026-11-01 (02:00 EDT →
		// 01:00 EST).
		{
			// A job at 02:30, which does not exist that day, fires at the
			// jump (03:00 EDT = 07:00Z) instead of being dropped.
			name: "New York skipped hour fires at the jump",
			spec: Spec{TimeZone: "America/New_York", Jobs: []Job{{Name: "night", Schedule: "0 1 * * *", Replicas: 1}, {Name: "early", Schedule: "30 2 * * *", Replicas: 3}}},
			now:  "2026-03-08T03:10:00-04:00", active: "early", activeFire: "2026-03-08T03:00:00-04:00",
			replicas: 3, next: "2026-03-09T01:00:00-04:00",
		},
		{
			// Before the jump the 01:00 job is active and the skipped job is
			// announced for the jump.
			name: "New York before the jump",
			spec: Spec{TimeZone: "America/New_York", Jobs: []Job{{Name: "night", Schedule: "0 1 * * *", Replicas: 1}, {Name: "early", Schedule: "30 2 * * *", Replicas: 3}}},
			now:  "2026-03-08T01:59:00-05:00", active: "night", activeFire: "2026-03-08T01:00:00-05:00",
			replicas: 1, next: "2026-03-08T03:00:00-04:00",
		},
		{
			// Two jobs in the gap fire at the same instant; the later wall
			// time (02:45) wins regardless of list order.
			name: "New York two jobs in the gap",
			spec: Spec{TimeZone: "America/New_York", Jobs: []Job{{Name: "b", Schedule: "45 2 * * *", Replicas: 4}, {Name: "a", Schedule: "15 2 * * *", Replicas: 2}}},
			now:  "2026-03-08T03:00:00-04:00", active: "b", activeFire: "2026-03-08T03:00:00-04:00",
			replicas: 4, next: "2026-03-09T02:15:00-04:00",
		},
		{
			// A job after the gap (03:30) is unaffected.
			name: "New York after the gap",
			spec: Spec{TimeZone: "America/New_York", Jobs: []Job{{Name: "a", Schedule: "30 3 * * *", Replicas: 2}}},
			now:  "2026-03-08T03:30:00-04:00", active: "a", activeFire: "2026-03-08T03:30:00-04:00",
			replicas: 2, next: "2026-03-09T03:30:00-04:00",
		},
		{
			// Repeated hour, first pass: 01:30 EDT fires.
			name: "New York repeated hour first pass",
			spec: Spec{TimeZone: "America/New_York", Jobs: []Job{{Name: "mid", Schedule: "0 0 * * *", Replicas: 1}, {Name: "r", Schedule: "30 1 * * *", Replicas: 6}}},
			now:  "2026-11-01T01:40:00-04:00", active: "r", activeFire: "2026-11-01T01:30:00-04:00",
			replicas: 6, next: "2026-11-02T00:00:00-05:00",
		},
		{
			// Repeated hour, second pass (01:40 EST): the 01:30 job does not
			// fire again; its last fire is still the EDT one.
			name: "New York repeated hour second pass",
			spec: Spec{TimeZone: "America/New_York", Jobs: []Job{{Name: "mid", Schedule: "0 0 * * *", Replicas: 1}, {Name: "r", Schedule: "30 1 * * *", Replicas: 6}}},
			now:  "2026-11-01T01:40:00-05:00", active: "r", activeFire: "2026-11-01T01:30:00-04:00",
			replicas: 6, next: "2026-11-02T00:00:00-05:00",
		},

		// Europe/Berlin springs forward on 2026-03-29 (02:00 CET → 03:00
		// CEST) and falls back on 2026-10-25 (03:00 CEST → 02:00 CET).
		{
			// 02:30 does not exist: fires at 03:00 CEST (01:00Z).
			name: "Berlin skipped hour",
			spec: Spec{TimeZone: "Europe/Berlin", Jobs: []Job{{Name: "day", Schedule: "0 8 * * *", Replicas: 4}, {Name: "gap", Schedule: "30 2 * * *", Replicas: 2}}},
			now:  "2026-03-29T03:00:00+02:00", active: "gap", activeFire: "2026-03-29T03:00:00+02:00",
			replicas: 2, next: "2026-03-29T08:00:00+02:00",
		},
		{
			// Repeated hour, first pass at 02:50 CEST: the 02:45 job is the
			// latest.
			name: "Berlin repeated hour first pass",
			spec: Spec{TimeZone: "Europe/Berlin", Jobs: []Job{{Name: "a", Schedule: "30 2 * * *", Replicas: 5}, {Name: "b", Schedule: "45 2 * * *", Replicas: 2}}},
			now:  "2026-10-25T02:50:00+02:00", active: "b", activeFire: "2026-10-25T02:45:00+02:00",
			replicas: 2, next: "2026-10-26T02:30:00+01:00",
		},
		{
			// Second pass at 02:35 CET: 02:30 has come round again on the
			// wall clock, but fires only once, so the 02:45 job stays active
			// instead of flipping back.
			name: "Berlin repeated hour second pass",
			spec: Spec{TimeZone: "Europe/Berlin", Jobs: []Job{{Name: "a", Schedule: "30 2 * * *", Replicas: 5}, {Name: "b", Schedule: "45 2 * * *", Replicas: 2}}},
			now:  "2026-10-25T02:35:00+01:00", active: "b", activeFire: "2026-10-25T02:45:00+02:00",
			replicas: 2, next: "2026-10-26T02:30:00+01:00",
		},
		{
			// An every-minute job during the second pass does not fire in
			// the repeated minutes either; it resumes at 03:00 CET.
			name: "Berlin every minute in the second pass",
			spec: Spec{TimeZone: "Europe/Berlin", Jobs: []Job{{Name: "m", Schedule: "* * * * *", Replicas: 1}}},
			now:  "2026-10-25T02:10:00+01:00", active: "m", activeFire: "2026-10-25T02:59:00+02:00",
			replicas: 1, next: "2026-10-25T03:00:00+01:00",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := clocktesting.NewFakePassiveClock(at(tc.now))
			s, err := Compile(tc.spec)
			g.Expect(err).NotTo(HaveOccurred())
			p := s.At(clock.Now())
			if tc.active == "" {
				g.Expect(p.Active).To(Equal(-1))
				g.Expect(p.ActiveFire.IsZero()).To(BeTrue())
			} else {
				g.Expect(p.Active).To(BeNumerically(">=", 0))
				g.Expect(tc.spec.Jobs[p.Active].Name).To(Equal(tc.active))
				g.Expect(p.ActiveFire).To(BeTemporally("==", at(tc.activeFire)), "active fire %s", p.ActiveFire.In(s.Location()))
				g.Expect(p.Jobs[p.Active].Last).To(BeTemporally("==", p.ActiveFire))
			}
			g.Expect(p.Replicas).To(Equal(tc.replicas))
			if tc.next == "" {
				g.Expect(p.Next.IsZero()).To(BeTrue(), "next %s", p.Next)
			} else {
				g.Expect(p.Next).To(BeTemporally("==", at(tc.next)), "next %s", p.Next.In(s.Location()))
			}
			// Invariants: every last fire is at or before now, every next
			// one after now.
			for _, j := range p.Jobs {
				if !j.Last.IsZero() {
					g.Expect(j.Last).To(BeTemporally("<=", clock.Now()), j.Name)
				}
				if !j.Next.IsZero() {
					g.Expect(j.Next).To(BeTemporally(">", clock.Now()), j.Name)
				}
			}
		})
	}
}

// TestWalkThroughDST steps a fake clock minute by minute through a whole
// DST day and checks that the active job only ever changes at a time the
// previous evaluation announced as Next, and that every job fires exactly
// once that day: a skipped-hour job at the jump, a repeated-hour job once.
func TestWalkThroughDST(t *testing.T) {
	jobs := []Job{
		{Name: "j0130", Schedule: "30 1 * * *", Replicas: 1},
		{Name: "j0230", Schedule: "30 2 * * *", Replicas: 2},
		{Name: "j0300", Schedule: "0 3 * * *", Replicas: 3},
		{Name: "j1200", Schedule: "0 12 * * *", Replicas: 4},
	}
	cases := []struct {
		name, zone, day string
	}{
		// Spring forward: 02:30 is skipped in both zones.
		{"New York spring", "America/New_York", "2026-03-08T00:00:00-05:00"},
		{"Berlin spring", "Europe/Berlin", "2026-03-29T00:00:00+01:00"},
		// Fall back: 01:30 repeats in New York, 02:30 in Berlin.
		{"New York fall", "America/New_York", "2026-11-01T00:00:00-04:00"},
		{"Berlin fall", "Europe/Berlin", "2026-10-25T00:00:00+02:00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := Compile(Spec{TimeZone: tc.zone, Jobs: jobs})
			g.Expect(err).NotTo(HaveOccurred())
			clock := clocktesting.NewFakePassiveClock(at(tc.day))
			prev := s.At(clock.Now())
			fires := map[string]int{}
			for range 24 * 60 {
				clock.SetTime(clock.Now().Add(time.Minute))
				p := s.At(clock.Now())
				if !p.ActiveFire.Equal(prev.ActiveFire) || p.Active != prev.Active {
					// The change happens exactly at the announced time, at the
					// first evaluation at or after it.
					g.Expect(p.ActiveFire).To(BeTemporally("==", prev.Next), "at %s", clock.Now())
				}
				for i, j := range p.Jobs {
					if !j.Last.Equal(prev.Jobs[i].Last) {
						g.Expect(j.Last).To(BeTemporally("==", prev.Jobs[i].Next), "%s at %s", j.Name, clock.Now())
						fires[j.Name]++
					}
				}
				prev = p
			}
			// Every job fired exactly once during the day, DST or not.
			g.Expect(fires).To(Equal(map[string]int{"j0130": 1, "j0230": 1, "j0300": 1, "j1200": 1}))
		})
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want string // substring of the error
	}{
		// Five fields, but 61 is not a minute.
		{"minute out of range", Spec{Jobs: []Job{{Name: "a", Schedule: "61 * * * *"}}}, `job "a": schedule "61 * * * *"`},
		// Six fields (seconds) are not accepted.
		{"six fields", Spec{Jobs: []Job{{Name: "a", Schedule: "0 0 8 * * *"}}}, `expected exactly 5 fields`},
		// Interval schedules have no calendar meaning.
		{"every", Spec{Jobs: []Job{{Name: "a", Schedule: "@every 1h"}}}, `not @every`},
		// The zone goes in timeZone, not in the schedule.
		{"tz prefix", Spec{Jobs: []Job{{Name: "a", Schedule: "CRON_TZ=Europe/Berlin 0 8 * * *"}}}, `time zone prefix`},
		// Unknown IANA zone.
		{"unknown zone", Spec{TimeZone: "Mars/Olympus_Mons", Jobs: business}, `timeZone "Mars/Olympus_Mons" is not a known IANA time zone`},
		// The process-local zone is not a zone.
		{"Local", Spec{TimeZone: "Local", Jobs: business}, `"Local" is not allowed`},
		// No jobs.
		{"no jobs", Spec{}, `at least one job`},
		// A date that does not exist.
		{"bad date", Spec{Jobs: business, ExcludeDates: []string{"2026-02-30"}}, `excludeDates: "2026-02-30"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Compile(tc.spec)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

// BenchmarkAt measures one evaluation of a two-job schedule, the work of one
// reconcile.
func BenchmarkAt(b *testing.B) {
	s, err := Compile(Spec{TimeZone: "Europe/Berlin", Jobs: business, ExcludeDates: []string{"2026-12-25"}})
	if err != nil {
		b.Fatal(err)
	}
	now := at("2026-11-23T09:30:00+01:00")
	for b.Loop() {
		s.At(now)
	}
}

// TestAgainstMinuteScan cross-checks the bisecting look-back and the next
// fire against a plain minute-by-minute scan, for assorted schedules in
// zones without daylight saving (where wall minutes and real minutes
// coincide), at many instants.
func TestAgainstMinuteScan(t *testing.T) {
	schedules := []string{
		"*/7 3-9 * * 1,3,5", "0 0 * * *", "15,45 * * * *", "30 23 * * 0",
		"*/13 * * * *", "0 8-17/3 * * 1-5", "@hourly", "@weekly",
	}
	// Schedules that fire at least weekly, so an 8-day scan suffices.
	const scan = 8 * 24 * time.Hour
	zones := []string{"UTC", "Asia/Kolkata"}
	clock := clocktesting.NewFakePassiveClock(at("2026-05-04T10:17:31Z"))
	for _, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, sch := range schedules {
			s, err := Compile(Spec{TimeZone: zone, Jobs: []Job{{Name: "j", Schedule: sch, Replicas: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := parser.Parse(sch)
			if err != nil {
				t.Fatal(err)
			}
			// matches tells whether the schedule fires at minute m (local).
			matches := func(m time.Time) bool {
				return parsed.Next(m.Add(-time.Second)).Equal(m)
			}
			for step := range 12 {
				now := clock.Now().Add(time.Duration(step) * 397 * time.Minute).In(loc)
				p := s.At(now)
				// Scan back for the last fire.
				var want time.Time
				for m := now.Truncate(time.Minute); m.After(now.Add(-scan)); m = m.Add(-time.Minute) {
					if matches(m) {
						want = m
						break
					}
				}
				if !p.Jobs[0].Last.Equal(want) {
					t.Fatalf("%s %q at %s: last %s, scan %s", zone, sch, now, p.Jobs[0].Last.In(loc), want)
				}
				var next time.Time
				for m := now.Truncate(time.Minute).Add(time.Minute); m.Before(now.Add(scan)); m = m.Add(time.Minute) {
					if matches(m) {
						next = m
						break
					}
				}
				if !p.Jobs[0].Next.Equal(next) {
					t.Fatalf("%s %q at %s: next %s, scan %s", zone, sch, now, p.Jobs[0].Next.In(loc), next)
				}
			}
		}
	}
}

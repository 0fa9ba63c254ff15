// Package schedule is the pure time arithmetic of CronScaler: given the jobs,
// time zone and excluded dates of a CronScaler and an instant, which job is
// active (the one whose most recent fire time is the latest), and when each
// job fires next. It knows nothing about Kubernetes.
//
// # Daylight-saving rule
//
// Schedules are read on the wall clock of the time zone. Where the wall clock
// is not a one-to-one map of real time:
//
//   - Skipped hour (clocks jump forward, e.g. 02:00→03:00 in New York in
//     March): a fire time that does not exist that day fires at the instant
//     of the jump (03:00 local). It is not dropped. Two jobs whose times fall
//     into the same gap fire at the same instant; the later wall time wins.
//   - Repeated hour (clocks fall back, e.g. 03:00→02:00 in Berlin in
//     October): a fire time that occurs twice fires once, at its first
//     occurrence. During the second pass through the hour the jobs of that
//     hour do not fire again, so the active job does not flip back and forth.
//
// Ties (two jobs firing at the same wall time) go to the job listed later.
//
// # Look-back
//
// The active job is found by searching backwards from now for each job's
// most recent fire time, at most LookBack (5 years; covers yearly schedules
// and ones like "0 0 29 2 *"). The search bisects with the cron library's
// forward Next, so it costs O(log(LookBack/1min)) ≈ 22 Next calls per job,
// independent of how dense or sparse the schedule is.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// LookBack bounds the backward search for a job's most recent fire time. A
// job that last fired longer ago than this counts as never having fired.
const LookBack = 5 * 366 * 24 * time.Hour

// dateLayout is the format of excluded dates.
const dateLayout = "2006-01-02"

// Job is one schedule and the replica count it sets.
type Job struct {
	Name     string
	Schedule string
	Replicas int32
}

// Spec is the part of a CronScaler the arithmetic needs.
type Spec struct {
	// TimeZone is an IANA zone name; empty means UTC.
	TimeZone string
	Jobs     []Job
	// ExcludeDates are YYYY-MM-DD dates in TimeZone on which no job fires.
	ExcludeDates []string
}

// JobTimes are one job's most recent and next fire times. Last is zero when
// the job did not fire within LookBack; Next is zero when it never fires
// again within the cron library's five-year horizon.
type JobTimes struct {
	Name string
	Last time.Time
	Next time.Time
}

// Plan is the state of a schedule at an instant.
type Plan struct {
	// Active is the index in Spec.Jobs of the job whose most recent fire time
	// is the latest, or -1 when no job fired within LookBack.
	Active int
	// ActiveFire is the active job's most recent fire time.
	ActiveFire time.Time
	// Replicas is the active job's replica count (0 when Active is -1).
	Replicas int32
	// Jobs holds the fire times of every job, in Spec.Jobs order.
	Jobs []JobTimes
	// Next is the earliest Next over all jobs: when the plan may change.
	// Zero when no job fires again.
	Next time.Time
}

// Schedule is a parsed Spec, ready to evaluate at any instant.
type Schedule struct {
	loc      *time.Location
	jobs     []Job
	specs    []*cron.SpecSchedule
	excluded map[string]bool
}

// parser reads standard 5-field cron and the @descriptors.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Compile parses a Spec. Its errors name the offending field and value, and
// are meant for users (they end up in a condition message).
func Compile(spec Spec) (*Schedule, error) {
	zone := spec.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	if zone == "Local" {
		return nil, errors.New(`timeZone "Local" is not allowed: name an IANA zone such as Europe/Berlin`)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("timeZone %q is not a known IANA time zone", zone)
	}
	s := &Schedule{loc: loc, jobs: spec.Jobs, excluded: map[string]bool{}}
	if len(spec.Jobs) == 0 {
		return nil, errors.New("jobs: at least one job is required")
	}
	for _, j := range spec.Jobs {
		if strings.Contains(j.Schedule, "TZ=") {
			return nil, fmt.Errorf("job %q: schedule %q: a time zone prefix is not allowed, use spec.timeZone", j.Name, j.Schedule)
		}
		parsed, err := parser.Parse(j.Schedule)
		if err != nil {
			return nil, fmt.Errorf("job %q: schedule %q: %w", j.Name, j.Schedule, err)
		}
		ss, ok := parsed.(*cron.SpecSchedule)
		if !ok {
			return nil, fmt.Errorf("job %q: schedule %q: only calendar schedules are allowed, not @every", j.Name, j.Schedule)
		}
		// The arithmetic runs on the wall clock, encoded as UTC.
		ss.Location = time.UTC
		s.specs = append(s.specs, ss)
	}
	for _, d := range spec.ExcludeDates {
		if _, err := time.Parse(dateLayout, d); err != nil {
			return nil, fmt.Errorf("excludeDates: %q is not a date in YYYY-MM-DD form", d)
		}
		s.excluded[d] = true
	}
	return s, nil
}

// Location is the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }

// At evaluates the schedule at instant now.
func (s *Schedule) At(now time.Time) Plan {
	upper := s.wallUpper(now)
	p := Plan{Active: -1, Jobs: make([]JobTimes, len(s.jobs))}
	var activeWall time.Time
	for i, spec := range s.specs {
		jt := JobTimes{Name: s.jobs[i].Name}
		if last := s.prevWall(spec, upper); !last.IsZero() {
			jt.Last = s.instant(last)
			// ">=": a later-listed job wins a tie.
			if p.Active < 0 || !last.Before(activeWall) {
				p.Active, activeWall, p.ActiveFire = i, last, jt.Last
			}
		}
		if next := s.nextWall(spec, upper); !next.IsZero() {
			jt.Next = s.instant(next)
			if p.Next.IsZero() || jt.Next.Before(p.Next) {
				p.Next = jt.Next
			}
		}
		p.Jobs[i] = jt
	}
	if p.Active >= 0 {
		p.Replicas = s.jobs[p.Active].Replicas
	}
	return p
}

// wall is the wall-clock reading of t in the schedule's zone, encoded as a
// UTC time (a clock without daylight saving, on which cron arithmetic is
// exact).
func (s *Schedule) wall(t time.Time) time.Time {
	l := t.In(s.loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// instant maps a wall-clock time back to real time by the package's DST
// rule: a repeated wall time maps to its first occurrence, a skipped one to
// the instant the clocks jumped.
func (s *Schedule) instant(w time.Time) time.Time {
	// The offsets in force a day before and after; zone transitions are
	// months apart.
	_, before := w.Add(-24 * time.Hour).In(s.loc).Zone()
	_, after := w.Add(24 * time.Hour).In(s.loc).Zone()
	c1 := w.Add(-time.Duration(before) * time.Second)
	c2 := w.Add(-time.Duration(after) * time.Second)
	ok1, ok2 := s.wall(c1).Equal(w), s.wall(c2).Equal(w)
	switch {
	case ok1 && ok2:
		if c2.Before(c1) {
			return c2
		}
		return c1
	case ok1:
		return c1
	case ok2:
		return c2
	}
	// A gap: the clocks jumped forward over w. The jump is where the zone
	// period of the earlier candidate ends.
	earlier := c1
	if c2.Before(c1) {
		earlier = c2
	}
	_, end := earlier.In(s.loc).ZoneBounds()
	if end.IsZero() {
		return earlier
	}
	return end
}

// wallUpper is the latest wall-clock time whose instant is at or before now.
// It is now's wall reading, except during the second pass through a
// repeated hour, where every wall time of the hour already had its (first)
// instant: then it is the end of the repeated hour, exclusive.
func (s *Schedule) wallUpper(now time.Time) time.Time {
	w := s.wall(now)
	if first := s.instant(w); first.Equal(now) || first.After(now) {
		return w
	}
	// Second occurrence: the zone period began with a fall-back transition
	// at start; the repeated wall times end where the previous offset's
	// clock stood at start.
	start, _ := now.In(s.loc).ZoneBounds()
	_, prevOffset := start.Add(-time.Nanosecond).In(s.loc).Zone()
	end := start.Add(time.Duration(prevOffset) * time.Second).UTC()
	end = time.Date(end.Year(), end.Month(), end.Day(), end.Hour(), end.Minute(), end.Second(), end.Nanosecond(), time.UTC)
	return end.Add(-time.Nanosecond)
}

// excludedDay tells whether wall time w falls on an excluded date.
func (s *Schedule) excludedDay(w time.Time) bool {
	return len(s.excluded) > 0 && s.excluded[w.Format(dateLayout)]
}

// prevWall is the latest fire time of spec at or before wall time upper
// that is not on an excluded date, within LookBack; zero if none.
func (s *Schedule) prevWall(spec *cron.SpecSchedule, upper time.Time) time.Time {
	limit := upper.Add(-LookBack)
	// Each excluded date costs at most one more search.
	for range len(s.excluded) + 1 {
		f := latestAtOrBefore(spec, limit, upper)
		if f.IsZero() || !s.excludedDay(f) {
			return f
		}
		// Search again before the start of the excluded day.
		day := time.Date(f.Year(), f.Month(), f.Day(), 0, 0, 0, 0, time.UTC)
		upper = day.Add(-time.Nanosecond)
	}
	return time.Time{}
}

// nextWall is the first fire time of spec after wall time after that is not
// on an excluded date; zero if none.
func (s *Schedule) nextWall(spec *cron.SpecSchedule, after time.Time) time.Time {
	for range len(s.excluded) + 1 {
		f := spec.Next(after)
		if f.IsZero() || !s.excludedDay(f) {
			return f
		}
		// Skip to the end of the excluded day.
		after = time.Date(f.Year(), f.Month(), f.Day()+1, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond)
	}
	return time.Time{}
}

// latestAtOrBefore finds the latest fire time of spec in (lo, hi], or zero.
// spec.Next(x) is the first fire strictly after x; bisection keeps the
// invariant that (lo, hi] contains a fire, and stops when the interval is a
// minute long, which holds at most two fires of a minute-granular schedule.
func latestAtOrBefore(spec *cron.SpecSchedule, lo, hi time.Time) time.Time {
	first := spec.Next(lo)
	if first.IsZero() || first.After(hi) {
		return time.Time{}
	}
	top := hi
	for top.Sub(lo) > time.Minute {
		mid := lo.Add(top.Sub(lo) / 2)
		if n := spec.Next(mid); !n.IsZero() && !n.After(hi) {
			lo = mid
		} else {
			top = mid
		}
	}
	f := spec.Next(lo)
	for {
		n := spec.Next(f)
		if n.IsZero() || n.After(hi) {
			return f
		}
		f = n
	}
}

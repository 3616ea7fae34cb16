package reconcile

import (
	"math"
	"time"
)

// Drain is the arithmetic of how fast the reconciler drains a backlog of accepted operations,
// from its settings: the figures docs/capacity.md quotes ("Draining a backlog"). It is what the
// settings allow, an upper bound; what AWS really gives is for a benchmark to measure.
type Drain struct {
	// Rate is the Starts limiter's rate: StartExecution calls per second; 0 is unpaced.
	Rate float64
	// Budget is Reconciler.Budget; 0 is one page a run.
	Budget time.Duration
	// Page is Reconciler.MaxPerRun: all that a run without a budget dispatches.
	Page int
	// Period is the schedule's: a run every Period.
	Period time.Duration
	// Concurrency and RoundTrip bound the rate from the other side: Concurrency dispatches in
	// flight, each taking RoundTrip end to end (a read, StartExecution, an append). A zero
	// RoundTrip leaves the rate alone.
	Concurrency int
	RoundTrip   time.Duration
}

// PerSecond is the dispatch rate within a run: Rate, or less when Concurrency dispatches of
// RoundTrip each cannot keep up with it; +Inf when neither bounds it.
func (d Drain) PerSecond() float64 {
	perSecond := math.Inf(1)
	if d.Rate > 0 {
		perSecond = d.Rate
	}
	if d.RoundTrip > 0 {
		perSecond = min(perSecond, float64(max(1, d.Concurrency))/d.RoundTrip.Seconds())
	}
	return perSecond
}

// PerRun is how many operations one run dispatches at most: every token it gets before its
// budget ends (with a burst of one, the calls at 0, 1/rate, 2/rate, … before the budget: rate
// × budget, rounded up), or its one page without a budget.
func (d Drain) PerRun() int {
	if d.Budget <= 0 || math.IsInf(d.PerSecond(), 1) {
		return d.Page
	}
	// A hair off first: 150/s × 45 s must be 6,750, not 6,751 for a rounding error.
	return int(math.Ceil(d.PerSecond()*d.Budget.Seconds() - 1e-9))
}

// PerMinute is the drain rate averaged over the schedule: PerRun every Period.
func (d Drain) PerMinute() float64 {
	return float64(d.PerRun()) * float64(time.Minute) / float64(d.Period)
}

// Time is how long n accepted operations, all due, take to drain from the start of the first
// run that finds them: full runs a Period apart, then what is left at PerSecond in the last.
func (d Drain) Time(n int) time.Duration {
	per := d.PerRun()
	if n <= 0 || per <= 0 {
		return 0
	}
	full := (n - 1) / per // runs before the last
	rest := n - full*per
	last := time.Duration(0)
	if ps := d.PerSecond(); !math.IsInf(ps, 1) {
		last = time.Duration(math.Ceil(float64(rest) / ps * float64(time.Second)))
	}
	return time.Duration(full)*d.Period + last
}

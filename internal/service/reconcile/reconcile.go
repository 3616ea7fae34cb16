// Package reconcile repairs stuck work. On a schedule it reads the operations whose due
// time has passed from the sparse due index (never a scan) and finds out what really
// happened: an accepted operation is dispatched again (same execution name, so at most one
// execution ever); an execution that ended without an outcome fact gets the outcome it
// reported, or outcome_unknown when an effect may have happened; a cancelling or overdue
// execution is stopped. Work per run is bounded and each operation backs off.
//
// A run reads the due operations a page at a time until its time budget is spent or nothing
// more is due, and paces the Step Functions calls it makes with token buckets of its own, so
// that a backlog of accepted operations (left by a throttled dispatcher) drains at a share of
// StartExecution's refill rather than a page a minute. A throttled call is no one's fault: the
// run makes no more calls of that kind and leaves the operation due for the next run.
package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/logctx"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// Status is an execution's status as the executor reports it.
type Status string

const (
	Running   Status = "RUNNING"
	Succeeded Status = "SUCCEEDED"
	Failed    Status = "FAILED"
	TimedOut  Status = "TIMED_OUT"
	Aborted   Status = "ABORTED"
	Missing   Status = "MISSING" // no execution of that name
)

// Execution is what the executor knows about an operation's execution.
type Execution struct {
	Ref    string
	Status Status
	Output []byte // the final workflow state, when it succeeded
}

// Executions looks executions up by name or reference, stops them, and starts the one that
// carries on an operation's work (Continue: on workflow's resume state machine when resume,
// named name). Continue reports whether it started it; one of that name already there is
// described instead, and is no error.
type Executions interface {
	Describe(ctx context.Context, workflow, name string) (Execution, error)
	DescribeRef(ctx context.Context, ref string) (Execution, error)
	Stop(ctx context.Context, ref, cause string) error
	Continue(ctx context.Context, next recorder.NextExecution, input []byte) (ex Execution, started bool, err error)
}

// Store is the fact log plus the due index.
type Store interface {
	facts.Store
	Due(ctx context.Context, now time.Time, limit int) ([]DueItem, error)
	// CountUnknownOutcomes counts the operations waiting for an operator.
	CountUnknownOutcomes(ctx context.Context) (int, error)
	Reschedule(ctx context.Context, id string, version int, at time.Time, attempts int) error
}

// DueItem is an operation the reconciler should look at now.
type DueItem struct {
	ID       string
	Version  int // the projection's version when it was found due
	Attempts int // reconciler looks since the last fact
}

// Dispatcher dispatches an accepted operation (idempotently).
type Dispatcher interface {
	Dispatch(ctx context.Context, id string) error
}

// Metrics is where the reconciler counts its repairs (the functions give it internal/aws/emf;
// docs/observability.md lists the metrics). dims are name, value pairs.
type Metrics interface {
	Add(name, unit string, value float64, dims ...string)
}

// Reconciler is one scheduled run's worth of repair. The zero values of the pacing fields
// (Budget, Concurrency, Starts, Looks) give a run of one page, one operation at a time, unpaced.
type Reconciler struct {
	Store      Store
	Executions Executions
	Dispatcher Dispatcher
	Registry   *optype.Registry
	// Seals checks what an execution's output says before the reconciler acts on it, and
	// seals the input of an execution it starts to carry work on (recorder.Trusted): an
	// execution started with made-up state is carried on from the facts alone.
	Seals  *seal.Sealer
	Leases operation.Leases
	Now    func() time.Time
	Log    *slog.Logger
	// MaxPerRun is how many due operations one read of the due index returns (a page).
	// Without a Budget a run reads one page, so it is all the run looks at.
	MaxPerRun int
	// Budget is how long a run goes on reading pages while operations are due. It must be
	// less than the schedule's period (so runs do not queue behind each other: the function
	// reserves one instance) and the function's timeout. 0 reads one page.
	Budget time.Duration
	// Concurrency is how many of a page's operations are reconciled at once: one dispatch is
	// three calls end to end (read, StartExecution, append), so one at a time cannot reach
	// the Starts rate. 0 or 1: one at a time.
	Concurrency int
	// Starts paces the executions a run starts (dispatches, and the continuations it starts),
	// one token each: StartExecution's bucket is the account's, shared with the dispatcher and
	// the recorder's hand-backs, so the reconciler takes a share of its refill. nil: unpaced.
	Starts *rate.Limiter
	// Looks paces the looks at executions (DescribeExecution), one token each: a different
	// bucket from StartExecution's and a far smaller one (refill 15/s in the largest regions),
	// shared with the recorder's checks. nil: unpaced.
	Looks *rate.Limiter
	// SleepUntil waits until Now reads t, or ctx ends; nil waits on a timer. Tests give one
	// that moves their clock, so pacing costs them no time.
	SleepUntil func(ctx context.Context, t time.Time) error
	// Metrics hears of every repair by action; nil counts nothing.
	Metrics Metrics
}

func (r *Reconciler) count(name string, value float64, dims ...string) {
	r.metric(name, "Count", value, dims...)
}

func (r *Reconciler) metric(name, unit string, value float64, dims ...string) {
	if r.Metrics != nil {
		r.Metrics.Add(name, unit, value, dims...)
	}
}

// settled reports an outcome the reconciler recorded at at, as the recorder reports its
// own (recorder.Recorder's settled), so accept → outcome latency covers every outcome. The
// steps run are known only when none had started: after a start, a step may have been in
// flight when the execution ended or was stopped, so its count is not reported.
func (r *Reconciler) settled(op operation.Operation, kind operation.Kind, at time.Time) {
	steps := -1
	if !op.Started {
		steps = 0
	}
	for _, m := range operation.OutcomeMeasures(op, kind, steps, at) {
		r.metric(m.Name, m.Unit, m.Value, m.Dims...)
	}
}

// Summary counts what a run did.
type Summary struct {
	Examined    int `json:"examined"`
	Dispatched  int `json:"dispatched"`
	Recorded    int `json:"recorded"`
	Stopped     int `json:"stopped"`
	Continued   int `json:"continued"`
	Rescheduled int `json:"rescheduled"`
	Errors      int `json:"errors"`
	// Deferred counts operations left due, untouched, for the next run: a call they needed
	// was throttled in this run, or its token would have come after the budget (or after the
	// invocation's end).
	Deferred int `json:"deferred"`
	// Pages counts the reads of the due index.
	Pages int `json:"pages"`
	// Throttled names the Step Functions calls that were throttled in this run
	// (StartExecution, DescribeExecution, StopExecution); after the first of a kind the run
	// made no more of that kind.
	Throttled []string `json:"throttled,omitempty"`
	// End says why the run ended: EndDrained, EndBudget, EndThrottled, EndPage or EndError.
	End string `json:"end"`
	// OutcomeUnknown is how many operations wait for an operator, all tenants together:
	// the run's log line carries it for the alarm on their number.
	OutcomeUnknown int `json:"outcomeUnknown"`
}

// Why a run ended (Summary.End).
const (
	// EndDrained: nothing more was due when the run began.
	EndDrained = "drained"
	// EndBudget: the budget ran out (or the invocation is ending) with operations still due.
	EndBudget = "budget"
	// EndThrottled: a call was throttled; the run finished its page without more such calls.
	EndThrottled = "throttled"
	// EndPage: a run without a budget read its one page, and that page was full.
	EndPage = "page"
	// EndError: a later page could not be read.
	EndError = "error"
)

// The Step Functions calls a run makes, as Summary.Throttled names them.
const (
	callStart    = "StartExecution"
	callDescribe = "DescribeExecution"
	callStop     = "StopExecution"
)

// maxBackoff caps how far a look is pushed out.
const maxBackoff = time.Hour

// run is one Run's state, shared by the goroutines that work on a page.
type run struct {
	*Reconciler
	deadline time.Time // zero without a budget

	mu        sync.Mutex
	sum       Summary
	spent     bool            // a token would have come after the deadline
	throttled map[string]bool // calls throttled in this run
	seen      map[string]bool // operations this run took from the index
}

// Run reconciles the due operations: one page of up to MaxPerRun without a Budget; with
// one, page after page until the budget is spent, a call is throttled or nothing more is due.
// Every page is read as of the run's start, so an operation the run rescheduled (even to
// "soon") is not read again in it, and each page holds only work that was due when it began.
func (r *Reconciler) Run(ctx context.Context) (Summary, error) {
	start := r.Now()
	x := &run{Reconciler: r, throttled: map[string]bool{}, seen: map[string]bool{}}
	if r.Budget > 0 {
		x.deadline = start.Add(r.Budget)
	}
	for {
		due, err := r.Store.Due(ctx, start, r.MaxPerRun)
		if err != nil {
			if x.sum.Pages == 0 {
				return x.sum, err
			}
			// What the run did stands; the next run reads the index again.
			x.sum.Errors++
			x.sum.End = EndError
			r.Log.WarnContext(ctx, "due index", "error", err.Error())
			break
		}
		x.sum.Pages++
		var fresh []DueItem
		for _, item := range due {
			if !x.seen[item.ID] {
				x.seen[item.ID] = true
				fresh = append(fresh, item)
			}
		}
		x.page(ctx, fresh)
		if x.sum.End = x.end(len(due), len(fresh)); x.sum.End != "" {
			break
		}
	}
	x.sum.Throttled = x.throttledCalls()
	sum := x.sum
	var err error
	if sum.OutcomeUnknown, err = r.Store.CountUnknownOutcomes(ctx); err != nil {
		r.Log.WarnContext(ctx, "count of unknown outcomes", "error", err.Error())
		sum.OutcomeUnknown = -1
	} else {
		r.count("OutcomeUnknownWaiting", float64(sum.OutcomeUnknown))
	}
	r.Log.InfoContext(ctx, "run", "examined", sum.Examined, "dispatched", sum.Dispatched, "recorded", sum.Recorded,
		"stopped", sum.Stopped, "continued", sum.Continued, "rescheduled", sum.Rescheduled, "errors", sum.Errors,
		"deferred", sum.Deferred, "pages", sum.Pages, "throttled", sum.Throttled, "end", sum.End,
		"outcome_unknown", sum.OutcomeUnknown)
	return sum, nil
}

// end says whether the run ends after a page of read due operations, fresh of them new to
// it, and why; "" goes on to the next page.
func (x *run) end(read, fresh int) string {
	switch {
	case len(x.throttled) > 0:
		// Reading on would find mostly the same kind of work (the index is oldest first, and
		// a backlog is accepted operations): only to leave it due again.
		return EndThrottled
	case x.over():
		return EndBudget
	case read < x.MaxPerRun || fresh == 0:
		// A short page is the last (Store.Due fills its limit while any shard has more); a
		// page of operations already looked at means the index has not caught up with this
		// run's own writes yet, and the next run will see them.
		return EndDrained
	case x.Budget <= 0:
		return EndPage
	}
	return ""
}

// over reports whether the run's budget is spent (or its invocation is ending).
func (x *run) over() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.spent || !x.deadline.IsZero() && !x.Now().Before(x.deadline)
}

// page reconciles items, Concurrency at a time, and stops starting new ones once the budget
// is spent: those not begun are left due, unexamined.
func (x *run) page(ctx context.Context, items []DueItem) {
	slots := make(chan struct{}, max(1, x.Concurrency))
	var wg sync.WaitGroup
	for _, item := range items {
		slots <- struct{}{}
		if x.over() {
			<-slots
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			x.one(ctx, item)
		})
	}
	wg.Wait()
}

// one reconciles one due operation and counts what it did.
func (x *run) one(ctx context.Context, item DueItem) {
	ctx = logctx.With(ctx, logctx.Fields{OperationID: item.ID}) // reconcile adds the correlation id
	res, err := x.reconcile(ctx, item)
	x.mu.Lock()
	x.sum.Examined++
	switch {
	case err != nil:
		x.sum.Errors++
	case res.action == "dispatched":
		x.sum.Dispatched++
	case res.action == "recorded":
		x.sum.Recorded++
	case res.action == "stopped":
		x.sum.Stopped++
	case res.action == "continued":
		x.sum.Continued++
	case res.action == "rescheduled":
		x.sum.Rescheduled++
	case res.action == actionDeferred:
		x.sum.Deferred++
	}
	x.mu.Unlock()
	if err != nil {
		x.count("Repairs", 1, "Action", "error")
		x.Log.WarnContext(ctx, "reconcile", "operation_id", item.ID, "error", err.Error())
		// Back off even after an error, so one broken operation cannot eat every run.
		_ = x.Store.Reschedule(ctx, item.ID, item.Version, x.Now().Add(backoff(x.Leases.Check, item.Attempts)), item.Attempts+1)
		return
	}
	if res.action != "none" {
		x.count("Repairs", 1, "Action", res.action)
	}
	x.Log.InfoContext(ctx, "reconciled", "operation_id", item.ID, "action", res.action, "outcome", string(res.kind), "state", string(res.state))
}

// actionDeferred is the action of an operation left due for the next run: untouched, its due
// time and attempts as they were, so it stays at the head of the index (oldest first) and
// throttling never counts against it the way a failure does.
const actionDeferred = "deferred"

// call makes one Step Functions call of kind name for the run: not at all (ok false) when
// calls of that kind were throttled earlier in the run or its token would come after the
// budget; otherwise after a token of lim (nil: at once). A throttled call marks the kind
// throttled for the rest of the run and comes back with ok false and no error: the
// operation is deferred, not failed.
func (x *run) call(ctx context.Context, name string, lim *rate.Limiter, f func() error) (ok bool, err error) {
	if x.isThrottled(name) {
		return false, nil
	}
	if ok, err := x.take(ctx, lim); !ok || err != nil {
		return false, err
	}
	if err := f(); errors.Is(err, dispatch.ErrThrottled) {
		x.mu.Lock()
		x.throttled[name] = true
		x.mu.Unlock()
		x.Log.WarnContext(ctx, "throttled; no more of these calls in this run", "call", name, "error", err.Error())
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, nil
}

func (x *run) isThrottled(name string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.throttled[name]
}

func (x *run) throttledCalls() []string {
	var out []string
	for name := range x.throttled {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// take waits for one token of lim, true once it is had. A token that would come after the
// run's deadline is handed back and spends the budget (false): the call would start after
// the time the run was given. So does a wait that ctx cuts short (the invocation is ending):
// neither is the operation's failure.
func (x *run) take(ctx context.Context, lim *rate.Limiter) (bool, error) {
	if lim == nil {
		return true, nil
	}
	// The clock is read and the token reserved under the run's lock: the limiter counts a
	// time earlier than the last it saw as that last, and then gives the next reservation
	// the difference again, a token too many, when the workers' times cross.
	x.mu.Lock()
	now := x.Now()
	res := lim.ReserveN(now, 1)
	x.mu.Unlock()
	if !res.OK() {
		return false, fmt.Errorf("reconcile: a limiter of burst %d cannot give a token", lim.Burst())
	}
	at := now.Add(res.DelayFrom(now))
	late := !x.deadline.IsZero() && !at.Before(x.deadline)
	if late || at.After(now) && x.sleepUntil(ctx, at) != nil {
		res.CancelAt(x.Now())
		x.mu.Lock()
		x.spent = true
		x.mu.Unlock()
		return false, nil
	}
	return true, nil
}

func (x *run) sleepUntil(ctx context.Context, t time.Time) error {
	if x.SleepUntil != nil {
		return x.SleepUntil(ctx, t)
	}
	timer := time.NewTimer(t.Sub(x.Now()))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// result is what reconciling one operation did: the action, and for a recorded fact its
// kind and the state it led to (the run's log line carries both, for the alarms).
type result struct {
	action string
	kind   operation.Kind
	state  operation.State
}

func (r *run) reconcile(ctx context.Context, item DueItem) (result, error) {
	op, err := r.Store.Load(ctx, item.ID)
	if err != nil {
		return result{}, err
	}
	logctx.Set(ctx, logctx.Fields{CorrelationID: op.CorrelationID})
	later := func(base time.Duration) (result, error) {
		return result{action: "rescheduled"}, r.Store.Reschedule(ctx, op.ID, op.Version, r.Now().Add(backoff(base, item.Attempts)), item.Attempts+1)
	}
	switch op.State {
	case operation.Accepted, operation.Dispatched, operation.Running, operation.Cancelling:
	default:
		return result{action: "none"}, nil // settled since it was found due
	}
	typ, ok := r.Registry.Lookup(op.Type)
	if !ok {
		// A type this function does not serve (a newer one admitted or started the work, or
		// the type was removed): left alone for a function that serves it, and settled only
		// past its deadline. Nothing is looked at or stopped: the execution's state machine
		// is the type's.
		f, by := op.Unserved(r.Leases, r.Now())
		if f == nil {
			r.Log.InfoContext(ctx, "type not served here; looking again later", "operation_id", op.ID, "type", op.Type)
			next := r.Now().Add(backoff(r.Leases.Check, item.Attempts))
			return result{action: "rescheduled"}, r.Store.Reschedule(ctx, op.ID, op.Version, minTime(next, by), item.Attempts+1)
		}
		f.Source = operation.SourceReconciler
		return r.record(ctx, op, *f)
	}
	if op.State == operation.Accepted {
		ok, err := r.call(ctx, callStart, r.Starts, func() error { return r.Dispatcher.Dispatch(ctx, op.ID) })
		if err != nil || !ok {
			return result{action: actionDeferred}, err
		}
		return result{action: "dispatched"}, nil
	}
	if op.Awaits() {
		return r.wake(ctx, op, typ.Worker)
	}
	if op.Retrying != nil {
		// An operator had a step run again and no execution has taken it up (the
		// dispatcher's start failed, or is throttled): start it, as the dispatcher would.
		// The execution before it ended with the unknown outcome, so there is nothing to
		// look at.
		next, err := recorder.WakeInput(op)
		if err != nil {
			return result{}, err
		}
		r.Log.InfoContext(ctx, "retrying", "operation_id", op.ID, "continuation", next.Continuation, "step", op.Retrying.Step)
		return r.carryOn(ctx, op, typ.Worker, next, false)
	}
	// The operation's latest execution: the dispatcher's, or the one a Run continued it in.
	var ex Execution
	looked, err := r.call(ctx, callDescribe, r.Looks, func() (err error) {
		if op.Execution != "" {
			ex, err = r.Executions.DescribeRef(ctx, op.Execution)
		} else {
			ex, err = r.Executions.Describe(ctx, typ.Worker, op.ID)
		}
		return err
	})
	if err != nil || !looked {
		return result{action: actionDeferred}, err
	}
	switch ex.Status {
	case Running:
		cause := ""
		switch {
		case op.State == operation.Cancelling && op.MayBeInFlight(r.Now()) && !r.Now().After(op.UpdatedAt.Add(r.Leases.Cancel)):
			// A step is in flight (a cancel during a wait that has since ended): the Run
			// records the cancel at its next gate, within the cancel lease.
			return later(r.Leases.Check)
		case op.State == operation.Cancelling && op.Waiting(r.Now()):
			cause = "canceled: the work was waiting, with nothing in flight"
		case op.State == operation.Cancelling:
			cause = "canceled: the workflow did not stop by itself within the cancel lease"
		case r.Now().After(op.DeadlineAt(r.Leases).Add(r.Leases.Cancel)):
			// The workflow itself stops at its deadline between steps; it gets the cancel
			// lease after it, as after a cancel, for the step in flight to end.
			cause = "stuck: running past the deadline"
		default:
			return later(r.Leases.Check)
		}
		// StopExecution has a bucket of its own that refills faster than DescribeExecution's
		// (200/s against 15/s in the large regions), and a run stops only what it looked at:
		// the looks pace the stops.
		ok, err := r.call(ctx, callStop, nil, func() error { return r.Executions.Stop(ctx, ex.Ref, cause) })
		if err != nil || !ok {
			return result{action: actionDeferred}, err
		}
		res, err := r.record(ctx, op, r.stopped(op))
		res.action = "stopped"
		return res, err
	}
	if op.InFlight(r.Now()) != nil {
		// A Run still holds the lease of a step it invoked (its execution ended without it:
		// the workflow gave up on a retry it made while that Run ran): the step's end is
		// that Run's to record, and nothing may be decided before the lease runs out.
		return later(r.Leases.Check)
	}
	switch ex.Status {
	case Succeeded:
		if in, ok := recorder.Trusted(r.Seals, op.ID, ex.Ref, ex.Output); ok {
			if f, ok := recorder.Unrecorded(in, op.CancelRequested); ok {
				f.Source = operation.SourceReconciler
				return r.record(ctx, op, f)
			}
			if next, resume, ok := recorder.Resumption(in); ok {
				return r.carryOn(ctx, op, typ.Worker, next, resume)
			}
		}
		return r.record(ctx, op, r.ended(op, ex.Status))
	default:
		return r.record(ctx, op, r.ended(op, ex.Status))
	}
}

// carryOn starts the execution that carries on op's work where its last one ended with
// nothing in flight (recorder.Resumption): named after the operation and the count in next,
// so a second look starts nothing new. That execution names itself the operation's latest
// at its first step; until then the operation is looked at again after the check lease.
// One of that name may be there already and have ended before it named itself (its Run
// throttled in its turn): the work then goes on from where that one ended, along the chain,
// so that every look moves the work forward.
func (r *run) carryOn(ctx context.Context, op operation.Operation, workflow string, next recorder.Input, resume bool) (result, error) {
	for hops := 0; ; hops++ {
		sealed, err := recorder.SealInput(r.Seals, next)
		if err != nil {
			return result{}, err
		}
		input, err := json.Marshal(sealed)
		if err != nil {
			return result{}, err
		}
		name := fmt.Sprintf("%s-%d", op.ID, next.Continuation)
		var ex Execution
		var started bool
		ok, err := r.call(ctx, callStart, r.Starts, func() error {
			var err error
			ex, started, err = r.Executions.Continue(ctx, recorder.NextExecution{Workflow: workflow, Resume: resume, Name: name}, input)
			return err
		})
		if err != nil || !ok {
			return result{action: actionDeferred}, err
		}
		if started || ex.Status == Running || hops == maxHops {
			r.Log.InfoContext(ctx, "carried on", "operation_id", op.ID, "execution", name, "started", started)
			// A new execution carries the work: look again after one check lease, not after
			// the backoff the looks at the last one had grown to (a throttled Run writes no
			// fact, so nothing else would reset it).
			if err := r.Store.Reschedule(ctx, op.ID, op.Version, r.Now().Add(r.Leases.Check), 0); err != nil {
				return result{}, err
			}
			return result{action: "continued"}, nil
		}
		if out, ok := recorder.Trusted(r.Seals, op.ID, ex.Ref, ex.Output); ex.Status == Succeeded && ok {
			if f, ok := recorder.Unrecorded(out, op.CancelRequested); ok {
				f.Source = operation.SourceReconciler
				return r.record(ctx, op, f)
			}
			var ok bool
			if next, resume, ok = recorder.Resumption(out); ok {
				continue
			}
		}
		return r.record(ctx, op, r.ended(op, ex.Status))
	}
}

// wake ends op's wait for a signal when the signal came (and the dispatcher did not start
// the execution that goes on, or has not yet) or the wait timed out: no execution runs
// while it waits, so there is nothing to look at, only one to start (recorder.Wake). Before
// then it looks again when the wait times out.
func (r *run) wake(ctx context.Context, op operation.Operation, workflow string) (result, error) {
	if !op.AwaitAnswered() && r.Now().Before(op.Awaiting.Until) {
		return result{action: "rescheduled"}, r.Store.Reschedule(ctx, op.ID, op.Version, op.Awaiting.Until, 0)
	}
	next, err := recorder.WakeInput(op)
	if err != nil {
		return result{}, err
	}
	r.Log.InfoContext(ctx, "waking", "operation_id", op.ID, "continuation", next.Continuation, "timed_out", !op.AwaitAnswered())
	// As any execution that carries the work on: the dispatcher's start of the same name may
	// have ended before its Run named it (throttled), and then the work goes on after it.
	return r.carryOn(ctx, op, workflow, next, false)
}

// maxHops bounds how far one look follows a chain of executions that ended unnamed.
const maxHops = 20

// stopped is the truth about an execution the reconciler just stopped. StopExecution does
// not stop a Lambda invocation in flight, so a step in flight (leased) may still act after
// the stop: its outcome is unknown, even for a cancel. With none in flight nothing can act:
// a cancel is then done, and a deadline stop failed the work.
func (r *Reconciler) stopped(op operation.Operation) operation.Fact {
	started := op.MayBeInFlight(r.Now())
	switch {
	case op.State == operation.Cancelling && !started:
		return operation.Fact{Kind: operation.KindCanceled, Source: operation.SourceReconciler}
	case op.State == operation.Cancelling:
		return r.unknown(op, "cancel_unconfirmed", "The workflow did not stop by itself after the cancel and was stopped while a step may have been in flight; whether that step acted is unknown.")
	case !started:
		detail := fmt.Sprintf("No step had started by the deadline (%s); the execution was stopped and nothing ran.", operation.FormatTime(op.DeadlineAt(r.Leases)))
		if op.Started {
			detail = fmt.Sprintf("The work did not finish by its deadline (%s); the execution was stopped with no step in flight.", operation.FormatTime(op.DeadlineAt(r.Leases)))
		}
		return operation.Fact{Kind: operation.KindFailed, Source: operation.SourceReconciler,
			Problem: operation.NewProblem("deadline_exceeded", "Deadline exceeded", detail)}
	default:
		return r.unknown(op, "deadline_exceeded", fmt.Sprintf("The operation ran past its deadline (%s) and was stopped; its outcome is unknown.", operation.FormatTime(op.DeadlineAt(r.Leases))))
	}
}

// ended is the truth about an execution that is over (or never existed) without an outcome
// fact: work with no step in flight failed without effect (or, when cancellation was asked
// for, was canceled); work whose step may have been in flight may have acted, so its
// outcome is unknown, cancel or not.
func (r *Reconciler) ended(op operation.Operation, status Status) operation.Fact {
	started := op.MayBeInFlight(r.Now())
	switch {
	case op.State == operation.Running && !started:
		return operation.Fact{Kind: operation.KindFailed, Source: operation.SourceReconciler,
			Problem: operation.NewProblem("execution_ended", "Execution ended",
				fmt.Sprintf("The execution ended (%s) with no step in flight before the work finished.", status))}
	case op.State == operation.Cancelling && !started:
		return operation.Fact{Kind: operation.KindCanceled, Source: operation.SourceReconciler}
	case op.State == operation.Cancelling:
		return r.unknown(op, "execution_ended", fmt.Sprintf("The execution ended (%s) after the cancel without recording an outcome while a step may have acted; its outcome is unknown.", status))
	case op.State == operation.Dispatched:
		return operation.Fact{Kind: operation.KindFailed, Source: operation.SourceReconciler,
			Problem: operation.NewProblem("execution_ended", "Execution ended",
				fmt.Sprintf("The execution ended (%s) before any work started.", status))}
	default:
		return r.unknown(op, "execution_ended", fmt.Sprintf("The execution ended (%s) while work was in progress; its outcome is unknown.", status))
	}
}

func (r *Reconciler) unknown(_ operation.Operation, code, detail string) operation.Fact {
	return operation.Fact{Kind: operation.KindOutcomeUnknown, Source: operation.SourceReconciler,
		Problem: operation.NewProblem(code, "Outcome unknown", detail)}
}

// record appends f if the operation has not moved since it was read; if it has, whoever
// moved it knew more, and the next run looks again.
func (r *Reconciler) record(ctx context.Context, seen operation.Operation, f operation.Fact) (result, error) {
	f.At = r.Now()
	op, appended, err := facts.Update(ctx, r.Store, seen.ID, func(op operation.Operation) ([]operation.Fact, bool, error) {
		if op.Version != seen.Version {
			return nil, false, nil
		}
		if _, err := operation.Next(op.State, f.Kind); err != nil {
			return nil, false, nil
		}
		return []operation.Fact{f}, true, nil
	})
	if err != nil {
		return result{}, err
	}
	res := result{action: "recorded", state: op.State}
	if appended {
		res.kind = f.Kind
		if op.State.Terminal() || op.State == operation.OutcomeUnknown {
			r.settled(op, f.Kind, f.At)
		}
	}
	return res, nil
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// backoff is the wait after attempts looks that found nothing to do, up to maxBackoff.
func backoff(base time.Duration, attempts int) time.Duration {
	d := base << min(attempts+1, 12) // the first look came after one lease; each next waits twice as long
	if d <= 0 || d > maxBackoff {
		return maxBackoff
	}
	return d
}

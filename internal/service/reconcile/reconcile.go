// Package reconcile repairs stuck work. On a schedule it reads the operations whose due
// time has passed from the sparse due index (never a scan) and finds out what really
// happened: an accepted operation is dispatched again (same execution name, so at most one
// execution ever); an execution that ended without an outcome fact gets the outcome it
// reported, or outcome_unknown when an effect may have happened; a cancelling or overdue
// execution is stopped. Work per run is bounded and each operation backs off.
package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/logctx"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
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
	Continue(ctx context.Context, workflow string, resume bool, name string, input []byte) (ex Execution, started bool, err error)
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

// Reconciler is one scheduled run's worth of repair.
type Reconciler struct {
	Store      Store
	Executions Executions
	Dispatcher Dispatcher
	Registry   *optype.Registry
	Leases     operation.Leases
	Now        func() time.Time
	Log        *slog.Logger
	MaxPerRun  int
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
	// OutcomeUnknown is how many operations wait for an operator, all tenants together:
	// the run's log line carries it for the alarm on their number.
	OutcomeUnknown int `json:"outcomeUnknown"`
}

// maxBackoff caps how far a look is pushed out.
const maxBackoff = time.Hour

// Run reconciles up to MaxPerRun due operations.
func (r *Reconciler) Run(ctx context.Context) (Summary, error) {
	var sum Summary
	due, err := r.Store.Due(ctx, r.Now(), r.MaxPerRun)
	if err != nil {
		return sum, err
	}
	for _, item := range due {
		sum.Examined++
		ctx := logctx.With(ctx, logctx.Fields{OperationID: item.ID}) // reconcile adds the correlation id
		res, err := r.reconcile(ctx, item)
		if err != nil {
			sum.Errors++
			r.count("Repairs", 1, "Action", "error")
			r.Log.WarnContext(ctx, "reconcile", "operation_id", item.ID, "error", err.Error())
			// Back off even after an error, so one broken operation cannot eat every run.
			_ = r.Store.Reschedule(ctx, item.ID, item.Version, r.Now().Add(backoff(r.Leases.Check, item.Attempts)), item.Attempts+1)
			continue
		}
		switch res.action {
		case "dispatched":
			sum.Dispatched++
		case "recorded":
			sum.Recorded++
		case "stopped":
			sum.Stopped++
		case "continued":
			sum.Continued++
		case "rescheduled":
			sum.Rescheduled++
		}
		if res.action != "none" {
			r.count("Repairs", 1, "Action", res.action)
		}
		r.Log.InfoContext(ctx, "reconciled", "operation_id", item.ID, "action", res.action, "outcome", string(res.kind), "state", string(res.state))
	}
	if sum.OutcomeUnknown, err = r.Store.CountUnknownOutcomes(ctx); err != nil {
		r.Log.WarnContext(ctx, "count of unknown outcomes", "error", err.Error())
		sum.OutcomeUnknown = -1
	} else {
		r.count("OutcomeUnknownWaiting", float64(sum.OutcomeUnknown))
	}
	r.Log.InfoContext(ctx, "run", "examined", sum.Examined, "dispatched", sum.Dispatched, "recorded", sum.Recorded,
		"stopped", sum.Stopped, "continued", sum.Continued, "rescheduled", sum.Rescheduled, "errors", sum.Errors, "outcome_unknown", sum.OutcomeUnknown)
	return sum, nil
}

// result is what reconciling one operation did: the action, and for a recorded fact its
// kind and the state it led to (the run's log line carries both, for the alarms).
type result struct {
	action string
	kind   operation.Kind
	state  operation.State
}

func (r *Reconciler) reconcile(ctx context.Context, item DueItem) (result, error) {
	op, err := r.Store.Load(ctx, item.ID)
	if err != nil {
		return result{}, err
	}
	logctx.Set(ctx, logctx.Fields{CorrelationID: op.CorrelationID})
	later := func(base time.Duration) (result, error) {
		return result{action: "rescheduled"}, r.Store.Reschedule(ctx, op.ID, op.Version, r.Now().Add(backoff(base, item.Attempts)), item.Attempts+1)
	}
	switch op.State {
	case operation.Accepted:
		if err := r.Dispatcher.Dispatch(ctx, op.ID); err != nil {
			return result{}, err
		}
		return result{action: "dispatched"}, nil
	case operation.Dispatched, operation.Running, operation.Cancelling:
	default:
		return result{action: "none"}, nil // settled since it was found due
	}

	typ, ok := r.Registry.Lookup(op.Type)
	if !ok {
		return r.record(ctx, op, r.unknown(op, "unsupported_operation_type", "No executor is registered for this type any more."))
	}
	// The operation's latest execution: the dispatcher's, or the one a Run continued it in.
	var ex Execution
	if op.Execution != "" {
		ex, err = r.Executions.DescribeRef(ctx, op.Execution)
	} else {
		ex, err = r.Executions.Describe(ctx, typ.Worker, op.ID)
	}
	if err != nil {
		return result{}, err
	}
	switch ex.Status {
	case Running:
		cause := ""
		switch {
		case op.State == operation.Cancelling && r.inFlight(op) && !r.Now().After(op.UpdatedAt.Add(r.Leases.Cancel)):
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
		if err := r.Executions.Stop(ctx, ex.Ref, cause); err != nil {
			return result{}, err
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
		var in recorder.Input
		if err := json.Unmarshal(ex.Output, &in); err == nil {
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
func (r *Reconciler) carryOn(ctx context.Context, op operation.Operation, workflow string, next recorder.Input, resume bool) (result, error) {
	for hops := 0; ; hops++ {
		input, err := json.Marshal(next)
		if err != nil {
			return result{}, err
		}
		name := fmt.Sprintf("%s-%d", op.ID, next.Continuation)
		ex, started, err := r.Executions.Continue(ctx, workflow, resume, name, input)
		if err != nil {
			return result{}, err
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
		var out recorder.Input
		if ex.Status == Succeeded && json.Unmarshal(ex.Output, &out) == nil {
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

// maxHops bounds how far one look follows a chain of executions that ended unnamed.
const maxHops = 20

// inFlight says whether a step may be in flight: a lease that has not run out, or, in a
// history from before leases, any started work.
func (r *Reconciler) inFlight(op operation.Operation) bool {
	if op.Leased {
		return op.InFlight(r.Now()) != nil
	}
	return op.Started
}

// stopped is the truth about an execution the reconciler just stopped. StopExecution does
// not stop a Lambda invocation in flight, so a step in flight (leased) may still act after
// the stop: its outcome is unknown, even for a cancel. With none in flight nothing can act:
// a cancel is then done, and a deadline stop failed the work.
func (r *Reconciler) stopped(op operation.Operation) operation.Fact {
	started := r.inFlight(op)
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
	started := r.inFlight(op)
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
	appended := false
	op, err := facts.Update(ctx, r.Store, seen.ID, func(op operation.Operation) ([]operation.Fact, error) {
		if op.Version != seen.Version {
			return nil, nil
		}
		if _, err := operation.Next(op.State, f.Kind); err != nil {
			return nil, nil
		}
		appended = true
		return []operation.Fact{f}, nil
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

// backoff is the wait after attempts looks that found nothing to do, up to maxBackoff.
func backoff(base time.Duration, attempts int) time.Duration {
	d := base << min(attempts+1, 12) // the first look came after one lease; each next waits twice as long
	if d <= 0 || d > maxBackoff {
		return maxBackoff
	}
	return d
}

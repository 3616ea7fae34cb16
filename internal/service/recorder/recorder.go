// Package recorder is longrun's side of every step of an operation's workflow. The workflow
// calls it before the first step, after each step and after each wait between steps
// (internal/aws/stepfunctions, operation.asl.json). It records what the step came to as
// facts, then decides what comes next: before every step it checks cancellation intent, the
// operation's deadline and the type's maxSteps, and builds the worker's step request
// (internal/core/step). The worker never reads or writes longrun's table.
//
// It reads a worker failure whichever way it arrived: through the workflow's Catch (Step
// Functions on AWS: {"Error","Cause"}) or as the function's error payload in the task
// result (emulators that ignore function errors: {"errorType","errorMessage"}), so the
// recorded outcome is the same in both places.
package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/internal/core/callback"
	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/logctx"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/runes"
	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/core/step"
	"go.opentelemetry.io/otel/trace"
)

// What a Decision tells the workflow to do next.
const (
	NextWork = "work" // invoke the worker with Request (the workflow before Run, see Run)
	NextWait = "wait" // wait WaitSeconds, then ask again
	NextDone = "done" // the operation's outcome is recorded (or was settled elsewhere)
	// NextContinue: Run had no time left in its invocation for step Request.Step; the work
	// goes on at once in the operation's next execution, which Run started (ContinuedIn).
	// After NextWait, Run started that execution on the resume state machine, which waits
	// first.
	NextContinue = "continue"
	// NextAwait: the work waits for a signal until ResumeAt, with nothing in flight and no
	// execution running: this execution ends, and the dispatcher (the signal came) or the
	// reconciler (the wait timed out) starts the next (Wake).
	NextAwait = "await"
	// NextRetry: an operator had step Request.Step, whose outcome was unknown, run again.
	// Only an execution's input carries it (Wake): the execution that runs the step again.
	NextRetry = "retry"
	// NextUnrecorded: Run could not record how step Request.Step ended; Task or Error is its
	// end, for the reconciler (the execution ends with it in its output).
	NextUnrecorded = "unrecorded"
)

// Decision is the recorder's answer to the workflow.
type Decision struct {
	Next        string `json:"next"`
	WaitSeconds int    `json:"waitSeconds,omitempty"`
	// ResumeAt is when a wait the worker asked for ends. A long wait is taken in pauses of
	// at most MaxPause, with intent checked after each, so that a cancel during it is seen.
	ResumeAt           string        `json:"resumeAt,omitempty"`
	StepTimeoutSeconds int           `json:"stepTimeoutSeconds,omitempty"`
	Request            *step.Request `json:"request,omitempty"`
	// ContinuedIn names the execution Run handed a wait or a continue to.
	ContinuedIn string `json:"continuedIn,omitempty"`
	// Pending is the next execution's input when Run could not start it (Step Functions
	// kept refusing): this execution ends with it, and the reconciler starts it.
	Pending *Input `json:"pending,omitempty"`
	// Task and Error are the end of the step that could not be recorded (NextUnrecorded).
	Task  *Task      `json:"task,omitempty"`
	Error *TaskError `json:"error,omitempty"`
	// Refusals counts how many times in a row Lambda refused to invoke the worker for
	// Request.Step (throttled, or another refusal before the handler ran): the step is
	// offered again after a wait that grows with it (RefusalWait), until the deadline.
	Refusals int `json:"refusals,omitempty"`
	// Refused is the last refusal's cause, for the problem if the deadline ends the work.
	Refused string `json:"refused,omitempty"`
	// Seal is the recorder's MAC over the rest of the decision (seals.go): the reconciler
	// trusts an execution's output only with it.
	Seal string `json:"seal,omitempty"`

	// delivery is the signals Request carries, for the fact that leases the step (nil:
	// none, or none new).
	delivery *operation.Delivery
}

// Input is the workflow's state as the recorder receives it: the execution's input
// (operationId) on the first call; after that, its own last decision under gate, the
// worker's answer under task, and a caught error under error.
type Input struct {
	OperationID   string `json:"operationId"`
	CorrelationID string `json:"correlationId,omitempty"`
	// Continuation counts the executions the operation went on in after its first (0 in the
	// dispatcher's): the next is named after the operation id and Continuation+1.
	Continuation int `json:"continuation,omitempty"`
	// Traceparent is the dispatcher's span, which the recorder's spans link to.
	Traceparent string     `json:"traceparent,omitempty"`
	Gate        *Gate      `json:"gate,omitempty"`
	Task        *Task      `json:"task,omitempty"`
	Error       *TaskError `json:"error,omitempty"`
	// RecordError is what the workflow's Catch put in the state when Run kept failing
	// (Unrecorded), the recorder's own throttling included.
	RecordError *TaskError `json:"recordError,omitempty"`
	// Seal is the MAC over the rest of the input of an execution that longrun started to
	// carry work on (seals.go). Only the dispatcher's input, which names the operation and
	// nothing else it did, goes without one.
	Seal string `json:"seal,omitempty"`
}

// Gate holds the recorder's last decision as the workflow stored it.
type Gate struct {
	Decision *Decision `json:"decision,omitempty"`
}

// Task holds a worker's answer as the workflow stored it.
type Task struct {
	Report json.RawMessage `json:"report,omitempty"`
}

// TaskError is what a Catch puts in the state.
type TaskError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

func (in Input) last() *Decision {
	if in.Gate == nil {
		return nil
	}
	return in.Gate.Decision
}

// unrecorded is in as the workflow before Run held a step's end, when Run handed one over
// unrecorded: the decision that sent the worker the request, and the step's end.
func (in Input) unrecorded() Input {
	if d := in.last(); d != nil && d.Next == NextUnrecorded && d.Request != nil {
		return Input{OperationID: in.OperationID, Gate: &Gate{Decision: &Decision{Next: NextWork, Request: d.Request}},
			Task: d.Task, Error: d.Error}
	}
	return in
}

// ran is the request of the step whose end in brings (its report in Task, or its failure in
// Error): the workflow's last decision sent that request to the worker. It is nil when in
// brings no step's end: on the first call, or when the last decision sent no step.
func (in Input) ran() *step.Request {
	if d := in.last(); d != nil && d.Next == NextWork {
		return d.Request
	}
	return nil
}

// Metrics is where the recorder counts what it recorded (the functions give it
// internal/aws/emf; docs/observability.md lists the metrics). dims are name, value pairs.
type Metrics interface {
	Add(name, unit string, value float64, dims ...string)
}

// Recorder records step outcomes and gates the next step.
type Recorder struct {
	Store    facts.Store
	Registry *optype.Registry
	// Leases give the deadline of operations admitted before types had one (Deadline).
	Leases operation.Leases
	Now    func() time.Time
	Log    *slog.Logger
	// Metrics hears of every outcome recorded; nil counts nothing.
	Metrics Metrics
	// Invoker invokes the workers for Run.
	Invoker Invoker
	// Executions starts the executions a Run hands the work back to.
	Executions Executions
	// Tracer starts a span per Run, linked to the dispatcher's; nil traces nothing.
	Tracer trace.Tracer
	// RunBudget bounds how long one Run goes on starting steps (0: as long as its
	// invocation has room). The local stack sets it under its emulator's 30 s limit on a
	// Lambda task.
	RunBudget time.Duration
	// RunIDs names each Run, for the lease on the steps it invokes; nil draws random ids.
	RunIDs func() string
	// Sender sends steps asynchronously for a Run the workflow calls with a task token,
	// which Callbacks answers: a parked Run (park.go). Without both, every Run waits for its
	// steps in its own invocation (Invoker).
	Sender    Sender
	Callbacks Callbacks
	Claims    Claims
	// Deliveries reads a payload as a Delivery of a step's end (lambdainvoke.Destination
	// on AWS); ok is false for any other payload. nil reads none.
	Deliveries func(raw json.RawMessage) (d Delivery, ok bool)
	// Seals seals what the recorder hands to Step Functions and to workers, and checks it
	// when it comes back (seals.go). Serve takes nothing without it.
	Seals *seal.Sealer
	// Workers maps each worker to its function's name or ARN: a Run or a delivery that
	// names another function for an operation of the worker's types is refused (seals.go).
	// nil takes any function (tests).
	Workers map[string]string
	// ParkBudget bounds how long a parked Run goes on starting steps (0: DefaultParkBudget).
	ParkBudget time.Duration
	// CallbackBase is the API's URL under which /v1 lives: step requests carry callback
	// URLs under it for the type's callable signals, their tokens made with Seals ("":
	// none).
	CallbackBase string
	// MaxEventAge is how long Lambda may keep a sent step queued before it runs or gives up
	// (the worker's event invoke config; 0: DefaultMaxEventAge): a parked step's lease
	// lasts that long and its stepTimeout after it.
	MaxEventAge time.Duration
}

func (r *Recorder) runID() string {
	if r.RunIDs != nil {
		return r.RunIDs()
	}
	return ids.New().Request()
}

func (r *Recorder) metric(name, unit string, value float64, dims ...string) {
	if r.Metrics != nil {
		r.Metrics.Add(name, unit, value, dims...)
	}
}

// settled reports an outcome recorded at at: accept → outcome latency, steps run, and
// outcome_unknown counted on its own (it waits for an operator).
func (r *Recorder) settled(op operation.Operation, kind operation.Kind, steps int, at time.Time) {
	for _, m := range operation.OutcomeMeasures(op, kind, max(steps, 0), at) {
		r.metric(m.Name, m.Unit, m.Value, m.Dims...)
	}
}

// errorPayload is how an emulator hands back a function error as the task's result.
type errorPayload struct {
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
}

// throttled is the error of an invocation that Lambda refused before the function ran
// (after the workflow's retries): nothing of that step happened.
const throttled = step.ErrNotInvoked

// RefusalWait is how long the recorder waits before it offers a step again that Lambda
// refused to invoke n times in a row: 2 s, doubling, at most step.MaxPause. A quota that
// binds only delays the work; the deadline ends it (worker_unavailable).
func RefusalWait(n int) time.Duration {
	return min(time.Second<<min(max(n, 1), 9), step.MaxPause)
}

// end is what a step came to: a fact to record, a continue report, or a refusal (the step
// never ran, and is offered again; cause says why).
type end struct {
	fact    *operation.Fact
	cont    *step.Report
	refused string
}

// stepEnd reads how the step req ended from in. A report that cannot be read, or any failure
// of the invocation after it was made, may hide an effect: the outcome is unknown. Text too
// long for the protocol is no such fault: it is cut (step.ParseReportCuttingText), so that a
// worker echoing a caller's input cannot let the caller choose outcome_unknown.
func stepEnd(in Input, req *step.Request) end {
	e := stepEndOf(in, req)
	if f := e.fact; f != nil && f.Kind == operation.KindOutcomeUnknown && req.Step > 0 {
		// The step and the state it was given, for an operator who finds that it did not
		// take effect to have it run again (intent.DecideResolve).
		f.Retry = &operation.Retry{Step: req.Step, Attempt: max(req.Attempt, 1), State: req.State}
	}
	return e
}

func stepEndOf(in Input, req *step.Request) end {
	failure := ""
	if in.Error != nil {
		failure = in.Error.Error
	}
	var rep step.Report
	if failure == "" {
		var raw json.RawMessage
		if in.Task != nil {
			raw = in.Task.Report
		}
		var err error
		if rep, err = step.ParseReportCuttingText(raw); err != nil {
			// Not a report. It is the function's error as an emulator hands it back when it
			// is an object with an errorType, matched by that exact name, and no status: a
			// report with an errorType member is a report with an unknown member, invalid as
			// any other (api/worker/vectors/reports).
			var m map[string]json.RawMessage
			var ep errorPayload
			if json.Unmarshal(raw, &m) != nil || m["status"] != nil || json.Unmarshal(m["errorType"], &ep.ErrorType) != nil || ep.ErrorType == "" {
				return fail(operation.KindOutcomeUnknown, "invalid_report", "Invalid step report",
					fmt.Sprintf("Step %d's worker answered with something that is not a step report (%v); the step may have acted, so the outcome is unknown.", req.Step, runes.Cut(err.Error(), 300)))
			}
			failure = ep.ErrorType
		}
	}
	switch {
	case failure == throttled:
		cause := "throttled"
		if in.Error != nil && in.Error.Cause != "" {
			cause = runes.Cut(in.Error.Cause, 100)
		}
		return end{refused: cause}
	case failure == "States.Timeout":
		return fail(operation.KindOutcomeUnknown, "step_timeout", "Step timed out",
			fmt.Sprintf("Step %d did not finish within its step timeout of %ds; it may have acted, so the outcome is unknown until it is reconciled.", req.Step, req.StepTimeoutSeconds))
	case failure != "":
		return fail(operation.KindOutcomeUnknown, "worker_error", "Worker failed",
			"The worker failed ("+runes.Cut(failure, 100)+") after it may have acted; the outcome is unknown until it is reconciled.")
	}
	f := operation.Fact{Source: operation.SourceExecutor}
	switch rep.Status {
	case step.Continue:
		return end{cont: &rep}
	case step.Succeeded:
		// Only a step that went on or succeeded counts as completed.
		f.Kind, f.Result, f.Progress = operation.KindSucceeded, rep.Result, progressAfter(req.Step, rep.Progress)
		if len(f.Result) == 0 || string(f.Result) == "null" {
			f.Result = json.RawMessage(`{}`)
		}
	case step.Failed:
		f.Kind = operation.KindFailed
		f.Problem = operation.NewProblem(rep.Problem.Code, rep.Problem.Title, rep.Problem.Detail)
		if rep.Progress != nil {
			// How far the work came, in the worker's words: the failed step did not complete.
			f.Progress = progressAfter(req.Step-1, rep.Progress)
		}
	default: // step.OutcomeUnknown
		f.Kind = operation.KindOutcomeUnknown
		f.Problem = operation.NewProblem("result_lost", "Result lost",
			fmt.Sprintf("Step %d's worker reported that its effect may have happened and its result is lost.", req.Step))
		if p := rep.Problem; p != nil {
			f.Problem = operation.NewProblem(p.Code, p.Title, p.Detail)
		}
	}
	return end{fact: &f}
}

// progressAfter is the progress once step n completed, with what its worker said about it.
func progressAfter(n int, p *step.Progress) *operation.Progress {
	out := &operation.Progress{CompletedSteps: n}
	if p != nil {
		out.TotalSteps, out.Percent, out.Message = p.TotalSteps, p.Percent, p.Message
	}
	return out
}

func fail(kind operation.Kind, code, title, detail string) end {
	return end{fact: &operation.Fact{Kind: kind, Source: operation.SourceExecutor, Problem: operation.NewProblem(code, title, detail)}}
}

// Outcome is the terminal fact that the end of a workflow in calls for, for the reconciler
// reading an execution that could not record it (the Unrecorded state); ok is false when in
// holds no step's end, or one that asked to continue.
func Outcome(in Input) (f operation.Fact, ok bool) {
	in = in.unrecorded()
	req := in.ran()
	if req == nil {
		if in.Error == nil && in.Task == nil {
			return operation.Fact{}, false
		}
		req = &step.Request{} // an emulator overwrote the decision with the recorder's own error
	}
	e := stepEnd(in, req)
	if e.fact == nil {
		return operation.Fact{}, false
	}
	return *e.fact, true
}

// unavailable is the fact for work whose worker Lambda kept refusing to invoke for step n:
// that step never ran, and the steps before it had completed.
func unavailable(n int, cause string) *operation.Fact {
	detail := "The worker could not be invoked for the first step (" + cause + "), so no work ran."
	if n > 1 {
		detail = fmt.Sprintf("The worker could not be invoked for step %d (%s), so that step never ran; the steps before it had completed.", n, cause)
	}
	return fail(operation.KindFailed, "worker_unavailable", "Worker unavailable", detail).fact
}

// Unrecorded is the fact for a workflow that ended without the recorder recording how its
// last step ended (the Unrecorded state), for the reconciler: the step's own outcome; or,
// when a cancel was asked for and the step asked to continue or was never invoked (Lambda
// refused it), canceled, since no step is in flight. ok is false otherwise: Resumption
// then says how the work goes on.
func Unrecorded(in Input, cancelRequested bool) (f operation.Fact, ok bool) {
	if f, ok := Outcome(in); ok {
		return f, true
	}
	in = in.unrecorded()
	req := in.ran()
	if req == nil || in.Task == nil && in.Error == nil || !cancelRequested {
		return operation.Fact{}, false
	}
	return operation.Fact{Kind: operation.KindCanceled, Source: operation.SourceExecutor}, true
}

// Resumption is the execution that carries on the work of one that ended without finishing
// it while nothing was in flight, for the reconciler to start: the next execution a Run
// could not start (Pending), or, when the workflow caught a Run that kept failing (the
// recorder's own throttling, a store that would not answer) with no step's outcome to
// record, this execution's state itself, in the operation's next execution. Its first
// step records what that state holds (a continue's progress, a refusal to offer again) and
// gates as every step does. resume says which state machine the input is for: the resume
// state machine when it is a wait's (Input.self). ok is false when out is none of these.
func Resumption(out Input) (next Input, resume bool, ok bool) {
	last := out.last()
	if last != nil && last.Pending != nil {
		return *last.Pending, last.Next == NextWait, true
	}
	if out.RecordError == nil && (last == nil || last.Next != NextUnrecorded) {
		return Input{}, false, false
	}
	u := out.unrecorded()
	if req := u.ran(); req != nil {
		if stepEnd(u, req).fact != nil {
			return Input{}, false, false // its own outcome, which Unrecorded records
		}
	} else if u.Task != nil || u.Error != nil {
		return Input{}, false, false // an end of no known step
	}
	next = Input{OperationID: out.OperationID, CorrelationID: out.CorrelationID, Traceparent: out.Traceparent,
		Continuation: out.Continuation + 1, Gate: u.Gate, Task: u.Task, Error: u.Error}
	return next, next.self().resume, true
}

// Handle records how the last step ended, if one ran, and decides what the workflow does
// next. It is safe to call again with the same input (the workflow retries it): a fact
// already recorded is not recorded twice, and a decision is made from the facts as they are.
func (r *Recorder) Handle(ctx context.Context, in Input) (Decision, error) {
	h, err := r.handle(ctx, in, pace{})
	return h.Decision, err
}

// handled is what handle came to: the decision, whether it recorded progress, and the
// operation as it left it.
type handled struct {
	Decision
	progressed bool
	// heldBack is the progress the step's end came to that a quiet step left to a later
	// fact (nil when recorded, or none).
	heldBack *operation.Progress
	op       operation.Operation
	// stale says the step's end came from an attempt an operator had run again: it was
	// dropped, and the decision is done.
	stale bool
}

// pace is how Run paces the steps it runs in one invocation: fits says whether a step of
// that stepTimeout still fits in the invocation (nil: it does); quiet holds back a progress
// fact when another step runs at once (its progress is recorded with a later fact).
type pace struct {
	fits  func(stepTimeout time.Duration) bool
	quiet bool
	// self is the execution the Run runs in when it is a continuation (k > 0): it must be
	// the operation's latest, and names itself when its predecessor could not (docs below).
	self *continuation
	// run names the Run (one invocation of the recorder), which leases the steps it
	// invokes; "" (Handle, the workflow before Run) takes no lease.
	run string
	// park is the parked Run's callback, kept in its lease (nil: the Run waits for its
	// steps in its own invocation).
	park *parked
	// adopt is the parked Run whose lease this Run, called again by the workflow, may take
	// over (adopt); nil until a first attempt found a step in flight.
	adopt *heldBy
	// loaded is the operation as a delivery read it a moment ago, which the first
	// attempt decides on (nil: read it).
	loaded *operation.Operation
	// worker is the function the Run sends steps to, which must be the type's (serves).
	worker string
	// heldBack is the progress the Run's last step came to and held back (a quiet step):
	// the end of the next step records it when it ends the work.
	heldBack *operation.Progress
}

// ErrTypeNotServed is a Run's answer for an operation whose type this recorder does not
// serve: it decides nothing, and the reconciler carries the work on.
var ErrTypeNotServed = errors.New("recorder: operation type not served here")

// ErrStepInFlight is a Run's answer when another Run of its execution holds the lease of a
// step in flight: the workflow tries it again later, and the reconciler carries the work
// on if the lease runs out with nobody to go on.
var ErrStepInFlight = errors.New("recorder: another Run has a step in flight")

// leased is out, the facts a Run's gate records, with the Run's lease on each while the
// Run still has the work: when the decision sends a step to the worker, and, for the time
// it takes to hand the work on, when it waits or goes on in the next execution (the
// hand-back's own fact releases it, so a retried Run cannot slip in between and run the
// step again). A stop releases it. When a step is sent and none of out would carry the
// lease, and the Run does not hold one that covers the step already, one progress fact
// takes it. The lease lasts as long as the Run's invocation may, and at least the step's
// timeout and the time to record its end.
func (r *Recorder) leased(ctx context.Context, op operation.Operation, out []operation.Fact, p pace, d Decision, now time.Time) []operation.Fact {
	name := p.self.name(op.ID)
	var lease *operation.Lease
	switch d.Next {
	case NextWork:
		need := now.Add(time.Duration(d.StepTimeoutSeconds)*time.Second + recordReserve)
		until := need
		if dl, ok := ctx.Deadline(); ok && now.Add(time.Until(dl)).After(until) && p.park == nil {
			until = now.Add(time.Until(dl)) // the runtime's deadline, on this clock
		}
		lease = &operation.Lease{Run: p.run, Execution: name, Until: until}
		if p.park != nil {
			// A parked Run's lease lasts as long as the Run may, so that its later steps
			// need no fact of their own: each may wait in Lambda's queue as long as an
			// event may live, and then run for its stepTimeout.
			pk := *p.park
			if pk.First == 0 {
				pk.First = d.Request.Step
			}
			lease.Callback = pk.callback()
			lease.Until = r.until(pk, time.Duration(d.StepTimeoutSeconds)*time.Second)
		}
		if len(out) == 0 {
			// (A parked Run's callback is the same for all its steps; a store's snapshot
			// may leave it out of the lease it reads.)
			if held := op.InFlight(now); held != nil && held.Run == p.run && !held.Until.Before(need) &&
				(p.park != nil || held.Callback == lease.Callback) {
				return nil // a quiet step: the Run's lease covers it
			}
			out = append(out, operation.Fact{Kind: operation.KindProgress, Source: operation.SourceExecutor, At: now,
				Progress: op.Progress})
		}
	case NextWait, NextContinue:
		lease = &operation.Lease{Run: p.run, Execution: name, Until: now.Add(recordReserve)}
	}
	for i := range out {
		if out[i].Kind == operation.KindProgress || out[i].Kind == operation.KindStarted {
			out[i].Lease = lease // a stop's fact ends the work: it carries none
		}
	}
	return out
}

// continuation is one of the operation's executions: the first (k = 0, the dispatcher's,
// named after the operation) or the k-th after it, on the type's resume state machine or
// its own.
type continuation struct {
	k      int
	resume bool
}

// name is the execution's name: the operation id for the first (or when c is nil, the
// workflow before Run), <id>-k after it.
func (c *continuation) name(id string) string {
	if c == nil || c.k == 0 {
		return id
	}
	return fmt.Sprintf("%s-%d", id, c.k)
}

// continuationOf is the count in the name of execution ref of operation id: 0 for the
// first (named after the operation), k for <id>-k, -1 for a ref of no such name.
func continuationOf(id, ref string) int {
	name := ref[strings.LastIndex(ref, ":")+1:]
	if name == id {
		return 0
	}
	rest, ok := strings.CutPrefix(name, id+"-")
	if !ok {
		return -1
	}
	k, err := strconv.Atoi(rest)
	if err != nil {
		return -1
	}
	return k
}

// claim is the fact, if one is needed, by which continuation c of op names itself the
// operation's latest execution, and whether c is superseded: a Run starts the next
// execution before it records it (so a fact never names an execution that does not exist),
// and one that died in between leaves the naming to the execution it started. A later
// continuation, or another execution of the same count (two Runs that raced to hand on),
// already named means this one must go no further.
func (r *Recorder) claim(op operation.Operation, c *continuation) (*operation.Fact, bool) {
	if c == nil || r.Executions == nil {
		return nil, false
	}
	typ, ok := r.Registry.Lookup(op.Type)
	if !ok {
		return nil, false
	}
	own, err := r.Executions.Ref(NextExecution{Workflow: typ.Worker, Resume: c.resume, Name: c.name(op.ID)})
	if err != nil || op.Execution == own || op.Execution == "" && c.k == 0 { // the first, unnamed yet, needs no naming
		return nil, false
	}
	if c.k == 0 || continuationOf(op.ID, op.Execution) >= c.k {
		return nil, true
	}
	return &operation.Fact{Kind: operation.KindProgress, Source: operation.SourceExecutor, Progress: op.Progress, Execution: own}, false
}

// handle is Handle paced by p.
func (r *Recorder) handle(ctx context.Context, in Input, p pace) (handled, error) {
	id := in.OperationID
	carried := 0
	var e end
	var next step.Request
	var resumeAt time.Time
	if req := in.ran(); req != nil {
		id, next = req.OperationID, *req
	} else if d := in.last(); d != nil && d.Request != nil {
		id, next = d.Request.OperationID, *d.Request // after a pause or a continue: the request it was for
		next.Step--                                  // gate() moves on to it again
		resumeAt, _ = time.Parse(operation.TimeFormat, d.ResumeAt)
		carried = d.Refusals // a step offered again after a refusal keeps its count and cause
		e.refused = d.Refused
	}
	if id == "" {
		return handled{}, errors.New("recorder: the workflow state names no operation")
	}
	ctx = logctx.With(ctx, logctx.Fields{OperationID: id})
	refusals := 0
	if req := in.ran(); req != nil {
		if e = stepEnd(in, req); e.refused != "" {
			// Lambda refused the step before it ran: nothing happened, nothing is recorded,
			// and gate() offers the same step again once the wait is over.
			next.Step--
			refusals = in.last().Refusals + 1
		}
	}
	if e.cont != nil {
		next.State = e.cont.State
	}
	op, g, err := facts.UpdateFrom(ctx, r.Store, id, p.loaded, func(op operation.Operation) ([]operation.Fact, gated, error) {
		logctx.Set(ctx, logctx.Fields{CorrelationID: op.CorrelationID})
		now := r.Now()
		g := gated{Decision: Decision{Next: NextDone}, at: now}
		if op.State.Terminal() || op.State == operation.OutcomeUnknown && e.fact == nil {
			return nil, g, nil // settled elsewhere: do no more work and record nothing
		}
		if req := in.ran(); req != nil && op.Superseded(req.Step, req.Attempt) {
			// An operator had this step, or a later one, run again after this attempt was
			// given up on as unknown: only the new attempt's end counts. This one's is
			// dropped, and said in the log, in case it shows the operator was wrong.
			g.stale = true
			return nil, g, nil
		}
		typ, served := r.Registry.Lookup(op.Type)
		if served && p.worker != "" && !r.serves(typ.Worker, p.worker) {
			return nil, g, fmt.Errorf("%w: operation %s of type %s names function %s, not its worker's", ErrForged, op.ID, op.Type, p.worker)
		}
		var out []operation.Fact
		add := func(f operation.Fact) {
			f.At = now
			out = append(out, f)
		}
		if e.fact != nil {
			// After outcome_unknown (the reconciler or a timeout gave up on the step), the
			// step's real end, when it comes, is recorded: the fold lets succeeded and failed
			// settle an unknown outcome, and nobody then has to guess.
			if _, err := operation.Next(op.State, e.fact.Kind); err != nil {
				return nil, g, nil // a late result never overwrites a decision
			}
			f := *e.fact // this attempt's copy: the next one decides afresh
			if f.Progress == nil && next.Step > 1 && (op.Progress == nil || op.Progress.CompletedSteps < next.Step-1) {
				// The steps before it completed, and a paced Run held their progress back:
				// what the last of them reported, so that the end keeps it.
				f.Progress = &operation.Progress{CompletedSteps: next.Step - 1}
				if hb := p.heldBack; hb != nil && hb.CompletedSteps == next.Step-1 {
					held := *hb
					f.Progress = &held
				}
			}
			add(f)
			g.recorded = &f
			return out, g, nil
		}
		if !served {
			// A type this recorder does not serve (a newer function admitted the work during a
			// deployment, or the type was removed): nothing is decided here. The Run fails, or
			// hands on the step's end it holds, so that the execution ends for the reconciler,
			// which carries the work on once a function serves the type and settles it only
			// past its deadline (operation.Operation.Unserved).
			return nil, g, fmt.Errorf("%w: operation %s of type %s", ErrTypeNotServed, op.ID, op.Type)
		}
		claim, superseded := r.claim(op, p.self)
		if d := in.last(); claim != nil && d != nil && d.Next == NextAwait && in.ran() == nil && !op.Awaits() {
			superseded = true // woken to end a wait that another execution ended
		}
		if d := in.last(); claim != nil && d != nil && d.Next == NextRetry && in.ran() == nil && op.Retrying == nil {
			superseded = true // started to run a retry that another execution took up
		}
		if superseded {
			r.Log.WarnContext(ctx, "superseded", "operation_id", op.ID, "latest", op.Execution)
			return nil, g, nil // another execution carries the work on: do nothing here
		}
		if l := op.InFlight(now); p.run != "" && l != nil && l.Run != p.run {
			if f := adopt(op, l, p, now); f != nil {
				g.Decision = Decision{Next: NextParked}
				return []operation.Fact{*f}, g, nil
			}
			// Another Run has a step in flight (the workflow retried this one while that
			// one still runs, or this continuation was started while a retried Run of its
			// predecessor ran a step): deciding anything now, or naming this execution the
			// latest, could let a stop be recorded while that step's effect may still land.
			g.blocked = true
			return nil, g, nil
		}
		if op.State == operation.Accepted || op.State == operation.Dispatched {
			add(operation.Fact{Kind: operation.KindStarted, Source: operation.SourceExecutor})
		}
		if claim != nil {
			add(*claim) // after started: progress cannot follow dispatched
		}
		var progress *operation.Progress
		if e.cont != nil && (op.Progress == nil || op.Progress.CompletedSteps < next.Step) {
			progress = progressAfter(next.Step, e.cont.Progress)
		}
		at := resumeAt
		if refusals > 0 {
			at = now.Add(RefusalWait(refusals))
		}
		offered := max(refusals, carried) // times in a row this step was refused
		f, d := r.gate(op, next, e.cont, at, now, offered > 0)
		switch {
		case f == nil && offered > 0:
			d.Refusals, d.Refused = offered, e.refused
		case f != nil && offered > 0 && f.Problem != nil && f.Problem.Code == "deadline_exceeded":
			// The deadline ended work that Lambda kept refusing: say so.
			f = unavailable(next.Step+1, e.refused)
		}
		if f == nil && d.Next == NextWork && p.fits != nil && !p.fits(time.Duration(d.StepTimeoutSeconds)*time.Second) {
			d.Next = NextContinue
		}
		switch {
		case f != nil: // the work stops here: one fact says so, and how far it came
			f.Progress = progress
			add(*f)
			g.recorded = f
		case d.Next == NextAwait:
			// The wait for a signal, recorded once: the fact releases the Run's lease, and
			// keeps the state for the step after it, since no execution holds it meanwhile.
			until, _ := time.Parse(operation.TimeFormat, d.ResumeAt)
			if op.Awaiting == nil || op.Awaiting.Step != next.Step {
				if progress == nil {
					progress = op.Progress
				}
				add(operation.Fact{Kind: operation.KindProgress, Source: operation.SourceExecutor, Progress: progress,
					Awaiting: &operation.Awaiting{Signal: e.cont.Await.Signal, Since: now, Until: until, Step: next.Step, State: e.cont.State}})
				g.progressed = true
			}
		// A parked Run's steps come back in invocations of their own: one that completes
		// within ProgressEvery of the operation's last fact leaves its progress to a later
		// one, as a waiting Run's quiet steps do.
		case progress != nil && !((p.quiet || p.park != nil && now.Sub(op.UpdatedAt) < ProgressEvery) && d.Next == NextWork):
			add(operation.Fact{Kind: operation.KindProgress, Source: operation.SourceExecutor, Progress: progress})
			g.progressed = true
		case progress != nil:
			g.heldBack = progress
		}
		g.Decision = d
		if p.run != "" {
			out = r.leased(ctx, op, out, p, d, now)
		}
		if d.delivery != nil && d.Next == NextWork {
			// The step is given new signals: a fact says which, so that a step run again is
			// given the same, and the next one those after them.
			if len(out) == 0 {
				out = append(out, operation.Fact{Kind: operation.KindProgress, Source: operation.SourceExecutor, At: now,
					Progress: op.Progress, Lease: op.InFlight(now)})
			}
			out[len(out)-1].Delivery = d.delivery
		}
		return out, g, nil
	})
	if err != nil {
		return handled{}, err
	}
	if g.blocked {
		return handled{}, ErrStepInFlight
	}
	if g.stale {
		req := in.ran()
		outcome := "continue"
		if e.fact != nil {
			outcome = string(e.fact.Kind)
		}
		r.Log.WarnContext(ctx, "step end after a retry", "operation_id", id, "step", req.Step, "attempt", max(req.Attempt, 1),
			"outcome", outcome)
	}
	if g.recorded != nil {
		r.Log.InfoContext(ctx, "recorded", "operation_id", id, "outcome", g.recorded.Kind, "state", op.State,
			"steps", next.Step)
		r.settled(op, g.recorded.Kind, next.Step, g.at)
	}
	return handled{Decision: g.Decision, progressed: g.progressed, heldBack: g.heldBack, op: op, stale: g.stale}, nil
}

// deliver puts in req, the request of the step after step completed, the signals it is
// given, what the wait it ends came to, and the type's callback URLs. It returns the
// delivery to record when it differs from the one op holds (nil: nothing new to record).
func (r *Recorder) deliver(op operation.Operation, req *step.Request, completed int) *operation.Delivery {
	d := operation.Delivery{Step: req.Step, From: op.Undelivered(req.Step), Through: len(op.Signals)}
	switch {
	case op.Awaits() && op.Awaiting.Step == completed:
		d.Awaited, d.TimedOut = op.Awaiting.Signal, !op.Arrived(op.Awaiting.Signal, req.Step)
	case op.Delivery != nil && op.Delivery.Step == req.Step:
		d.Awaited, d.TimedOut = op.Delivery.Awaited, op.Delivery.TimedOut // the same step, run again
	}
	for _, s := range op.Signals[d.From:d.Through] {
		sig := step.Signal{Name: s.Name, Data: s.Data, ReceivedAt: operation.FormatTime(s.At), Via: "api"}
		if s.Source == operation.SourceCallback {
			sig.Via = "callback"
		} else {
			sig.Sender = s.Actor
		}
		req.Signals = append(req.Signals, sig)
	}
	if d.Awaited != "" {
		req.Awaited = &step.Awaited{Signal: d.Awaited, TimedOut: d.TimedOut}
	}
	req.Callbacks = r.callbacks(op)
	if d.From == d.Through && d.Awaited == "" || op.Delivery != nil && *op.Delivery == d {
		return nil
	}
	return &d
}

// callbacks are the callback URLs of op's type's callable signals, by name (nil: none).
func (r *Recorder) callbacks(op operation.Operation) map[string]string {
	typ, ok := r.Registry.Lookup(op.Type)
	if !ok || r.CallbackBase == "" || r.Seals == nil {
		return nil
	}
	var out map[string]string
	for _, s := range typ.Signals {
		if !s.Callback {
			continue
		}
		token, err := callback.Token(r.Seals, op.ID, s.Name)
		if err != nil {
			continue // only a nil sealer fails, and that makes no seals at all
		}
		if out == nil {
			out = map[string]string{}
		}
		out[s.Name] = strings.TrimSuffix(r.CallbackBase, "/") + "/v1/callbacks/" + token
	}
	return out
}

// gated is what one attempt of handle decided besides its facts: the decision for the
// workflow, the outcome recorded (nil: none) at the time it decided, whether another Run
// holds a step in flight (blocked), and whether the step's progress was recorded or held
// back for a later fact.
type gated struct {
	Decision
	recorded *operation.Fact
	at       time.Time
	blocked  bool
	// stale says the step's end came from an attempt an operator had run again: dropped.
	stale      bool
	progressed bool
	heldBack   *operation.Progress
}

// gate decides whether step last.Step+1 may run, and builds its request. It stops the work
// for a cancel, a passed deadline, or a worker that asks for more steps than the type
// allows; each is recorded, and none can hide an effect: no step is in
// flight. rep is the report of the step that asked to continue (nil before the first step
// and after a pause); resumeAt is when the wait in progress ends.
//
// A step offered again after Lambda refused it (again) waits at most until the deadline,
// rather than stopping at once when its wait would end after it: only the deadline itself
// fails work that a quota delayed.
func (r *Recorder) gate(op operation.Operation, last step.Request, rep *step.Report, resumeAt, now time.Time, again bool) (*operation.Fact, Decision) {
	done := Decision{Next: NextDone}
	completed := last.Step
	stop := func(kind operation.Kind, code, title, detail string) (*operation.Fact, Decision) {
		f := operation.Fact{Kind: kind, Source: operation.SourceExecutor}
		if code != "" {
			f.Problem = operation.NewProblem(code, title, detail)
		}
		return &f, done
	}
	ran := func() string {
		if completed == 0 {
			return "no step had run"
		}
		return fmt.Sprintf("%d step(s) had completed and no further step ran", completed)
	}
	typ, ok := r.Registry.Lookup(op.Type)
	if !ok {
		return nil, Decision{} // handle never gates a type it does not serve
	}
	deadline := op.DeadlineAt(r.Leases) // fixed at admission; the lease for older histories
	allowed := deadline.Sub(op.CreatedAt)
	switch {
	case op.CancelRequested:
		return stop(operation.KindCanceled, "", "", "")
	case !now.Before(deadline):
		return stop(operation.KindFailed, "deadline_exceeded", "Deadline exceeded",
			fmt.Sprintf("The operation did not finish within its deadline of %s: %s.", allowed, ran()))
	case completed >= typ.MaxSteps:
		return stop(operation.KindFailed, "max_steps_exceeded", "Too many steps",
			fmt.Sprintf("The worker asked to continue after step %d, but the type allows at most %d steps.", completed, typ.MaxSteps))
	}
	input, err := typ.WithDefaults(op.Input)
	if err != nil {
		input = op.Input
	}
	req := &step.Request{Protocol: step.Protocol, OperationID: op.ID, Type: op.Type, Version: op.TypeVersion,
		Input: input, Step: completed + 1, MaxSteps: typ.MaxSteps, State: last.State,
		Deadline: operation.FormatTime(deadline), StepTimeoutSeconds: int(typ.StepTimeout / time.Second),
		CorrelationID: op.CorrelationID}
	if n := op.Attempt(req.Step); n > 1 {
		req.Attempt = n
	}
	d := Decision{Next: NextWork, StepTimeoutSeconds: req.StepTimeoutSeconds, Request: req}
	if rep != nil && rep.Await != nil && op.Awaits() && op.Awaiting.Step == completed {
		// Decided and recorded by an earlier attempt: the wait is the waker's now.
		d.Next, d.ResumeAt = NextAwait, operation.FormatTime(op.Awaiting.Until)
		return nil, d
	}
	if rep != nil && rep.Await != nil {
		if _, ok := typ.Signal(rep.Await.Signal); !ok {
			// Nobody could ever send it: the API refuses a signal the type does not declare.
			return stop(operation.KindFailed, "undeclared_signal", "Undeclared signal",
				fmt.Sprintf("Step %d asked to wait for the signal %q, which the type %s does not declare.", completed, rep.Await.Signal, op.Type))
		}
	}
	if rep != nil && rep.Await != nil && !op.Arrived(rep.Await.Signal, req.Step) {
		// Wait for the signal with nothing running: at most until the deadline, which then
		// ends the work as it ends any.
		until := now.Add(time.Duration(rep.Await.TimeoutSeconds) * time.Second)
		if until.After(deadline) {
			until = deadline
		}
		d.Next, d.ResumeAt = NextAwait, operation.FormatTime(until)
		return nil, d
	}
	d.delivery = r.deliver(op, req, completed)
	if rep != nil {
		switch {
		case rep.DelaySeconds != nil:
			resumeAt = now.Add(time.Duration(*rep.DelaySeconds) * time.Second)
		case rep.Wait:
			resumeAt = now.Add(typ.StepDelay)
		}
	}
	if again && resumeAt.After(deadline) {
		resumeAt = deadline
	}
	if wait := resumeAt.Sub(now); wait > 0 {
		if !resumeAt.Before(deadline) && !again {
			return stop(operation.KindFailed, "deadline_exceeded", "Deadline exceeded",
				fmt.Sprintf("The worker asked to wait until %s before step %d, past the operation's deadline of %s: %s.",
					operation.FormatTime(resumeAt), req.Step, allowed, ran()))
		}
		d.Next, d.ResumeAt = NextWait, operation.FormatTime(resumeAt)
		d.WaitSeconds = int(min(wait, step.MaxPause).Round(time.Second) / time.Second)
		d.WaitSeconds = max(d.WaitSeconds, 1)
	}
	return nil, d
}

package recorder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/runes"
	"github.com/longrun-dev/longrun/internal/core/step"
	"github.com/longrun-dev/longrun/internal/core/tracelink"
)

// Invoker invokes a worker's function for one step and returns its answer, or how the
// invocation failed (*step.InvokeError); it waits at most timeout, the step's stepTimeout,
// as the workflow's Task state did when it invoked the worker (on AWS the worker's own
// function timeout, the same stepTimeout, usually ends it first: a step_timeout either
// way). internal/aws/lambdainvoke is the one on AWS.
type Invoker interface {
	Invoke(ctx context.Context, function string, payload []byte, timeout time.Duration) ([]byte, error)
}

// Executions starts the operation's next execution when a Run hands the work back: on the
// type's state machine (workflow, the type's worker), or on its resume state machine, which
// waits first (resume). internal/aws/stepfunctions is the one on AWS.
type Executions interface {
	// Ref is the reference the execution called name has, or will have once started.
	Ref(next NextExecution) (string, error)
	// Start starts it with input; one of that name already there is no error when its
	// reference comes back.
	Start(ctx context.Context, next NextExecution, input []byte) (string, error)
	// Running reports whether the execution ref is still running.
	Running(ctx context.Context, ref string) (bool, error)
}

// Call is what the workflow's Run state sends: its state, the function of the type's
// worker, and the task token by which a parked Run answers (none from a workflow that
// waits for the Run's own answer).
type Call struct {
	State  Input  `json:"state"`
	Worker string `json:"worker"`
	Token  string `json:"token,omitempty"`
}

// ProgressEvery is how often a Run records the progress of steps that go on at once: a
// step that completes sooner after the last progress fact leaves its progress to the next
// fact, so fast steps do not cost a write and an event each.
const ProgressEvery = time.Second

// recordReserve is the time a Run keeps, after a step's stepTimeout, to record its end.
const recordReserve = 20 * time.Second

// Serve answers the workflow, and Lambda's delivery of a parked step's end (Deliver): a Run
// call (the state and the worker) runs steps; the state alone is the workflow before Run, which invoked the worker itself between calls (an
// execution started before an upgrade), and is answered as then.
func (r *Recorder) Serve(ctx context.Context, raw json.RawMessage) (Decision, error) {
	if r.Deliveries != nil && r.Seals != nil {
		if d, ok := r.Deliveries(raw); ok {
			return r.Deliver(ctx, d)
		}
	}
	var call Call
	if err := json.Unmarshal(raw, &call); err != nil {
		return Decision{}, err
	}
	if call.Worker == "" {
		// The workflow before Run, which invoked the worker itself between calls, is no
		// longer served: its state says how a step ended, and nothing could tell that
		// state from a made-up one (seals.go).
		return Decision{}, fmt.Errorf("%w: a call with no worker (the workflow before Run) is not served", ErrForged)
	}
	if r.Seals == nil {
		return Decision{}, errors.New("recorder: no seal key: nothing can be told from a forgery")
	}
	if err := checkInput(r.Seals, call.State); err != nil {
		r.refused(ctx, err)
		return Decision{}, err
	}
	return r.Run(ctx, call)
}

// refused logs and counts state the recorder refused as not its own (ErrForged): someone
// with access to longrun's functions or executions tried to act for an operation.
func (r *Recorder) refused(ctx context.Context, err error) {
	r.Log.ErrorContext(ctx, "refused", "error", err.Error())
	r.metric("RefusedStates", "Count", 1)
}

// Run runs the operation's steps: before each it gates (intent, the deadline, maxSteps, as
// Handle does), then invokes the worker and records how the step ended, and goes on to the
// next step itself. It returns to the workflow when the work is done or stopped, when the
// worker asked to wait, or when its invocation (ctx's deadline, and RunBudget) has no room
// for another step's stepTimeout. The first step of a Run always runs: the deployment gives
// the recorder room for the longest step (sizing.RecorderTimeout).
//
// A Run the workflow calls with a task token (call.Token) is parked instead, when the
// recorder has a Sender: it sends each step to the worker asynchronously and returns, so
// that only the worker holds a Lambda slot while the step runs. How the step ended comes
// back in a Delivery (Deliver), which goes on with the same Run: it records the end, gates
// and sends the next step, and answers the workflow through the token once the work is
// done, stopped or handed on (park.go).
//
// Delivery stays at least once: a Run that fails is retried by the workflow from the state
// the workflow holds, so the steps it had run since are run again (the protocol's
// deduplication identity, operation id and step, makes that safe); facts already recorded
// are not recorded twice.
func (r *Recorder) Run(ctx context.Context, call Call) (_ Decision, err error) {
	if call.Token != "" && (r.Sender == nil || r.Callbacks == nil || r.Claims == nil) {
		return Decision{}, errors.New("recorder: a Run with a task token needs a Sender, Callbacks and Claims")
	}
	ctx, span := tracelink.Start(ctx, r.Tracer, "run", call.State.Traceparent, tracelink.AttrOperationID.String(call.State.OperationID))
	rc := runContext{id: call.State.OperationID, worker: call.Worker, self: call.State.self(), run: r.runID(), start: r.Now()}
	if call.Token != "" {
		rc.park = &parked{Token: call.Token, K: rc.self.k, Resume: rc.self.resume,
			Traceparent: call.State.Traceparent, Since: rc.start.UnixMilli()}
	}
	defer func() {
		span.SetAttributes(attribute.Int("longrun.steps", rc.steps))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "run failed")
		}
		span.End()
	}()
	d, err := r.steps(ctx, call.State, &rc, 0)
	return r.answered(ctx, rc, d, err)
}

// runContext is what one Run carries from step to step: the worker's function, the
// execution it runs in, its name for leases, when it began, and, when it is parked, how it
// is resumed.
type runContext struct {
	id     string // the operation's
	worker string
	self   *continuation
	run    string
	start  time.Time
	park   *parked
	// delivered is the step whose end a Delivery brought (0 in a Run the workflow called),
	// until the Run takes it (Claims) to go on with the next step.
	delivered int
	// sync is whether a parked Run invokes its next step synchronously, in its own
	// invocation, which it does when the step before took less than SyncBelow. ran is the
	// number of the last step it invoked synchronously, and claimed the number of the last
	// step whose end it took (Claims).
	sync    bool
	ran     int
	claimed int
	steps   int
	// loaded is the operation as the delivery read it, for the first step's decision.
	loaded *operation.Operation
	// heldBack is the progress the last step came to, held back (pace.heldBack).
	heldBack *operation.Progress
}

// steps runs the operation's steps from in, the ran-th of the Run first, until the work is
// done, stopped or handed on, or, parked, until a step is sent.
func (r *Recorder) steps(ctx context.Context, in Input, rc *runContext, ran int) (Decision, error) {
	lastProgress := rc.start
	for ; ; ran++ {
		// A parked Run writes a fact per step anyway (its lease names the step), so no
		// progress is held back.
		p := pace{quiet: rc.park == nil && r.Now().Sub(lastProgress) < ProgressEvery, self: rc.self, run: rc.run,
			park: rc.park, loaded: rc.loaded, worker: rc.worker, heldBack: rc.heldBack}
		rc.loaded = nil
		if ran > 0 {
			p.fits = func(stepTimeout time.Duration) bool { return r.fits(ctx, rc, stepTimeout) }
		}
		h, err := r.handleRetrying(ctx, in, p)
		if errors.Is(err, ErrStepInFlight) && rc.park != nil && ran == 0 && rc.delivered == 0 {
			// The workflow called this Run again after its first attempt sent a step: read
			// that Run's callback, and take the step over if the lease is still its.
			if p.adopt, err = r.heldParked(ctx, in.OperationID); err == nil && p.adopt != nil {
				h, err = r.handleRetrying(ctx, in, p)
			} else if err == nil {
				err = ErrStepInFlight
			}
		}
		d, progressed := h.Decision, h.progressed
		rc.heldBack = h.heldBack
		if errors.Is(err, ErrStepInFlight) {
			r.Log.WarnContext(ctx, "step in flight elsewhere", "operation_id", in.OperationID)
			return Decision{}, err
		}
		if errors.Is(err, errStale) {
			return Decision{}, err
		}
		if err == nil && h.stale && rc.park != nil {
			// A delivery of an attempt an operator had run again, to the parked Run of the
			// new attempt: nothing for that Run to take or to answer.
			return Decision{}, errStale
		}
		if errors.Is(err, ErrForged) {
			// Never handed on as a step's end: the end came with a function not the type's.
			r.refused(ctx, err)
			return Decision{}, err
		}
		if errors.Is(err, ErrTypeNotServed) {
			r.Log.WarnContext(ctx, "type not served here; left to the reconciler", "operation_id", in.OperationID, "error", err.Error())
		}
		if err != nil {
			if req := in.ran(); req != nil {
				// The step's end is only in this invocation: hand it to the workflow, which
				// ends in Unrecorded with it, for the reconciler.
				r.Log.ErrorContext(ctx, "step end not recorded", "operation_id", req.OperationID, "step", req.Step, "error", err)
				return Decision{Next: NextUnrecorded, Request: req, Task: in.Task, Error: in.Error}.slim(), nil
			}
			return Decision{}, err
		}
		if progressed {
			lastProgress = r.Now()
		}
		switch d.Next {
		case NextParked: // a retried Run took over the step its first attempt sent
			return d, nil
		case NextWait, NextContinue:
			return r.handBack(ctx, in, h, rc)
		case NextWork:
		default:
			return d.slim(), nil
		}
		payload, err := sealedRequest(r.Seals, *d.Request)
		if err != nil {
			return Decision{}, err
		}
		rc.steps++
		next := Input{OperationID: in.OperationID, CorrelationID: in.CorrelationID, Traceparent: in.Traceparent,
			Continuation: in.Continuation, Gate: &Gate{Decision: &d}}
		if rc.park != nil && !rc.sync {
			if ran > 0 && !r.goesOn(ctx, in.OperationID, rc, h.heldBack) {
				return Decision{Next: NextDone}, nil
			}
			if err := r.take(ctx, in.OperationID, rc); err != nil {
				return Decision{}, err
			}
		}
		// Asked again: taking a fast step's end (take) makes the Run invoke this step itself.
		if rc.park != nil && !rc.sync {
			err = r.Sender.Send(ctx, rc.worker, payload)
			if err == nil {
				return Decision{Next: NextParked}, nil
			}
			r.Log.WarnContext(ctx, "step not sent", "operation_id", in.OperationID, "step", d.Request.Step, "error", err.Error())
			next.Error = taskError(err)
		} else {
			began := r.Now()
			out, err := r.Invoker.Invoke(ctx, rc.worker, payload, time.Duration(d.StepTimeoutSeconds)*time.Second)
			if err == nil {
				next.Task = &Task{Report: out}
			} else {
				next.Error = taskError(err)
			}
			if rc.park != nil {
				// A step that took SyncBelow or more sends the Run's next step
				// asynchronously again: its slot is not worth holding twice.
				rc.sync = r.Now().Sub(began) < SyncBelow
				rc.ran = d.Request.Step
			}
		}
		in = next
	}
}

// taskError is an invocation's failure as the workflow's Catch would have put it.
func taskError(err error) *TaskError {
	var ie *step.InvokeError
	if errors.As(err, &ie) {
		return &TaskError{Error: ie.Name, Cause: runes.Cut(ie.Cause, 300)}
	}
	return &TaskError{Error: "Lambda.Unknown", Cause: runes.Cut(err.Error(), 300)}
}

// slim is d as it is handed to Step Functions, whose execution input, task input and task
// output are each limited to 256 KiB: without the operation's input and signals, which the
// gate rebuilds from the operation anyway. A handed-on decision then carries little more than the
// worker's state (step.MaxStateBytes).
func (d Decision) slim() Decision {
	if r := d.Request; r != nil && (r.Input != nil || r.Signals != nil || r.Callbacks != nil || r.Awaited != nil) {
		// The signals and what a wait came to are rebuilt from the operation as well; the
		// callback URLs hold tokens, which never reach an execution's history.
		req := *d.Request
		req.Input, req.Signals, req.Callbacks, req.Awaited = nil, nil, nil, nil
		d.Request = &req
	}
	return d
}

// marshal is JSON without HTML escaping: encoding/json writes each of <, > and & as six
// bytes, which would let an input of & characters grow sixfold past Step Functions' limit.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// running says whether the execution ref a Run runs in still runs: for a parked Run, its
// task token's heartbeat, whose bucket (500/s on AWS) is far larger than DescribeExecution's
// (15/s), which the reconciler needs for its looks.
func (r *Recorder) running(ctx context.Context, ref string, rc *runContext) (bool, error) {
	if rc.park != nil {
		return r.Callbacks.Alive(ctx, rc.park.Token)
	}
	return r.Executions.Running(ctx, ref)
}

// self is the execution in runs in: the first (k = 0), or the k-th after it, on the resume
// state machine when it was handed a wait (the only way onto it).
func (in Input) self() *continuation {
	if in.Continuation == 0 {
		return &continuation{}
	}
	last := in.last()
	return &continuation{k: in.Continuation, resume: last != nil && last.Next == NextWait && in.ran() == nil}
}

// fits says whether a step of stepTimeout, and the recording after it, fit in what is left
// of the invocation (ctx's deadline) and of RunBudget since the Run started. A parked Run
// waits in no invocation for a step it sends: only its budget (ParkBudget) bounds it; one
// it runs synchronously (sync) must fit in the invocation too, or it is sent instead.
func (r *Recorder) fits(ctx context.Context, rc *runContext, stepTimeout time.Duration) bool {
	if rc.park != nil {
		if r.Now().Sub(rc.start) >= r.parkBudget() {
			return false
		}
		if rc.sync {
			deadline, ok := ctx.Deadline()
			rc.sync = !ok || time.Until(deadline) >= stepTimeout+recordReserve
		}
		return true
	}
	if r.RunBudget > 0 && r.Now().Sub(rc.start) >= r.RunBudget {
		return false
	}
	deadline, ok := ctx.Deadline() // the runtime's: wall-clock time
	return !ok || time.Until(deadline) >= stepTimeout+recordReserve
}

// handleRetrying is handle, tried again a few times when the store fails: a step's end
// that cannot be recorded now is lost to the next Run.
func (r *Recorder) handleRetrying(ctx context.Context, in Input, p pace) (handled, error) {
	wait := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		h, err := r.handle(ctx, in, p)
		if err == nil || attempt == 4 || in.ran() == nil || errors.Is(err, ErrStepInFlight) || errors.Is(err, errStale) ||
			errors.Is(err, ErrForged) || errors.Is(err, ErrTypeNotServed) {
			return h, err
		}
		select {
		case <-ctx.Done():
			return h, err
		case <-time.After(wait):
		}
		wait *= 4
	}
}

// handBack goes on with the work in the operation's next execution: after a wait on the
// type's resume state machine, which waits first, else on its own. The next execution is
// named after the operation and a count, and started once whatever the retries: an
// execution of that name already there is the one. It is started before a fact names it,
// so the reconciler never looks for an execution that does not exist yet; a Run that dies
// in between leaves the naming to that execution (claim). One that Step Functions will not
// start is handed to the reconciler in this execution's output (Pending). An execution
// stopped behind the recorder's back goes no further: the reconciler finds it stopped and
// says so.
func (r *Recorder) handBack(ctx context.Context, in Input, h handled, rc *runContext) (Decision, error) {
	run := rc.run
	d, op := h.Decision, h.op
	typ, ok := r.Registry.Lookup(op.Type)
	if !ok || r.Executions == nil {
		return Decision{}, fmt.Errorf("recorder: operation %s cannot go on: no executions of type %q", op.ID, op.Type)
	}
	resume := d.Next == NextWait
	k := in.Continuation + 1
	name := fmt.Sprintf("%s-%d", op.ID, k)
	ref, err := r.Executions.Ref(NextExecution{Workflow: typ.Worker, Resume: resume, Name: name})
	if err != nil {
		return Decision{}, err
	}
	current := op.Execution
	if current == "" && in.Continuation == 0 {
		// The dispatcher's fact can lose the race to the first step's (the execution began
		// before it was recorded), and then names no execution: this is the first one, named
		// after the operation on the type's own state machine.
		if current, err = r.Executions.Ref(NextExecution{Workflow: typ.Worker, Name: op.ID}); err != nil {
			return Decision{}, err
		}
	}
	if current != "" && current != ref {
		running, err := r.running(ctx, current, rc)
		switch {
		case err != nil: // the work goes on: a stop unseen now is the reconciler's to find
			r.Log.WarnContext(ctx, "execution not described", "operation_id", op.ID, "error", err.Error())
		case !running:
			r.Log.WarnContext(ctx, "execution stopped", "operation_id", op.ID, "next", name)
			return Decision{Next: NextDone}, nil
		}
	}
	d = d.slim()
	gate := d // a copy: d may come to hold next (Pending), which must not hold d in turn
	next, err := SealInput(r.Seals, Input{OperationID: op.ID, CorrelationID: in.CorrelationID, Traceparent: in.Traceparent,
		Continuation: k, Gate: &Gate{Decision: &gate}})
	if err != nil {
		return Decision{}, err
	}
	payload, err := marshal(next)
	if err != nil {
		return Decision{}, err
	}
	if started, err := r.Executions.Start(ctx, NextExecution{Workflow: typ.Worker, Resume: resume, Name: name}, payload); err != nil && started == "" {
		// Step Functions refused the start (throttled after the client's retries): every
		// step's end is recorded and nothing is in flight, so this execution ends with the
		// next one's input for the reconciler to start, rather than failing and running its
		// steps again.
		r.Log.WarnContext(ctx, "next execution not started", "operation_id", op.ID, "next", name, "error", err.Error())
		d.Pending = &next
		return d, nil
	}
	superseded := false
	if op.Execution != ref || op.InFlight(r.Now()) != nil {
		var err error
		_, superseded, err = facts.Update(ctx, r.Store, op.ID, func(cur operation.Operation) ([]operation.Fact, bool, error) {
			now := r.Now()
			held := cur.InFlight(now)
			switch {
			case cur.State.Terminal() || cur.State == operation.OutcomeUnknown ||
				cur.Execution != ref && continuationOf(op.ID, cur.Execution) >= k:
				return nil, true, nil // superseded
			case held != nil && held.Run != run:
				// Another Run has a step in flight: naming the next execution now would void
				// its lease. That execution names itself once the step's end is recorded.
				return nil, false, nil
			case cur.Execution == ref && held == nil:
				return nil, false, nil
			}
			// Named, and this Run's lease released: it runs no more steps. A wait says until
			// when, so that nobody looks at the operation before then.
			f := operation.Fact{Kind: operation.KindProgress, Source: operation.SourceExecutor, At: now,
				Progress: cur.Progress, Execution: ref}
			if until, err := time.Parse(operation.TimeFormat, d.ResumeAt); resume && err == nil {
				f.WaitingUntil = &until
			}
			return []operation.Fact{f}, false, nil
		})
		if err != nil {
			// The execution is started and names itself at its first step (claim).
			r.Log.WarnContext(ctx, "next execution not recorded", "operation_id", op.ID, "next", name, "error", err.Error())
		}
	}
	if superseded {
		// Settled meanwhile, or another Run of this execution handed on first: the
		// execution started here finds that at its first step and does nothing.
		return Decision{Next: NextDone}, nil
	}
	d.ContinuedIn = name
	return d, nil
}

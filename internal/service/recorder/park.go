package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/step"
	"github.com/longrun-dev/longrun/internal/core/tracelink"
)

// A parked Run holds no Lambda slot while its step runs. The workflow's Run state waits on a
// task token; the recorder sends the step to the worker asynchronously and returns at once.
// Lambda queues the step (it retries a throttled one itself), runs the worker, and hands how
// it ended to the recorder (the worker's destination: a Delivery). The recorder records the
// end, gates the next step and sends it, and so on, each time in a short invocation of its
// own; when the work is done, stopped or handed on, it answers the token with the decision
// the workflow would have had from a Run that waited. What a later invocation needs to go on
// (the token above all) is kept in the Run's lease, written before its first step is sent
// and lasting as long as the Run may; the state a step carries to the next travels in the
// step's request and report. A delivery takes its step's end (Claims) before the next step
// is sent, so that a delivery twice sends nothing twice, and fast steps cost no fact.

// NextParked is a parked Run's answer to its own invocation: the step is sent, and the
// workflow hears the decision through its task token. The workflow never sees it.
const NextParked = "parked"

// Sender sends a step to a worker's function asynchronously (internal/aws/lambdainvoke on
// AWS). An error is *step.InvokeError: step.ErrNotInvoked when Lambda refused it before
// queueing it; any other may hide a step that will run.
type Sender interface {
	Send(ctx context.Context, function string, payload []byte) error
}

// Claims takes steps' ends for a parked Run, once and in order (dynamo.Store on AWS):
// Claim takes the ends of steps prev+1 to taken in Run run, whose first step was first,
// and records that the Run's next step goes out at sent; it is false for a second take of
// an end (a second delivery) or a step out of the Run's order. last is when the step
// before went out (zero for the Run's first step, or none recorded).
type Claims interface {
	Claim(ctx context.Context, id, run string, first, prev, taken int, sent time.Time) (ok bool, last time.Time, err error)
	// Callback is the callback of the lease fact version took (Operation.LeaseVersion):
	// a store may keep it in that fact only.
	Callback(ctx context.Context, id string, version int) (string, error)
}

// SyncBelow is how short a step must have been for a parked Run to invoke the next one
// synchronously, in its own invocation, as a Run that waits does: below it, the second slot
// is held for less than the cost of a send, a delivery and a claim (each step that goes out
// asynchronously costs an invocation of the recorder and a write; a second slot costs a
// 128 MB recorder $1.67 per million steps per second waited). A slower step sends the
// next one asynchronously again.
const SyncBelow = 500 * time.Millisecond

// Callbacks answers a workflow that waits on a task token (internal/aws/stepfunctions on
// AWS). ErrCallbackGone means the token is no longer waited on.
type Callbacks interface {
	Answer(ctx context.Context, token string, output []byte) error
	// Alive says whether the task still waits on token, and tells it the Run goes on
	// (a heartbeat): false once its execution was stopped or the task gave up.
	Alive(ctx context.Context, token string) (bool, error)
}

// ErrCallbackGone is Callbacks' answer for a token nobody waits on any more: its task timed
// out or was answered, or its execution ended.
var ErrCallbackGone = errors.New("recorder: the task token is no longer waited on")

// Delivery is how a step sent asynchronously ended, as the recorder hears of it (on AWS the
// record Lambda hands the worker's destination, read by lambdainvoke.Destination): the
// request the worker was sent, and its report or how its invocation failed.
type Delivery struct {
	// Function is the worker's function the step was sent to, which the Run's next steps
	// go to as well.
	Function string
	Request  json.RawMessage
	Task     *Task
	Error    *TaskError
}

// DefaultParkBudget is how long a parked Run goes on starting steps before it hands the work
// on to the operation's next execution, when ParkBudget is not set. A parked Run costs
// nothing while it waits, so the bound only keeps an execution's task within the workflow's
// Run timeout (operation.asl.json: ParkBudget, the longest step and its queueing fit in it).
const DefaultParkBudget = time.Hour

// DefaultMaxEventAge is how long Lambda keeps an asynchronous step queued (retrying a
// throttled one) before it gives up, when MaxEventAge is not set: Lambda's own default.
const DefaultMaxEventAge = 6 * time.Hour

func (r *Recorder) parkBudget() time.Duration {
	if r.ParkBudget > 0 {
		return r.ParkBudget
	}
	return DefaultParkBudget
}

func (r *Recorder) maxEventAge() time.Duration {
	if r.MaxEventAge > 0 {
		return r.MaxEventAge
	}
	return DefaultMaxEventAge
}

// parked is what a parked Run keeps in its lease (Lease.Callback), for the invocations that
// hear how its steps ended.
type parked struct {
	Token       string `json:"t"`
	First       int    `json:"f"` // the first step the Run sent
	K           int    `json:"k,omitempty"`
	Resume      bool   `json:"r,omitempty"`
	Traceparent string `json:"p,omitempty"`
	Since       int64  `json:"a"` // when the Run began (its first step went out), in Unix milliseconds
}

// callback is p as a lease keeps it.
func (p parked) callback() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// until is how long a parked Run's lease lasts: while it may start steps (ParkBudget), the
// last one's time in Lambda's queue, the step, and the time to record its end.
func (r *Recorder) until(p parked, stepTimeout time.Duration) time.Time {
	return time.UnixMilli(p.Since).Add(r.parkBudget() + r.maxEventAge() + stepTimeout + recordReserve)
}

// parkedIn reads the parked Run a lease keeps; ok is false for a lease of a Run that waits.
func parkedIn(l *operation.Lease) (p parked, ok bool) {
	if l == nil || l.Callback == "" {
		return parked{}, false
	}
	return p, json.Unmarshal([]byte(l.Callback), &p) == nil && p.Token != ""
}

// parkedOf is the parked Run op's lease is for, its callback read from the fact that took
// the lease when the store's snapshot left it out; ok is false for none.
func (r *Recorder) parkedOf(ctx context.Context, op operation.Operation) (parked, bool, error) {
	if op.Lease == nil {
		return parked{}, false, nil
	}
	l := *op.Lease
	if l.Callback == "" && op.LeaseVersion > 0 {
		cb, err := r.Claims.Callback(ctx, op.ID, op.LeaseVersion)
		if err != nil {
			return parked{}, false, err
		}
		l.Callback = cb
	}
	pk, ok := parkedIn(&l)
	return pk, ok, nil
}

// adopt is the fact by which a Run the workflow called again (its task failed or timed out
// while the step of its first attempt was sent) takes over that step's lease with its own
// token, so that the step's delivery answers the task that now waits. nil when the lease
// in flight is not a parked one of this execution.
func adopt(op operation.Operation, held *operation.Lease, p pace, now time.Time) *operation.Fact {
	if p.park == nil || p.adopt == nil || p.adopt.run != held.Run || held.Execution != p.self.name(op.ID) {
		return nil
	}
	pk := p.adopt.parked
	pk.Token = p.park.Token
	l := *held
	l.Callback = pk.callback()
	return &operation.Fact{Kind: operation.KindProgress, Source: operation.SourceExecutor, At: now, Progress: op.Progress, Lease: &l}
}

// Deliver goes on with the parked Run whose step ended as d says: it records the end and
// goes on as Run does, then answers the workflow's token once the work is done, stopped or
// handed on. It returns the decision it answered with, or NextParked when it sent the next
// step. A delivery that is stale (Lambda delivers at least once; a Run may have given up
// on the step) sends nothing and answers nothing (NextParked too): recording its end again
// changes nothing.
func (r *Recorder) Deliver(ctx context.Context, d Delivery) (Decision, error) {
	parkedOn := Decision{Next: NextParked}
	var req step.Request
	if err := json.Unmarshal(d.Request, &req); err != nil || req.OperationID == "" || req.Step < 1 {
		return Decision{}, fmt.Errorf("recorder: a delivery of no step request: %w", errors.Join(err, errors.New("no operation or step")))
	}
	if err := checkRequest(r.Seals, req); err != nil {
		r.refused(ctx, err)
		return Decision{}, err
	}
	op, err := r.Store.Load(ctx, req.OperationID)
	if err != nil {
		return Decision{}, err
	}
	if typ, ok := r.Registry.Lookup(op.Type); ok && !r.serves(typ.Worker, d.Function) {
		err := fmt.Errorf("%w: a delivery for operation %s of type %s from function %s, not its worker's", ErrForged, op.ID, op.Type, d.Function)
		r.refused(ctx, err)
		return Decision{}, err
	}
	pk, ok, err := r.parkedOf(ctx, op)
	if err != nil {
		return Decision{}, err
	}
	if !ok && op.State == operation.OutcomeUnknown {
		// The step was given up on as unknown; its real end is recorded (handle), and
		// nobody waits for an answer.
		_, err := r.handle(ctx, deliveredInput(op, req, parked{}, d), pace{})
		return parkedOn, err
	}
	if !ok || req.Step < pk.First {
		r.Log.InfoContext(ctx, "stale delivery", "operation_id", op.ID, "step", req.Step, "state", op.State)
		return parkedOn, nil
	}
	ctx, span := tracelink.Start(ctx, r.Tracer, "deliver", pk.Traceparent, tracelink.AttrOperationID.String(op.ID))
	defer span.End()
	rc := runContext{id: op.ID, worker: d.Function, self: &continuation{k: pk.K, resume: pk.Resume}, run: op.Lease.Run,
		start: time.UnixMilli(pk.Since), park: &pk, delivered: req.Step, claimed: req.Step - 1, loaded: &op}
	out, err := r.steps(ctx, deliveredInput(op, req, pk, d), &rc, 1)
	if errors.Is(err, errStale) {
		r.Log.InfoContext(ctx, "stale delivery", "operation_id", op.ID, "step", req.Step)
		return parkedOn, nil
	}
	return r.answered(ctx, rc, out, err)
}

// deliveredInput is the workflow's state as a Run that waited for step req would have held
// it when the step ended as d says.
func deliveredInput(op operation.Operation, req step.Request, pk parked, d Delivery) Input {
	return Input{OperationID: op.ID, CorrelationID: op.CorrelationID, Traceparent: pk.Traceparent, Continuation: pk.K,
		Gate: &Gate{Decision: &Decision{Next: NextWork, StepTimeoutSeconds: req.StepTimeoutSeconds, Request: &req}},
		Task: d.Task, Error: d.Error}
}

// errStale is handle's answer to a stale delivery: it recorded nothing.
var errStale = errors.New("recorder: stale delivery")

// answered is a parked Run's end: the decision d, unless the Run sent a step, goes to the
// workflow through the token. A token nobody waits on is no error: the work went on
// elsewhere (a retried Run took the step over, or the reconciler carries it on).
func (r *Recorder) answered(ctx context.Context, rc runContext, d Decision, err error) (Decision, error) {
	if err != nil || d.Next == NextParked {
		return d, err
	}
	// The execution's output carries the answer to the reconciler, which trusts it only
	// sealed.
	if d, err = SealDecision(r.Seals, rc.id, d); err != nil || rc.park == nil {
		return d, err
	}
	out, err := marshal(d)
	if err != nil {
		return Decision{}, err
	}
	if err := r.Callbacks.Answer(ctx, rc.park.Token, out); err != nil {
		if errors.Is(err, ErrCallbackGone) {
			r.Log.WarnContext(ctx, "answer not waited on", "next", d.Next, "error", err.Error())
			return d, nil
		}
		return Decision{}, err
	}
	return d, nil
}

// goesOn says whether a parked Run may send its next step: its workflow still waits on its
// token. An execution stopped behind the recorder's back goes no further; the Run's lease
// is released, with the progress a quiet step held back (heldBack), so that the reconciler
// finds the execution stopped with nothing in flight and says so at once. An answer that
// does not come (throttled) lets the work go on: a stop unseen now is the reconciler's to
// find.
func (r *Recorder) goesOn(ctx context.Context, id string, rc *runContext, heldBack *operation.Progress) bool {
	alive, err := r.Callbacks.Alive(ctx, rc.park.Token)
	switch {
	case err != nil:
		r.Log.WarnContext(ctx, "workflow not asked", "operation_id", id, "error", err.Error())
		return true
	case alive:
		return true
	}
	r.Log.WarnContext(ctx, "execution stopped", "operation_id", id)
	_, _, err = facts.Update(ctx, r.Store, id, func(op operation.Operation) ([]operation.Fact, struct{}, error) {
		if op.Lease == nil || op.Lease.Run != rc.run || op.State.Terminal() {
			return nil, struct{}{}, nil
		}
		progress := op.Progress
		if heldBack != nil && (progress == nil || progress.CompletedSteps < heldBack.CompletedSteps) {
			progress = heldBack
		}
		return []operation.Fact{{Kind: operation.KindProgress, Source: operation.SourceExecutor, At: r.Now(), Progress: progress}}, struct{}{}, nil
	})
	if err != nil {
		r.Log.WarnContext(ctx, "lease not released", "operation_id", id, "error", err.Error())
	}
	return false
}

// take takes the ends of the steps a parked Run has had since it last took one (the step a
// delivery brought, and those it ran synchronously since) before its next step goes out: a
// second delivery of an end (Lambda delivers at least once) takes nothing and goes no
// further (errStale). A delivered step that took less than SyncBelow since it went out
// makes the Run invoke the next one synchronously. The Run's first step takes nothing.
func (r *Recorder) take(ctx context.Context, id string, rc *runContext) error {
	taken := max(rc.delivered, rc.ran)
	if taken == 0 {
		return nil
	}
	now := r.Now()
	ok, last, err := r.Claims.Claim(ctx, id, rc.run, rc.park.First, rc.claimed, taken, now)
	switch {
	case err != nil:
		return err
	case !ok:
		return errStale
	}
	if rc.delivered > 0 {
		if rc.delivered == rc.park.First || last.IsZero() {
			last = time.UnixMilli(rc.park.Since)
		}
		rc.sync = now.Sub(last) < SyncBelow
	}
	rc.claimed, rc.delivered, rc.ran = taken, 0, 0
	return nil
}

// heldBy is a parked Run that holds the lease a Run the workflow called again may adopt.
type heldBy struct {
	run string
	parked
}

// heldParked is the parked Run holding id's lease, for adopt: read after a Run found a
// step in flight (ErrStepInFlight), so that only that rare path pays the read.
func (r *Recorder) heldParked(ctx context.Context, id string) (*heldBy, error) {
	op, err := r.Store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	pk, ok, err := r.parkedOf(ctx, op)
	if err != nil || !ok {
		return nil, err
	}
	return &heldBy{run: op.Lease.Run, parked: pk}, nil
}

// Package operation is the heart of longrun: the closed set of states, the append-only facts
// an operation accumulates, and the pure fold from facts to state and to the public
// representation. No code writes a state directly; it appends a fact and folds.
package operation

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is the folded state of an operation (api/openapi.yaml, Representation.state; docs/lifecycle.md).
type State string

const (
	Accepted       State = "accepted"
	Dispatched     State = "dispatched"
	Running        State = "running"
	Cancelling     State = "cancelling"
	Succeeded      State = "succeeded"
	Failed         State = "failed"
	Canceled       State = "canceled"
	OutcomeUnknown State = "outcome_unknown"
)

// States lists every state, in lifecycle order (a new slice each call: callers may keep it).
func States() []State {
	return []State{Accepted, Dispatched, Running, Cancelling, Succeeded, Failed, Canceled, OutcomeUnknown}
}

// Terminal reports whether nothing can follow s. outcome_unknown is not terminal: it waits
// for reconciliation or an operator.
func (s State) Terminal() bool {
	return s == Succeeded || s == Failed || s == Canceled
}

// Valid reports whether s is one of the contract's states.
func (s State) Valid() bool {
	return slices.Contains(States(), s)
}

// Kind names what a fact records.
type Kind string

const (
	KindAccepted        Kind = "accepted"         // admission committed the intent
	KindDispatched      Kind = "dispatched"       // an execution was started for it
	KindStarted         Kind = "started"          // the executor began the work
	KindCancelRequested Kind = "cancel_requested" // a client asked to stop
	KindProgress        Kind = "progress"         // a step completed and the work goes on
	KindSucceeded       Kind = "succeeded"
	KindFailed          Kind = "failed"
	KindCanceled        Kind = "canceled"
	KindOutcomeUnknown  Kind = "outcome_unknown" // an effect may have happened; result lost
	KindSignaled        Kind = "signaled"        // a signal arrived from the world (signal.go)
	KindRetried         Kind = "retried"         // an operator had the step of an unknown outcome run again (retry.go)
)

// Source says who recorded a fact. Only executor facts set observedAt.
type Source string

const (
	SourceAdmission  Source = "admission"
	SourceDispatcher Source = "dispatcher"
	SourceExecutor   Source = "executor"
	SourceClient     Source = "client"
	SourceReconciler Source = "reconciler"
	SourceOperator   Source = "operator"
	// SourceCallback is a signal delivered through a callback URL, by a third party that
	// holds the URL and no credentials of its own.
	SourceCallback Source = "callback"
)

// Admission is the payload of the accepted fact: what was asked, by whom, on what.
type Admission struct {
	Type        string          `json:"type"`
	TypeVersion int             `json:"typeVersion"`
	Target      string          `json:"target"`
	Tenant      string          `json:"tenant"`
	Principal   string          `json:"principal"`
	Input       json.RawMessage `json:"input"`
	// QuotaReserved records that admission took one of the tenant's active-operation slots,
	// so the terminal fact gives it back even if the quota setting changed meanwhile.
	QuotaReserved bool `json:"quotaReserved,omitempty"`
	// QuotaShard is which of the tenant's quota counters holds that slot: the store spreads
	// a tenant's admissions over several counters so that they do not all conflict on one.
	QuotaShard int `json:"quotaShard,omitempty"`
	// PrincipalQuotaReserved and PrincipalQuotaShard are the same for the caller's own quota.
	PrincipalQuotaReserved bool `json:"principalQuotaReserved,omitempty"`
	PrincipalQuotaShard    int  `json:"principalQuotaShard,omitempty"`
	// Deadline is when the type's deadline ends for this operation, fixed at admission so
	// that a later change to the type's definition does not move it. After it no step
	// starts, and the reconciler settles work that is still running. Zero in histories
	// written before types had deadlines: Leases.Deadline applies to those.
	Deadline time.Time `json:"deadline,omitzero"`
	// QuotaWeight is how many slots of each quota the operation holds (its type's quota
	// weight when it was admitted; 0 means 1), so the terminal fact frees as many.
	QuotaWeight int `json:"quotaWeight,omitempty"`
	// CorrelationID ties every log line and event about the operation together: the
	// admitting request's W3C trace-id, or its request id. Every writer after admission
	// reads it from here. Empty in histories written before it was recorded.
	CorrelationID string `json:"correlationId,omitempty"`
	// Traceparent is the W3C traceparent of the admission's span, for the dispatcher's span
	// to link to (docs/observability.md#tracing). Empty when tracing was off, and in
	// histories written before it was recorded.
	Traceparent string `json:"traceparent,omitempty"`
}

// Progress is how far the work has come: CompletedSteps is counted by longrun from the
// steps that ended; the rest is what the worker last reported, never invented.
type Progress struct {
	CompletedSteps int      `json:"completedSteps"`
	TotalSteps     int      `json:"totalSteps,omitempty"`
	Percent        *float64 `json:"percent,omitempty"`
	Message        string   `json:"message,omitempty"`
}

// reported says whether the worker said anything in p: a fact written by longrun alone (a
// stop, a failure, a lease) carries only its own count.
func (p Progress) reported() bool {
	return p.TotalSteps != 0 || p.Percent != nil || p.Message != ""
}

// then is the progress once a fact carrying next is recorded after p (nil before any). The
// count is always next's. What the worker said is next's when next says anything, and
// otherwise what it last said before: a worker that failed, or whose last fast steps were
// recorded with the fact that ended the work, has its last totalSteps, percent and message
// kept to the end, not replaced by a bare count.
func (p *Progress) then(next Progress) *Progress {
	if p != nil && !next.reported() {
		next.TotalSteps, next.Percent, next.Message = p.TotalSteps, p.Percent, p.Message
	}
	return &next
}

// Problem is a typed problem attached to a failed or outcome_unknown operation.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// NewProblem builds a Problem whose type URI is derived from its code, as the contract's
// problem types are.
func NewProblem(code, title, detail string) *Problem {
	return &Problem{Type: "https://longrun.dev/problems/" + code, Title: title, Code: code, Detail: detail}
}

// Fact is one append-only record. Version is its 1-based position among the operation's
// facts; it doubles as the operation's version after the fact.
type Fact struct {
	Version int       `json:"version"`
	Kind    Kind      `json:"kind"`
	At      time.Time `json:"at"`
	Source  Source    `json:"source"`
	Actor   string    `json:"actor,omitempty"` // principal of a client or operator fact

	Admission *Admission      `json:"admission,omitempty"` // KindAccepted
	Execution string          `json:"execution,omitempty"` // KindDispatched, or a progress fact of a continuation: internal, never public
	Result    json.RawMessage `json:"result,omitempty"`    // KindSucceeded
	Problem   *Problem        `json:"problem,omitempty"`   // KindFailed, KindOutcomeUnknown
	Reason    string          `json:"reason,omitempty"`    // operator resolution or cancellation note
	Progress  *Progress       `json:"progress,omitempty"`  // KindProgress, and a worker's terminal report
	// Lease says that a step may be in flight from the time of this fact (an executor's
	// fact; none releases it): internal, never public.
	Lease *Lease `json:"lease,omitempty"`
	// WaitingUntil says that the work waits, with nothing in flight, until then (the
	// hand-back of a wait; any later executor fact ends it): internal, never public.
	WaitingUntil *time.Time `json:"waitingUntil,omitempty"`
	// Signal is the signal a signaled fact records.
	Signal *Signal `json:"signal,omitempty"`
	// Awaiting says that the work waits for a signal, with nothing in flight and no
	// execution running (an executor's fact; any later executor fact ends it).
	Awaiting *Awaiting `json:"awaiting,omitempty"`
	// Delivery is which signals the step this fact leases is given (an executor's fact).
	Delivery *Delivery `json:"delivery,omitempty"`
	// Retry is, on an outcome_unknown fact, the step whose outcome is unknown and the state
	// it was given, when whoever recorded it knew them (internal: the state is the
	// worker's); on a retried fact, the step that runs again and its attempt (retry.go).
	Retry *Retry `json:"retry,omitempty"`
}

// Lease marks a step in flight. Run is the recorder invocation that took it (a Run) and
// invokes the steps; Execution is the name of the execution that Run runs in; until Until,
// the Run's own deadline, a step it invoked may still act. The recorder takes a lease,
// with a fact, before it invokes a step and keeps it while it runs the next ones, and any
// executor fact without one releases it (the step's end was recorded, or the work was
// handed on). So nobody records a cancel, a deadline stop or a failure, or carries the work
// on elsewhere, while a step's effect may still land.
//
// Callback, when set, is how the recorder goes on with a Run that sent its step to the
// worker asynchronously and does not wait in an invocation of its own (a parked Run): the
// step's number and the workflow's task token among it. Opaque here, internal, never public.
type Lease struct {
	Run       string    `json:"run"`
	Execution string    `json:"execution"`
	Until     time.Time `json:"until"`
	Callback  string    `json:"callback,omitempty"`
}

// ErrIllegalTransition means a fact cannot follow the operation's current state.
var ErrIllegalTransition = errors.New("illegal transition")

// ErrConflict means another writer appended a fact first; re-read and decide again.
var ErrConflict = errors.New("operation changed since it was read")

// ErrMalformedHistory means stored facts are not a valid history (gaps, no accepted first).
var ErrMalformedHistory = errors.New("malformed fact history")

// transition is the whole state machine: for each state, the facts that may follow and
// the state they lead to. A fact missing here is rejected, never silently applied. (A
// switch, not a map, so that the table cannot be changed at run time.)
func transition(s State, k Kind) (State, bool) {
	switch s {
	case "":
		switch k {
		case KindAccepted:
			return Accepted, true
		}
	case Accepted:
		switch k {
		case KindDispatched:
			return Dispatched, true
		case KindStarted:
			// The execution may report before the dispatcher's own fact commits; a start
			// implies the dispatch, and the dispatcher then finds the work already running.
			return Running, true
		case KindCancelRequested:
			return Cancelling, true
		case KindCanceled:
			return Canceled, true // the work never started
		case KindFailed:
			return Failed, true // e.g. the executor refused the work outright
		case KindSignaled:
			return Accepted, true // kept for the first step
		}
	case Dispatched:
		switch k {
		case KindStarted:
			return Running, true
		case KindCancelRequested:
			return Cancelling, true
		case KindSucceeded:
			return Succeeded, true
		case KindFailed:
			return Failed, true
		case KindCanceled:
			return Canceled, true
		case KindOutcomeUnknown:
			return OutcomeUnknown, true
		case KindSignaled:
			return Dispatched, true
		}
	case Running:
		switch k {
		case KindProgress:
			return Running, true
		case KindSignaled:
			return Running, true
		case KindCancelRequested:
			return Cancelling, true
		case KindSucceeded:
			return Succeeded, true
		case KindFailed:
			return Failed, true
		case KindCanceled:
			return Canceled, true
		case KindOutcomeUnknown:
			return OutcomeUnknown, true
		}
	// Cancellation stops remaining work; it does not roll back work that completed, so a
	// true success or failure that raced the intent is still recorded as what happened.
	// A stale "started" is rejected: intent dominates resume.
	case Cancelling:
		switch k {
		case KindProgress:
			return Cancelling, true // the step in flight when the cancel came completed
		case KindCanceled:
			return Canceled, true
		case KindSucceeded:
			return Succeeded, true
		case KindFailed:
			return Failed, true
		case KindOutcomeUnknown:
			return OutcomeUnknown, true
		}
	// Only reconciliation or an operator settles an unknown outcome; an operator may
	// instead have its step run again, and the work is running once more.
	case OutcomeUnknown:
		switch k {
		case KindSucceeded:
			return Succeeded, true
		case KindFailed:
			return Failed, true
		case KindRetried:
			return Running, true
		}
	}
	return "", false
}

// Next returns the state that fact kind k leads to from state s.
func Next(s State, k Kind) (State, error) {
	next, ok := transition(s, k)
	if !ok {
		from := string(s)
		if from == "" {
			from = "no history"
		}
		return "", fmt.Errorf("%w: %s cannot follow %s", ErrIllegalTransition, k, from)
	}
	return next, nil
}

// Operation is the fold of an operation's facts.
type Operation struct {
	ID string
	Admission
	State           State
	Version         int
	CreatedAt       time.Time
	UpdatedAt       time.Time
	ObservedAt      time.Time // zero until an executor has reported
	CancelRequested bool
	Started         bool // a started fact exists: a step may have begun
	Progress        *Progress
	Result          json.RawMessage
	Problem         *Problem
	Execution       string // internal executor reference; never public
	// Lease is the last executor fact's lease (nil: released); Leased says some fact ever
	// carried one, so that a history from before leases is not read as having nothing in
	// flight.
	Lease  *Lease
	Leased bool
	// LeaseVersion is the version of the fact whose lease carries a callback (a parked
	// Run's): the store's snapshot keeps the callback there only, and Lease.Callback may
	// then be empty (dynamo's Load), to be read from that fact when needed.
	LeaseVersion int
	// WaitingUntil is when the wait the work was handed on to ends (zero: not waiting).
	WaitingUntil time.Time
	// Signals are the signals received, in order; Awaiting is the signal the work waits
	// for (nil: none); Delivery is which of Signals the latest step was given.
	Signals  []Received
	Awaiting *Awaiting
	Delivery *Delivery
	// TimedOut lists the signals a wait for which timed out: their callback URLs are
	// dead (a callback after the wait it was for is refused, 410).
	TimedOut []string
	// Retryable is the step of the latest unknown outcome that an operator may have run
	// again, with the state it was given (nil: not known); Retried is the latest retry
	// (nil: none); Retrying is that retry while no execution has taken it up yet (retry.go).
	Retryable *Retry
	Retried   *Retried
	Retrying  *Retry
}

// Waiting says whether the work waits at now, with nothing in flight, for a wait it was
// handed on to (the resume state machine's pause).
func (o Operation) Waiting(now time.Time) bool {
	return now.Before(o.WaitingUntil) && o.Lease == nil
}

// InFlight is the lease of a step that may be in flight at now: a lease not released, not
// past its time, and taken in the operation's latest execution (a lease of an execution
// the work was handed on from is void: that Run has recorded its steps' ends). nil when no
// step can be in flight.
func (o Operation) InFlight(now time.Time) *Lease {
	l := o.Lease
	if l == nil || !now.Before(l.Until) || l.Execution != o.ExecutionName() {
		return nil
	}
	return l
}

// MayBeInFlight says whether a step may be in flight at now: a lease that holds, or, in a
// history from before leases, any started work (nothing then says that a step ended).
func (o Operation) MayBeInFlight(now time.Time) bool {
	if o.Leased {
		return o.InFlight(now) != nil
	}
	return o.Started
}

// ExecutionName is the name of the operation's latest execution: the one its execution
// reference names, or, before any names one, the first, named after the operation.
func (o Operation) ExecutionName() string {
	if o.Execution == "" {
		return o.ID
	}
	return o.Execution[strings.LastIndex(o.Execution, ":")+1:]
}

// Fold replays facts (in version order) into an Operation.
func Fold(id string, facts []Fact) (Operation, error) {
	op := Operation{ID: id}
	if len(facts) == 0 {
		return op, fmt.Errorf("%w: operation %s has no facts", ErrMalformedHistory, id)
	}
	for _, f := range facts {
		var err error
		if op, err = op.Apply(f); err != nil {
			return op, err
		}
	}
	return op, nil
}

// Apply returns the operation after fact f, or an error when f is not the next version or
// cannot follow the current state. The receiver is not modified.
func (o Operation) Apply(f Fact) (Operation, error) {
	if f.Version != o.Version+1 {
		return o, fmt.Errorf("%w: fact version %d after version %d", ErrMalformedHistory, f.Version, o.Version)
	}
	next, err := Next(o.State, f.Kind)
	if err != nil {
		return o, err
	}
	switch f.Kind {
	case KindAccepted:
		if f.Admission == nil {
			return o, fmt.Errorf("%w: accepted fact without admission", ErrMalformedHistory)
		}
		o.Admission = *f.Admission
		o.CreatedAt = f.At
	case KindStarted:
		o.Started = true
	case KindCancelRequested:
		o.CancelRequested = true
	case KindSucceeded:
		o.Result = f.Result
		o.Problem = nil
	case KindFailed:
		o.Problem = f.Problem
	case KindOutcomeUnknown:
		o.Problem = f.Problem
		o.Retryable = f.Retry
	case KindRetried:
		if f.Retry == nil || f.Retry.Step < 1 || f.Retry.Attempt < 2 {
			return o, fmt.Errorf("%w: retried fact without a step and attempt", ErrMalformedHistory)
		}
		o.Problem, o.Retryable = nil, nil
		o.Retried, o.Retrying = &Retried{Retry: *f.Retry, At: f.At, Reason: f.Reason}, f.Retry
	case KindSignaled:
		if f.Signal == nil {
			return o, fmt.Errorf("%w: signaled fact without a signal", ErrMalformedHistory)
		}
		o.Signals = append(slices.Clip(o.Signals), Received{Signal: *f.Signal, Version: f.Version, At: f.At,
			Source: f.Source, Actor: f.Actor})
	}
	if f.Progress != nil {
		o.Progress = o.Progress.then(*f.Progress)
	}
	if f.Execution != "" { // dispatched, or the execution a Run continued the work in
		o.Execution = f.Execution
	}
	if f.Source == SourceExecutor {
		o.ObservedAt = f.At
		o.Lease = f.Lease
		o.Leased = o.Leased || f.Lease != nil
		o.LeaseVersion = 0
		if f.Lease != nil && f.Lease.Callback != "" {
			o.LeaseVersion = f.Version
		}
		o.WaitingUntil = time.Time{}
		if f.WaitingUntil != nil {
			o.WaitingUntil = *f.WaitingUntil
		}
		o.Awaiting = f.Awaiting
		o.Retrying = nil // an execution took the retry up
		if f.Delivery != nil {
			o.Delivery = f.Delivery
			if d := f.Delivery; d.TimedOut && !slices.Contains(o.TimedOut, d.Awaited) {
				o.TimedOut = append(slices.Clip(o.TimedOut), d.Awaited)
			}
		}
	}
	o.State = next
	o.Version = f.Version
	o.UpdatedAt = f.At
	return o, nil
}

// TimeFormat is how every public timestamp is written: UTC, millisecond precision, so
// strings sort as instants do.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// FormatTime writes t in TimeFormat.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Representation is the public view of an operation (api/openapi.yaml, schema Representation).
// Field order follows the contract.
type Representation struct {
	OperationID     string          `json:"operationId"`
	Type            string          `json:"type"`
	Target          string          `json:"target"`
	State           State           `json:"state"`
	Terminal        bool            `json:"terminal"`
	Version         int             `json:"version"`
	StatusURL       string          `json:"statusUrl"`
	CreatedAt       string          `json:"createdAt"`
	UpdatedAt       string          `json:"updatedAt"`
	ObservedAt      *string         `json:"observedAt"`
	CancelRequested bool            `json:"cancelRequested"`
	Result          json.RawMessage `json:"result,omitempty"`
	Problem         *Problem        `json:"problem,omitempty"`
	Progress        *Progress       `json:"progress,omitempty"`
	// Awaiting is the signal the work waits for, while it waits.
	Awaiting *AwaitingView `json:"awaiting,omitempty"`
	// Retried is the latest retry an operator asked for, once there is one.
	Retried *RetriedView `json:"retried,omitempty"`
}

// Represent builds the public representation; statusURL is the operation's path under the
// base URL the client called.
func (o Operation) Represent(statusURL string) Representation {
	r := Representation{
		OperationID:     o.ID,
		Type:            o.Type,
		Target:          o.Target,
		State:           o.State,
		Terminal:        o.State.Terminal(),
		Version:         o.Version,
		StatusURL:       statusURL,
		CreatedAt:       FormatTime(o.CreatedAt),
		UpdatedAt:       FormatTime(o.UpdatedAt),
		CancelRequested: o.CancelRequested,
		Progress:        o.Progress,
	}
	if !o.ObservedAt.IsZero() {
		s := FormatTime(o.ObservedAt)
		r.ObservedAt = &s
	}
	if rt := o.Retried; rt != nil {
		r.Retried = &RetriedView{Step: rt.Step, Attempt: rt.Attempt, At: FormatTime(rt.At), Reason: rt.Reason}
	}
	if o.Awaits() {
		r.Awaiting = &AwaitingView{Signal: o.Awaiting.Signal, Since: FormatTime(o.Awaiting.Since), Until: FormatTime(o.Awaiting.Until)}
	}
	switch o.State {
	case Succeeded:
		r.Result = o.Result
		if len(r.Result) == 0 {
			r.Result = json.RawMessage(`{}`)
		}
	case Failed, OutcomeUnknown:
		r.Problem = o.Problem
		if r.Problem == nil {
			r.Problem = NewProblem(string(o.State), "Operation "+string(o.State), "No detail was recorded.")
		}
	}
	return r
}

// Leases are how long an operation may stay in a non-terminal state before the reconciler
// looks at it. They are policy, not truth: a look finds out what really happened.
type Leases struct {
	Dispatch time.Duration // accepted, not yet dispatched
	Check    time.Duration // dispatched or running: how often to confirm the execution lives
	// Cancel is how long a cancelling workflow has to stop by itself. It must outlast the
	// step in flight and the recording after it, retries included (stepfunctions.CancelBudget,
	// 10m38s for the workflow as it is; a test holds the default above it).
	Cancel   time.Duration
	Deadline time.Duration // since creation: running longer than this is stuck
}

// DefaultLeases are the production settings.
func DefaultLeases() Leases {
	return Leases{Dispatch: 30 * time.Second, Check: 2 * time.Minute, Cancel: 12 * time.Minute, Deadline: time.Hour}
}

// DueAt is when the reconciler should next look at o; ok is false when there is nothing to
// reconcile (terminal, or outcome_unknown, which waits for an operator).
func (o Operation) DueAt(l Leases) (due time.Time, ok bool) {
	switch o.State {
	case Accepted:
		return o.UpdatedAt.Add(l.Dispatch), true
	case Dispatched, Running:
		if o.Awaits() {
			if o.AwaitAnswered() {
				// The signal came: the dispatcher wakes the work at once; should it not,
				// the reconciler does.
				return o.UpdatedAt.Add(l.Dispatch), true
			}
			return o.Awaiting.Until, true // its timeout, however long
		}
		if o.WaitingUntil.After(o.UpdatedAt) {
			// Waiting: nothing to look at before the wait ends, however long it is.
			return o.WaitingUntil.Add(l.Check), true
		}
		return o.UpdatedAt.Add(l.Check), true
	case Cancelling:
		if o.Waiting(o.UpdatedAt) {
			// A cancel during a wait: nothing is in flight, so the reconciler ends it now
			// rather than after the wait.
			return o.UpdatedAt, true
		}
		return o.UpdatedAt.Add(l.Cancel), true
	}
	return time.Time{}, false
}

// DeadlineAt is when o's deadline ends: the one fixed at admission, or for histories from
// before types had deadlines, Leases.Deadline after creation.
func (o Operation) DeadlineAt(l Leases) time.Time {
	if !o.Deadline.IsZero() {
		return o.Deadline
	}
	return o.CreatedAt.Add(l.Deadline)
}

// PastDeadline reports whether o is still not terminal after its deadline.
func (o Operation) PastDeadline(l Leases, now time.Time) bool {
	return !o.State.Terminal() && now.After(o.DeadlineAt(l))
}

// Unserved decides what becomes of o, not yet settled, when the function looking at it does
// not serve its type: during a rolling update of the types file an older function meets
// operations that a newer one admitted or started, and after a type is removed its
// operations are left. A function that serves the type may still come (the update goes on,
// or is rolled back), and a newer function must not have its work failed by an older one.
// So o is left alone until its deadline and the cancel lease after it, the time in which a
// function that serves the type ends the work by itself, as it ends any work at its deadline.
// Only a cancel with no step in flight is settled before then (canceled): nothing can act
// after it is recorded. After that time the work failed (unsupported_operation_type) when no
// step may be in flight, and its outcome is unknown when one may be (a started history from
// before leases). While a step is leased nothing is decided.
//
// It returns the fact to record (its kind and problem; the caller sets its source and time),
// or, when there is none yet, the time by which to look again.
func (o Operation) Unserved(l Leases, now time.Time) (*Fact, time.Time) {
	switch o.State {
	case Accepted, Dispatched, Running, Cancelling:
	default:
		return nil, time.Time{}
	}
	if lease := o.InFlight(now); lease != nil {
		return nil, lease.Until
	}
	inFlight := o.MayBeInFlight(now)
	if o.State == Cancelling && !inFlight {
		return &Fact{Kind: KindCanceled}, time.Time{}
	}
	deadline := o.DeadlineAt(l)
	if end := deadline.Add(l.Cancel); now.Before(end) {
		return nil, end
	}
	const title = "Operation type not served"
	why := fmt.Sprintf("The type %s is not served by this deployment, and the work did not finish by its deadline (%s)", o.Type, FormatTime(deadline))
	switch {
	case inFlight:
		return &Fact{Kind: KindOutcomeUnknown, Problem: NewProblem("unsupported_operation_type", title,
			why+" while a step may have been in flight; whether it acted is unknown.")}, time.Time{}
	case !o.Started:
		return &Fact{Kind: KindFailed, Problem: NewProblem("unsupported_operation_type", title, why+": no step ran.")}, time.Time{}
	default:
		completed := 0
		if o.Progress != nil {
			completed = o.Progress.CompletedSteps
		}
		return &Fact{Kind: KindFailed, Problem: NewProblem("unsupported_operation_type", title,
			fmt.Sprintf("%s: %d step(s) had completed and none was in flight.", why, completed))}, time.Time{}
	}
}

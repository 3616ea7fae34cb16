// Package dispatch is the outbox consumer: for each newly accepted operation it starts one
// execution named after the operation id, at least once and never twice, and records the
// dispatch as a fact. Cancellation intent that arrived first wins: nothing starts.
package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/logctx"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/core/tracelink"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// Executor runs an operation's workflow. Executions are named after the operation id, which
// makes the name the downstream deduplication identity.
type Executor interface {
	// Start starts workflow's execution called name. It returns ErrAlreadyStarted (with the
	// existing execution's reference) when an execution of that name exists.
	Start(ctx context.Context, workflow, name string, input []byte) (ref string, err error)
	// Stop stops a running execution; stopping a finished one is not an error.
	Stop(ctx context.Context, ref, cause string) error
}

var (
	// ErrAlreadyStarted means an execution with the name exists: the work was dispatched.
	ErrAlreadyStarted = errors.New("execution already started")
	// ErrPermanent marks an executor failure that retrying cannot fix (a missing workflow,
	// rejected input); the record goes to the dead-letter queue instead of blocking the shard.
	ErrPermanent = errors.New("permanent executor failure")
	// ErrThrottled marks an executor call refused for the executor's rate (Step Functions'
	// token buckets, still refused after the client's own retries). Nothing is wrong with the
	// operation and the same call succeeds later: the stream retries the record, and the
	// reconciler makes no more such calls in its run and leaves the operation due for the next.
	ErrThrottled = errors.New("executor throttled")
	// ErrUnknownType marks an accepted operation whose type this dispatcher does not serve,
	// left accepted: a newer function admitted it during a rolling update of the types file,
	// or the type was removed. Nothing is recorded; the reconciler looks at it again later,
	// and fails it only past its deadline (operation.Operation.Unserved).
	ErrUnknownType = errors.New("operation type not served here")
)

// DeadLetter is what the dead-letter queue receives for a record that cannot be processed.
type DeadLetter struct {
	OperationID string `json:"operationId"`
	Reason      string `json:"reason"`
	Source      string `json:"source"`
}

// DeadLetters receives poison records.
type DeadLetters interface {
	Send(ctx context.Context, letter DeadLetter) error
}

// Input is the execution's input: the operation id and the first step. Workers read
// everything else from the facts, the one source of truth.
type Input struct {
	OperationID string `json:"operationId"`
	Step        int    `json:"step"`
	// CorrelationID is the operation's (operation.Admission.CorrelationID), for the
	// execution's history; the recorder reads it from the operation.
	CorrelationID string `json:"correlationId,omitempty"`
	// Traceparent is the W3C traceparent of the dispatcher's span, for the recorder's spans
	// to link to (internal/core/tracelink); absent when tracing is off.
	Traceparent string `json:"traceparent,omitempty"`
}

// Metrics is where the dispatcher counts what it did (the functions give it internal/aws/emf;
// docs/observability.md lists the metrics). dims are name, value pairs.
type Metrics interface {
	Add(name, unit string, value float64, dims ...string)
}

// Dispatcher starts executions for accepted operations. Make one with New.
type Dispatcher struct {
	Store    facts.Store
	Executor Executor
	Registry *optype.Registry
	// Leases give the deadline of operations admitted before types had one, and the cancel
	// lease after a deadline (an operation whose type is not served waits that long); zero
	// is operation.DefaultLeases().
	Leases      operation.Leases
	DeadLetters DeadLetters
	Now         func() time.Time
	Log         *slog.Logger
	// Accepted reads the operation id from a stream record that inserts an accepted fact
	// (the store's item format is the store adapter's business: dynamo.OutboxOperation).
	Accepted func(events.DynamoDBEventRecord) (id string, ok bool)
	// Metrics hears of dispatch lag and dead letters; nil counts nothing (optional).
	Metrics Metrics
	// Tracer starts a span per Dispatch, linked to the admission's; nil traces nothing
	// (optional).
	Tracer trace.Tracer
	// Seals seals the input of an execution that wakes work waiting for a signal
	// (recorder.Wake); nil seals nothing (tests).
	Seals *seal.Sealer
}

func (d *Dispatcher) metric(name, unit string, value float64, dims ...string) {
	if d.Metrics != nil {
		d.Metrics.Add(name, unit, value, dims...)
	}
}

// New checks that every dependency of d is set and returns it ready to use. A dispatcher
// missing one would fail on its first record instead of at start-up.
func New(d Dispatcher) (*Dispatcher, error) {
	var missing []string
	for name, unset := range map[string]bool{
		"Store": d.Store == nil, "Executor": d.Executor == nil, "Registry": d.Registry == nil,
		"DeadLetters": d.DeadLetters == nil, "Now": d.Now == nil, "Log": d.Log == nil, "Accepted": d.Accepted == nil,
	} {
		if unset {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("dispatch: %s not set", strings.Join(missing, ", "))
	}
	if d.Leases == (operation.Leases{}) {
		d.Leases = operation.DefaultLeases()
	}
	return &d, nil
}

// Dispatch makes sure operation id has exactly one execution (or none, when cancellation
// came first) and that the facts say so. Safe to call any number of times.
//
// It acts only on an operation that nothing has moved past accepted: one still accepted
// (start, record dispatched), or one whose cancellation came before anything was dispatched
// or started (record canceled). Anything else (dispatched, started, cancelling after a start,
// settled, outcome_unknown) belongs to the workflow, the recorder, the reconciler or an
// operator, and the call changes nothing: a redelivered record must never cancel or stop
// work that a step may be doing.
//
// An accepted operation of a type the dispatcher does not serve is left accepted, and the
// call returns ErrUnknownType, until its deadline and the cancel lease after it have passed;
// then it is failed (operation.Operation.Unserved).
func (d *Dispatcher) Dispatch(ctx context.Context, id string) (err error) {
	// A link, not a parent: the admission's trace ended long ago, and a stream batch
	// dispatches several operations under one invocation. The link is added once the
	// operation is read (the stream record names only its id).
	ctx, span := tracelink.Start(ctx, d.Tracer, "dispatch", "", tracelink.AttrOperationID.String(id))
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "dispatch failed")
		}
		span.End()
	}()
	op, dec, err := facts.Update(ctx, d.Store, id, func(op operation.Operation) ([]operation.Fact, decision, error) {
		return d.decide(op, "", d.Now())
	})
	if err != nil {
		return err
	}
	logctx.Set(ctx, logctx.Fields{CorrelationID: op.CorrelationID})
	tracelink.AddLink(span, op.Traceparent)
	if dec.wake != "" {
		// The signal a wait was for came: start the execution that ends the wait. Its
		// first step names it the latest; a second start of the same name is no error.
		next, input, err := recorder.Wake(d.Seals, op, dec.wake)
		if err != nil {
			return err
		}
		if _, err := d.Executor.Start(ctx, next.Workflow, next.Name, input); err != nil && !errors.Is(err, ErrAlreadyStarted) {
			return err
		}
		if op.Retrying != nil {
			d.Log.InfoContext(ctx, "retrying", "operation_id", id, "step", op.Retrying.Step, "attempt", op.Retrying.Attempt)
		} else {
			d.Log.InfoContext(ctx, "woken", "operation_id", id, "signal", op.Awaiting.Signal)
		}
		return nil
	}
	started := "" // the execution this call started or found, if any
	if dec.start != "" {
		span.SetAttributes(tracelink.AttrOperationType.String(op.Type))
		input, _ := json.Marshal(Input{OperationID: op.ID, CorrelationID: op.CorrelationID, Traceparent: tracelink.Traceparent(ctx)})
		ref, err := d.Executor.Start(ctx, dec.start, op.ID, input)
		if err != nil && !errors.Is(err, ErrAlreadyStarted) {
			return err
		}
		if ref == "" {
			return fmt.Errorf("dispatch: %s: the executor named no execution", id)
		}
		started = ref
		// Record it, deciding first on the operation as read a moment ago: if another writer
		// (a cancel, the worker's started) got there first, the append loses and the
		// decision is made again on what it wrote.
		op, dec, err = facts.UpdateFrom(ctx, d.Store, id, &op, func(op operation.Operation) ([]operation.Fact, decision, error) {
			return d.decide(op, started, d.Now())
		})
		if err != nil {
			return err
		}
	}
	if dec.dispatched {
		d.metric("DispatchLag", "Milliseconds", float64(max(dec.lag, 0).Milliseconds()), "Type", op.Type)
	}
	if dec.outcome != nil { // no step ran
		for _, m := range operation.OutcomeMeasures(op, dec.outcome.Kind, 0, dec.outcome.At) {
			d.metric(m.Name, m.Unit, m.Value, m.Dims...)
		}
	}
	if dec.unserved {
		return fmt.Errorf("dispatch: %s: %w: %s", id, ErrUnknownType, op.Type)
	}
	// Cancellation won the race after this call started an execution, before any step began:
	// stop it, so the only execution there ever was does no more work. Its worker would find
	// the operation canceled and do nothing anyway; this spares it the wait. An operation
	// that started is never stopped here: its step may be in flight.
	if started != "" && op.State == operation.Canceled && untouched(op) {
		if err := d.Executor.Stop(ctx, started, "canceled before dispatch was recorded"); err != nil {
			d.Log.WarnContext(ctx, "stop after cancel", "operation_id", id, "error", err.Error())
		}
	}
	return nil
}

// decision is what the dispatcher decides on one reading of an operation.
type decision struct {
	// start is the workflow to start the operation's execution on, before anything is
	// recorded ("": none). Dispatch then decides again with the execution's reference.
	start string
	// dispatched says the operation is dispatched by this call (its dispatched fact, or the
	// execution this call started reported first), after waiting lag since its admission.
	dispatched bool
	lag        time.Duration
	// outcome is the terminal fact recorded with no step run (nil: none).
	outcome *operation.Fact
	// unserved says the operation's type is not served here and is left accepted.
	unserved bool
	// wake is the workflow on which to start the execution that ends a wait for a signal
	// that has come, or that runs a retried step ("": none).
	wake string
}

// decide is the dispatcher's decision on op at now, given the execution this call started
// ("" when it started none yet). Cancellation comes first: an operation cancelled before
// anything was dispatched or started is canceled, even when this call started an execution
// meanwhile (Dispatch then stops it). Anything past accepted is not the dispatcher's. An
// accepted operation of a served type gets an execution started, then its dispatched fact;
// one of a type not served here waits for its deadline (operation.Operation.Unserved).
func (d *Dispatcher) decide(op operation.Operation, started string, now time.Time) ([]operation.Fact, decision, error) {
	switch {
	case op.State == operation.Cancelling && untouched(op):
		// Cancellation intent with nothing dispatched or started (a bare cancel_requested;
		// the API itself writes canceled with it): no step ran or can run, so it is over.
		f := d.fact(operation.KindCanceled, "", now)
		return []operation.Fact{f}, decision{outcome: &f}, nil
	case op.AwaitAnswered() || op.Retrying != nil && op.State == operation.Running:
		// The signal a wait was for came, or an operator had a step run again: either way
		// no execution runs, and the one that goes on is started (recorder.Wake).
		if typ, ok := d.Registry.Lookup(op.Type); ok {
			return nil, decision{wake: typ.Worker}, nil
		}
		return nil, decision{}, nil // the reconciler's, once a function serves the type
	case op.State != operation.Accepted:
		if started != "" && op.Started && op.Execution == "" {
			// This call's execution began its work before the dispatched fact was written:
			// nothing to add, but the operation was dispatched, and waited this long for it.
			return nil, decision{dispatched: true, lag: now.Sub(op.CreatedAt)}, nil
		}
		return nil, decision{}, nil // dispatched, running, cancelling, settled: not the dispatcher's
	}
	typ, ok := d.Registry.Lookup(op.Type)
	if !ok {
		// A type this dispatcher does not serve (a newer function admitted it, or it was
		// removed): left accepted for one that serves it, and failed only past its deadline.
		f, _ := op.Unserved(d.Leases, now)
		if f == nil {
			return nil, decision{unserved: true}, nil
		}
		f.At, f.Source = now, operation.SourceDispatcher
		return []operation.Fact{*f}, decision{outcome: f}, nil
	}
	if started == "" {
		return nil, decision{start: typ.Worker}, nil
	}
	f := d.fact(operation.KindDispatched, started, now)
	return []operation.Fact{f}, decision{dispatched: true, lag: now.Sub(op.CreatedAt)}, nil
}

// untouched reports whether no dispatch is recorded and no step ever began on op: then no
// worker can be acting on it, and none will once its cancellation is recorded (a worker
// appends started before any step, and never on a cancel-requested operation).
func untouched(op operation.Operation) bool {
	return op.Execution == "" && !op.Started
}

func (d *Dispatcher) fact(kind operation.Kind, execution string, at time.Time) operation.Fact {
	return operation.Fact{Kind: kind, At: at, Source: operation.SourceDispatcher, Execution: execution}
}

// HandleStream processes a DynamoDB stream batch of accepted facts (the event source
// mapping filters to those). Operations are independent, so the batch's records are
// dispatched concurrently. Transient failures are reported per record so only they are
// retried; poison records go to the dead-letter queue and do not block the shard.
func (d *Dispatcher) HandleStream(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	failed := make([]bool, len(ev.Records))
	var wg sync.WaitGroup
	for i, rec := range ev.Records {
		id, ok := d.Accepted(rec)
		if !ok {
			continue // not an accepted fact: nothing to dispatch
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			failed[i] = !d.handle(ctx, id, rec.Change.SequenceNumber)
		}()
	}
	wg.Wait()
	var resp events.DynamoDBEventResponse
	for i, f := range failed {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: ev.Records[i].Change.SequenceNumber})
		}
	}
	return resp, nil
}

// poison reports whether err is one that retrying the record cannot fix: a permanent
// executor failure, an operation that does not exist, or a stored history that is not a
// legal one (an illegal transition, a gap). Such a record goes to the dead-letter queue, so
// it does not hold up its shard until the mapping gives up on it.
func poison(err error) bool {
	return errors.Is(err, ErrPermanent) || problem.CodeOf(err) == problem.NotFound ||
		errors.Is(err, operation.ErrIllegalTransition) || errors.Is(err, operation.ErrMalformedHistory)
}

// handle dispatches one record's operation and reports whether the record is done with.
func (d *Dispatcher) handle(ctx context.Context, id, sequence string) bool {
	ctx = logctx.With(ctx, logctx.Fields{OperationID: id}) // Dispatch adds the correlation id
	log := d.Log.With("operation_id", id, "sequence", sequence)
	err := d.Dispatch(ctx, id)
	switch {
	case err == nil:
		log.InfoContext(ctx, "dispatched")
		return true
	case poison(err):
		log.ErrorContext(ctx, "poison record", "error", err.Error())
		if dlqErr := d.DeadLetters.Send(ctx, DeadLetter{OperationID: id, Reason: err.Error(), Source: "dispatcher"}); dlqErr != nil {
			log.ErrorContext(ctx, "dead-letter queue", "error", dlqErr.Error())
			return false
		}
		d.metric("DeadLetters", "Count", 1, "Source", "dispatcher")
		return true
	case errors.Is(err, ErrUnknownType):
		// Not poison and not retried: during a rolling update of the types file the stream
		// would redeliver it within seconds, holding up its shard, before the update reaches
		// this function. The reconciler looks at it once it is due (lifecycle.md).
		log.WarnContext(ctx, "type not served here; left accepted for a function that serves it", "error", err.Error())
		return true
	case errors.Is(err, ErrThrottled):
		// Not poison: the operation stays accepted and due. If the mapping's retries run out
		// first, the reconciler dispatches it (docs/capacity.md, "Draining a backlog").
		log.WarnContext(ctx, "dispatch throttled; the record will be retried", "error", err.Error())
		return false
	default:
		log.WarnContext(ctx, "dispatch failed; the record will be retried", "error", err.Error())
		return false
	}
}

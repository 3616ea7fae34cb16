// Package intent records what a client or an operator asks of an existing operation:
// cancellation (a request to stop remaining work, never a rollback) and an operator's
// resolution of an unknown outcome. Each is a fact appended on the version the caller saw.
package intent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Service records intents.
type Service struct {
	Store facts.Store
	Now   func() time.Time
	// Leases give the deadline of operations admitted before types had one (zero: the
	// defaults).
	Leases operation.Leases
}

// Visible decides whether the caller may see an operation; an invisible one is answered as
// missing.
type Visible func(op operation.Operation) bool

// Cancel records cancellation intent on operation id. ifMatch, when not nil, is the
// version the caller last saw; any other current version is version_mismatch. already is
// true when the operation was canceled before this call (the call changed nothing).
//
// An operation whose work never started is canceled at once. A dispatched or running one
// becomes cancelling: its workflow stops at the worker's next intent check (at most one
// step later) and records canceled itself, so no step's result is lost by a stop racing
// it; the reconciler stops an execution that fails to end within the cancel lease.
//
// by is who asks: a client, recorded by its principal, or an operator (who may cancel any
// tenant's operation), recorded as such with its tenant and principal, as a resolution is.
func (s *Service) Cancel(ctx context.Context, id string, by Sender, visible Visible, ifMatch []int) (op operation.Operation, already bool, err error) {
	return facts.Update(ctx, s.Store, id, func(op operation.Operation) ([]operation.Fact, bool, error) {
		return s.cancel(op, by, visible, ifMatch)
	})
}

// cancel decides what a cancel of op by by records, and whether op was canceled before
// (already: the call changes nothing).
func (s *Service) cancel(op operation.Operation, by Sender, visible Visible, ifMatch []int) (out []operation.Fact, already bool, err error) {
	if !visible(op) {
		return nil, false, problem.New(problem.NotFound, "No such operation.")
	}
	if ifMatch != nil && !contains(ifMatch, op.Version) {
		return nil, false, problem.New(problem.VersionMismatch, "The operation is at version %d, not the version in If-Match.", op.Version).
			WithOperation(op.ID)
	}
	now := s.Now()
	source, actor := operation.SourceClient, by.Principal
	if by.Operator {
		source, actor = operation.SourceOperator, by.Tenant+"/"+by.Principal
	}
	request := operation.Fact{Kind: operation.KindCancelRequested, At: now, Source: source, Actor: actor}
	switch {
	case op.State == operation.Canceled:
		return nil, true, nil
	case op.State == operation.Cancelling:
		return nil, false, nil
	case op.State == operation.Succeeded || op.State == operation.Failed:
		return nil, false, problem.New(problem.AlreadyTerminal, "The operation already %s; cancellation cannot undo completed work.", op.State).
			WithOperation(op.ID)
	case op.State == operation.OutcomeUnknown:
		return nil, false, problem.New(problem.AlreadyTerminal, "The operation's work has ended with an unknown outcome; it awaits an operator, and there is nothing left to stop.").
			WithOperation(op.ID)
	case op.State == operation.Accepted || op.Awaits() || op.Retrying != nil:
		// Nothing started, or the work waits for a signal, or for the execution that runs
		// a retried step to take it up, with no step in flight: the intent and its result
		// are one decision (that execution then finds the operation over and does nothing).
		return []operation.Fact{request, {Kind: operation.KindCanceled, At: now, Source: source, Actor: actor}}, false, nil
	default:
		return []operation.Fact{request}, false, nil
	}
}

func contains(versions []int, v int) bool {
	for _, x := range versions {
		if x == v {
			return true
		}
	}
	return false
}

// Resolution is an operator's settlement of an unknown outcome.
type Resolution struct {
	// Outcome is KindSucceeded, KindFailed, or KindRetried: the step whose outcome was
	// unknown runs again (DecideResolve).
	Outcome operation.Kind
	Reason  string
	Result  json.RawMessage    // with KindSucceeded
	Problem *operation.Problem // with KindFailed
	// IfMatch, when not empty, is the versions the operator last saw; any other current
	// version is version_mismatch. Empty but not nil is If-Match: * (any version). A retry
	// requires one (the API refuses one without).
	IfMatch []int
}

// Resolve records an operator's resolution of an outcome_unknown operation (DecideResolve).
func (s *Service) Resolve(ctx context.Context, id, operator string, r Resolution) (operation.Operation, error) {
	op, _, err := facts.Update(ctx, s.Store, id, func(op operation.Operation) ([]operation.Fact, struct{}, error) {
		f, err := DecideResolve(op, operator, r, s.leases(), s.Now())
		if err != nil {
			return nil, struct{}{}, err
		}
		return []operation.Fact{f}, struct{}{}, nil
	})
	return op, err
}

func (s *Service) leases() operation.Leases {
	if s.Leases == (operation.Leases{}) {
		return operation.DefaultLeases()
	}
	return s.Leases
}

// DecideResolve is the fact an operator's resolution r of op records at now. Only an
// unknown outcome needs an operator's word: any other state is already_terminal.
//
// A retry has the step whose outcome was unknown run again, with the same (operation id,
// step) identity and the state that step was given, as attempt n+1: the operation is
// running again, and the gate, the deadline and cancellation apply as to any step. It is
// refused (409) past the deadline, where the step could not start, and when the step or its
// state was not recorded (the execution ended without saying which step was in flight).
func DecideResolve(op operation.Operation, operator string, r Resolution, leases operation.Leases, now time.Time) (operation.Fact, error) {
	if op.State != operation.OutcomeUnknown {
		return operation.Fact{}, problem.New(problem.AlreadyTerminal, "The operation is %s, not outcome_unknown; there is nothing to resolve.", op.State).
			WithOperation(op.ID)
	}
	if len(r.IfMatch) > 0 && !contains(r.IfMatch, op.Version) {
		return operation.Fact{}, problem.New(problem.VersionMismatch, "The operation is at version %d, not the version in If-Match.", op.Version).
			WithOperation(op.ID)
	}
	f := operation.Fact{Kind: r.Outcome, At: now, Source: operation.SourceOperator, Actor: operator, Reason: r.Reason,
		Result: r.Result, Problem: r.Problem}
	switch r.Outcome {
	case operation.KindFailed:
		if f.Problem == nil {
			f.Problem = operation.NewProblem("resolved_failed", "Resolved as failed", r.Reason)
		}
	case operation.KindRetried:
		if !now.Before(op.DeadlineAt(leases)) {
			return operation.Fact{}, problem.New(problem.DeadlinePassed, "The operation's deadline (%s) has passed: a step run again would be stopped before it started. Resolve it as succeeded or failed.",
				operation.FormatTime(op.DeadlineAt(leases))).WithOperation(op.ID)
		}
		at := op.Retryable
		if at == nil || at.Step < 1 {
			return operation.Fact{}, problem.New(problem.NotRetryable, "Which step's outcome is unknown, or the state it was given, was not recorded (its execution ended without saying), so it cannot be run again. Resolve it as succeeded or failed.").
				WithOperation(op.ID)
		}
		f.Retry = &operation.Retry{Step: at.Step, Attempt: op.Attempt(at.Step) + 1, State: at.State}
	}
	return f, nil
}

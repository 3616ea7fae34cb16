package intent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"time"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Sender is who sends a signal: a principal of a tenant, perhaps an operator, or, through
// a callback URL, a third party with no credentials (Callback; then the URL's token has
// already named the operation and the signal).
type Sender struct {
	Tenant, Principal string
	Operator          bool
	Callback          bool
}

// SignalRequest is one delivery of a signal: the operation, the signal's name, its data
// as compact canonical JSON (and the same data decoded, for its schema), who sends it,
// the idempotency key it is sent with, and the versions If-Match allows (nil: any).
type SignalRequest struct {
	ID, Name string
	Data     json.RawMessage
	Decoded  any
	Key      string
	Sender   Sender
	IfMatch  []int
	// At is when it is sent (zero: the service's clock), for a callback's expiry.
	At time.Time
}

// fingerprint is what a retry with the same key must send again: the signal, its data
// and its sender.
func (r SignalRequest) fingerprint() string {
	h := sha256.New()
	for _, part := range []string{r.Name, string(r.Data), r.Sender.Tenant, r.Sender.Principal} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Signal records a signal on an operation of a type in types. replayed is true when the
// same key had already delivered the same signal (the call changed nothing and is answered
// as the first was).
func (s *Service) Signal(ctx context.Context, types *optype.Registry, r SignalRequest) (op operation.Operation, replayed bool, err error) {
	return facts.Update(ctx, s.Store, r.ID, func(op operation.Operation) ([]operation.Fact, bool, error) {
		if r.At.IsZero() {
			r.At = s.Now()
		}
		f, replayed, err := DecideSignal(op, types, r)
		if err != nil || replayed {
			return nil, replayed, err
		}
		f.At = s.Now()
		return []operation.Fact{f}, false, nil
	})
}

// DecideSignal decides what a signal r on op records, in the order a client can act on:
// an operation the sender may not see is missing; a key already used answers as it did (or
// is a conflict when what it sent differs); then the signal must be one op's type
// declares, the sender one its declaration allows, the version the one If-Match names, the
// operation one that can still hear it, and the data what its schema says. Every refusal
// records nothing.
func DecideSignal(op operation.Operation, types *optype.Registry, r SignalRequest) (f operation.Fact, replayed bool, err error) {
	creator := op.Tenant == r.Sender.Tenant && op.Principal == r.Sender.Principal
	if !r.Sender.Callback && !r.Sender.Operator && op.Tenant != r.Sender.Tenant {
		return f, false, problem.New(problem.NotFound, "No such operation.")
	}
	fp := r.fingerprint()
	if prior, ok := op.SignalKeyed(r.Key); ok {
		if prior.Fingerprint != fp || prior.Name != r.Name {
			return f, false, problem.New(problem.IdempotencyKeyReused,
				"This Idempotency-Key was already used with a different signal on this operation.").WithOperation(op.ID)
		}
		return f, true, nil
	}
	typ, _ := types.Lookup(op.Type)
	sig, ok := typ.Signal(r.Name)
	if !ok {
		return f, false, problem.New(problem.UnknownSignal, "Operations of type %s take no signal %q.", op.Type, r.Name).WithOperation(op.ID)
	}
	role := optype.SenderTenant
	switch {
	case r.Sender.Callback:
		if !sig.Callback {
			return f, false, problem.New(problem.Forbidden, "The signal %s cannot be sent through a callback.", r.Name)
		}
	case r.Sender.Operator && !creator:
		role = optype.SenderOperator
	case creator:
		role = optype.SenderCaller
	}
	if !r.Sender.Callback && !allows(sig, role, creator, r.Sender.Operator, op.Tenant == r.Sender.Tenant) {
		why := "The signal %s may not be sent by this principal."
		if sig.NotCreator && creator {
			why = "The signal %s must come from someone other than the principal who created the operation."
		}
		return f, false, problem.New(problem.Forbidden, why, r.Name)
	}
	if r.IfMatch != nil && !contains(r.IfMatch, op.Version) {
		return f, false, problem.New(problem.VersionMismatch, "The operation is at version %d, not the version in If-Match.", op.Version).
			WithOperation(op.ID)
	}
	if r.Sender.Callback {
		// A callback URL lives as long as the work can hear it: until the operation ends,
		// or until a wait for its signal times out. The third party learns nothing more.
		expired := op.State.Terminal() || op.State == operation.Cancelling || op.State == operation.OutcomeUnknown ||
			slices.Contains(op.TimedOut, r.Name) ||
			op.Awaits() && op.Awaiting.Signal == r.Name && !r.At.Before(op.Awaiting.Until)
		if expired {
			return f, false, problem.New(problem.CallbackExpired, "This callback URL has expired.")
		}
	}
	switch {
	case op.State.Terminal():
		return f, false, problem.New(problem.AlreadyTerminal, "The operation already %s; it hears no more signals.", op.State).WithOperation(op.ID)
	case op.State == operation.Cancelling:
		return f, false, problem.New(problem.AlreadyTerminal, "The operation is being canceled; cancellation dominates any later signal.").WithOperation(op.ID)
	case op.State == operation.OutcomeUnknown:
		return f, false, problem.New(problem.AlreadyTerminal, "The operation's work has ended with an unknown outcome; it awaits an operator, and no step will hear the signal.").WithOperation(op.ID)
	}
	if err := sig.Validate(r.Decoded); err != nil {
		return f, false, err
	}
	f = operation.Fact{Kind: operation.KindSignaled, Source: operation.SourceClient, Actor: r.Sender.Principal,
		Signal: &operation.Signal{Name: r.Name, Data: r.Data, Key: r.Key, Fingerprint: fp}}
	switch {
	case r.Sender.Callback:
		f.Source, f.Actor = operation.SourceCallback, ""
	case role == optype.SenderOperator:
		f.Source, f.Actor = operation.SourceOperator, r.Sender.Tenant+"/"+r.Sender.Principal
	}
	return f, false, nil
}

// allows is the declaration's rule for a principal in role; an operator who is also the
// creator, or another principal of the operation's tenant (member), may send what either
// may.
func allows(sig optype.Signal, role optype.Sender, creator, operator, member bool) bool {
	switch {
	case sig.Allows(role, creator):
		return true
	case operator && role != optype.SenderOperator:
		return sig.Allows(optype.SenderOperator, creator)
	case operator && member: // role is operator: not the creator
		return sig.Allows(optype.SenderTenant, creator)
	}
	return false
}

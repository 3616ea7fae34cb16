package client

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"time"
)

// Operation is an operation as the API last described it: the representation's members
// (JSON tags as in the contract's Operation schema, so a representation decodes into it
// with encoding/json) and what the response's headers added.
//
// An Operation from Create is the admission's answer (the Accepted schema): its State is
// accepted, its Version is 0 and UpdatedAt is zero until a poll or a Get has read the whole
// representation. One from Signal is the whole representation after the signal, with the
// key it was sent with and whether the answer was a replay.
type Operation struct {
	// OperationID is the operation's id (`op_` and a ULID).
	OperationID string `json:"operationId"`
	// Type is the operation type's name, e.g. export.orders.
	Type string `json:"type"`
	// Target is the operation's canonical target, derived by its type.
	Target string `json:"target"`
	// State is where the operation is in its lifecycle.
	State State `json:"state"`
	// Terminal is the representation's own `terminal`: true exactly for succeeded, failed
	// and canceled (State.IsTerminal says the same).
	Terminal bool `json:"terminal"`
	// Version increases with every fact; the ETag carries it, and Cancel's If-Match
	// (CancelOptions.IfVersion) sends it back.
	Version int `json:"version"`
	// StatusURL is the operation's path under the API's base URL (a stage prefix or a
	// custom domain's base path included). The Poller follows it.
	StatusURL string `json:"statusUrl"`
	// CreatedAt is when the operation was admitted.
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is when its last fact was appended.
	UpdatedAt time.Time `json:"updatedAt"`
	// ObservedAt is when an executor last reported; nil until one has.
	ObservedAt *time.Time `json:"observedAt"`
	// CancelRequested is true once a cancel was recorded.
	CancelRequested bool `json:"cancelRequested"`
	// Result is the type's result, exactly as the API sent it; only when succeeded.
	// DecodeResult decodes it.
	Result json.RawMessage `json:"result,omitempty"`
	// Problem says why the operation failed, or why its outcome is unknown; only when
	// failed or outcome_unknown.
	Problem *OperationProblem `json:"problem,omitempty"`
	// Progress is how far the work has got; nil until a step has completed.
	Progress *Progress `json:"progress,omitempty"`
	// Awaiting is the signal the work waits for (Client.Signal sends it); nil while it
	// waits for none.
	Awaiting *Awaiting `json:"awaiting,omitempty"`
	// Retried is the latest retry an operator asked for (Resolve with ResolveRetry); nil
	// until there is one.
	Retried *Retried `json:"retried,omitempty"`

	// Location is the Location header of an admission's or a signal's answer (Create and
	// Signal only): where the Poller starts.
	Location string `json:"-"`
	// Replayed is true when the answer was a replay of the key's first response
	// (Idempotent-Replayed: true): this key had already admitted the operation (Create) or
	// delivered the signal (Signal), whether by an earlier call or by a retry of this one
	// whose first answer was lost.
	Replayed bool `json:"-"`
	// IdempotencyKey is the key the admission or the signal carried (Create and Signal
	// only), the caller's or the one the call minted.
	IdempotencyKey string `json:"-"`
	// ETag is the response's ETag, the quoted version (`"5"`), when it had one.
	ETag string `json:"-"`
	// RetryAfter is how long the response asked the client to wait before polling again
	// (Retry-After, present while the operation is not terminal); zero when it did not say.
	RetryAfter time.Duration `json:"-"`
	// RequestID is the response's X-Request-Id.
	RequestID string `json:"-"`
}

// DecodeResult decodes the operation's result into v (a pointer, as for json.Unmarshal).
// It fails when the operation has no result (it has not succeeded).
func (o *Operation) DecodeResult(v any) error {
	if len(o.Result) == 0 {
		return errors.New("longrun: operation " + o.OperationID + " has no result (state " + string(o.State) + ")")
	}
	return json.Unmarshal(o.Result, v)
}

// Err is nil for an operation that succeeded or has not ended yet, and an *OperationError for
// one that ended otherwise: failed, canceled, or outcome_unknown (which only an operator can
// settle). It keeps "the operation ended badly" apart from "the call failed": Get and the
// Poller return a failed operation with a nil error, and Err turns it into one.
func (o *Operation) Err() error {
	switch o.State {
	case StateFailed, StateCanceled, StateOutcomeUnknown:
		return &OperationError{OperationID: o.OperationID, State: o.State, Problem: o.Problem}
	}
	return nil
}

// withHeaders fills in what the response's headers say.
func (o *Operation) withHeaders(h http.Header, now time.Time) {
	o.ETag = h.Get("ETag")
	o.RetryAfter = retryAfter(h, now)
	o.RequestID = h.Get("X-Request-Id")
}

// sameObservation reports whether b says nothing a has not: same state, version,
// cancellation, progress and wait for a signal (the representation changes only with a
// fact, and every fact bumps the version, so this is a representation the caller has
// already seen).
func sameObservation(a, b *Operation) bool {
	return a.State == b.State && a.Version == b.Version && a.Terminal == b.Terminal &&
		a.CancelRequested == b.CancelRequested && reflect.DeepEqual(a.Progress, b.Progress) &&
		reflect.DeepEqual(a.Awaiting, b.Awaiting)
}

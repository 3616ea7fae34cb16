package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/longrun-dev/longrun/client/api"
)

// SignalOptions are Signal's options.
type SignalOptions struct {
	// Key is the Idempotency-Key (1–128 printable ASCII characters). Empty: Signal mints one
	// (NewIdempotencyKey) and returns it in Operation.IdempotencyKey. The operation keeps
	// the keys of the signals it received as long as it lives: a caller that may have to
	// send the signal again after Signal gave up (or after a restart) mints the key itself
	// and keeps it, so the operation hears the signal once.
	Key string
	// IfVersion, when set, is sent as If-Match ("<version>"): the signal is refused with 412
	// version_mismatch when the operation has moved past that version. Pass the Version of
	// the representation the decision to send it was made on.
	IfVersion *int
}

// Signal sends the signal name to operation id (POST /v1/operations/{id}/signals/{name}):
// news from the world (an approval, a webhook's) that the operation's type declares
// (OperationType.Signals) and its worker is given with the next step; a step waiting for it
// (Operation.Awaiting) goes on at once. data is the signal's data, encoded as JSON: it must
// encode to an object that satisfies the signal's Schema; nil sends {}. opts may be nil.
//
// The operation hears a signal once per key: Signal sends the key on every attempt and
// retries a lost answer (*TransportError) and the transient statuses as Create does, and a
// retry of a signal that was recorded is answered as a replay of it (Operation.Replayed),
// even when IfVersion is stale by then. The Operation is the representation after the
// signal, with the key sent (Operation.IdempotencyKey) and its Location.
//
// A refusal records nothing and is a *ProblemError: ErrorCodeUnknownSignal (the type
// declares no such signal), ErrorCodeInvalidInput (the data does not satisfy its schema;
// ProblemError.Fields point into the data), ErrorCodeForbidden (the declaration does not
// allow the caller, or wants someone other than the operation's creator), ErrorCodeNotFound,
// ErrorCodeAlreadyTerminal (the operation has ended, is cancelling or outcome_unknown),
// ErrorCodeIdempotencyKeyReused (the key already delivered another signal, other data, or
// came from another sender), ErrorCodeVersionMismatch (past IfVersion),
// ErrorCodePayloadTooLarge.
func (c *Client) Signal(ctx context.Context, id, name string, data any, opts *SignalOptions) (*Operation, error) {
	switch {
	case id == "":
		return nil, errors.New("longrun: Signal: empty operation id")
	case name == "":
		return nil, errors.New("longrun: Signal: empty signal name")
	}
	if opts == nil {
		opts = &SignalOptions{}
	}
	key := opts.Key
	if key == "" {
		key = NewIdempotencyKey()
	} else if err := checkKey("Signal", key); err != nil {
		return nil, err
	}
	if data == nil {
		data = struct{}{}
	}
	body, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("longrun: Signal: encoding the data: %w", err)
	}
	params := &api.SignalOperationParams{IdempotencyKey: key}
	if opts.IfVersion != nil {
		etag := `"` + strconv.Itoa(*opts.IfVersion) + `"`
		params.IfMatch = &etag
	}
	return c.sendKeyed(ctx, transient, nil, key, body, func() (*http.Request, error) {
		return api.NewSignalOperationRequestWithBody(c.server, id, name, params, "application/json", bytes.NewReader(body))
	})
}

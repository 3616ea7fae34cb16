package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/client/api"
)

// CreateRequest is an admission: an operation of Type with Input, under an idempotency key.
type CreateRequest struct {
	// Type names an operation type the API admits (Types lists them).
	Type string
	// Input is the operation's input, encoded as JSON: it must encode to an object that
	// satisfies the type's inputSchema. nil sends {}.
	Input any
	// Key is the Idempotency-Key (1–128 printable ASCII characters). Empty: Create mints
	// one (NewIdempotencyKey) and returns it in Operation.IdempotencyKey. A caller that may
	// have to retry after Create gave up (or after a restart) mints the key itself and
	// keeps it, so the retry reaches the same operation.
	Key string
}

// CreateOptions are Create's options.
type CreateOptions struct {
	// FirstAttempt is when Key was first sent, by an earlier call or an earlier process;
	// zero means this call's first attempt. Create refuses to send a key whose first
	// attempt is older than RetryOptions.RetryWindow (*RetryWindowError), since the API may
	// have forgotten it.
	FirstAttempt time.Time
}

// Create admits an operation (POST /v1/operations) exactly once per key: it sends the key
// on every attempt, retrying a lost answer (*TransportError: a reset, a dropped response)
// and the transient statuses RetryOptions lists (503 after its Retry-After). A retry whose
// predecessor was in fact admitted is answered as a replay of the first answer, so the
// call ends with one operation, Replayed true. It never retries a real answer: 400, 409
// (idempotency_key_reused, with the key's original OperationID; target_busy), 413, 415,
// and 429 quota_exceeded unless RetryOptions.RetryQuotaExceeded. It refuses to retry once
// the first attempt is older than RetryOptions.RetryWindow (*RetryWindowError,
// ErrRetryWindowPassed). opts may be nil.
//
// The Operation is the admission's answer: state accepted, its StatusURL and Location
// (where a Poller starts: NewPoller, or BeginCreate to do both), the key sent and whether
// the answer was a replay.
func (c *Client) Create(ctx context.Context, req CreateRequest, opts *CreateOptions) (*Operation, error) {
	if req.Type == "" {
		return nil, errors.New("longrun: Create: empty operation type")
	}
	key := req.Key
	if key == "" {
		key = NewIdempotencyKey()
	} else if err := checkKey("Create", key); err != nil {
		return nil, err
	}
	input := req.Input
	if input == nil {
		input = struct{}{}
	}
	body, err := json.Marshal(struct {
		Type  string `json:"type"`
		Input any    `json:"input"`
	}{req.Type, input})
	if err != nil {
		return nil, fmt.Errorf("longrun: Create: encoding the input: %w", err)
	}
	w := &window{key: key}
	if opts != nil {
		w.first = opts.FirstAttempt
	}
	again := retryable(transient)
	if c.retry.RetryQuotaExceeded {
		again = func(err error) bool { return transient(err) || IsCode(err, ErrorCodeQuotaExceeded) }
	}
	params := &api.AdmitOperationParams{IdempotencyKey: key}
	return c.sendKeyed(ctx, again, w, key, body, func() (*http.Request, error) {
		return api.NewAdmitOperationRequestWithBody(c.server, params, "application/json", bytes.NewReader(body))
	})
}

// sendKeyed sends a request made under an Idempotency-Key (an admission, a signal), retried
// as again says within w, and reads its answer: the operation, where it is, whether it was
// a replay, and the key.
func (c *Client) sendKeyed(ctx context.Context, again func(error) bool, w *window, key string, body []byte,
	newRequest func() (*http.Request, error)) (*Operation, error) {
	var op *Operation
	err := c.do(ctx, again, w, func(ctx context.Context) error {
		resp, b, err := c.send(ctx, newRequest, body)
		if err != nil {
			return err
		}
		op, err = c.decodeOperation(resp, b)
		if err != nil {
			return err
		}
		op.Location = resp.Header.Get("Location")
		op.Replayed = strings.EqualFold(resp.Header.Get("Idempotent-Replayed"), "true")
		op.IdempotencyKey = key
		return nil
	})
	if err != nil {
		return nil, err
	}
	return op, nil
}

// BeginCreate is Create followed by NewPoller: the Poller starts at the admission's
// Location.
func (c *Client) BeginCreate(ctx context.Context, req CreateRequest, opts *CreateOptions) (*Poller, error) {
	op, err := c.Create(ctx, req, opts)
	if err != nil {
		return nil, err
	}
	return c.NewPoller(op)
}

// NewIdempotencyKey mints an Idempotency-Key: 122 random bits from crypto/rand, written as
// a version 4 UUID.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// checkKey refuses a key the API would refuse (400 invalid_idempotency_key) before anything
// is sent: one net/http could not even send would otherwise look like a transport failure.
// call names the method, for the error.
func checkKey(call, key string) error {
	if len(key) > 128 {
		return fmt.Errorf("longrun: %s: the Idempotency-Key is %d bytes; at most 128", call, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return fmt.Errorf("longrun: %s: the Idempotency-Key has byte %#x at %d; only printable ASCII (0x20–0x7E)", call, key[i], i)
		}
	}
	return nil
}

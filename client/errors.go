package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/client/api"
)

// ProblemError is an error response of the API: every status of 400 and above. Its Code is
// the problem's machine-readable code (one of the ErrorCode constants, e.g.
// ErrorCodeIdempotencyKeyReused); decide by it, never by the text of Error, which is not
// part of the contract. Reach it with errors.As, or test a code with IsCode.
//
// A response that is not a problem (an intermediary's own error page, API Gateway's
// `{"message": …}` for a request it refused before longrun saw it) is a ProblemError too,
// with its Status, an empty Code and the message, if any, as Detail.
type ProblemError struct {
	// Status is the HTTP status of the response.
	Status int
	// Code is the problem's code; empty when the response was not a longrun problem.
	Code ErrorCode
	// Type is the problem's type URI (https://longrun.dev/problems/<code>).
	Type string
	// Title is a short summary of the problem type, for people.
	Title string
	// Detail explains this occurrence, for people.
	Detail string
	// RequestID is the request's id (the X-Request-Id header), to quote to an operator.
	RequestID string
	// OperationID names the caller's own operation the problem is about, when there is one:
	// the operation the key was first used for (idempotency_key_reused), the one holding the
	// target (target_busy), the one a cancel or a signal was refused for (already_terminal,
	// version_mismatch, unknown_signal).
	OperationID string
	// RetryAfter is the wait the response's Retry-After header asked for (429, 503); zero
	// when it had none.
	RetryAfter time.Duration
	// Fields lists the fields that failed validation (invalid_input).
	Fields []FieldError
}

// Error describes the problem for people (not part of the contract: decide by Code).
func (e *ProblemError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "longrun: %d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	} else if t := http.StatusText(e.Status); t != "" {
		fmt.Fprintf(&b, " %s", t)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	if e.OperationID != "" {
		fmt.Fprintf(&b, " (operation %s)", e.OperationID)
	}
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "; %s: %s", f.Pointer, f.Detail)
	}
	return b.String()
}

// IsCode reports whether err is, or wraps, a *ProblemError with the given code.
func IsCode(err error, code ErrorCode) bool {
	var pe *ProblemError
	return errors.As(err, &pe) && pe.Code == code
}

// TransportError is a call that got no complete response: the connection could not be
// made, was reset, or was closed before the whole response arrived (a request whose
// context ended is one too, wrapping the context's error). Whether the server acted on the
// request is unknown; Create retries it with the same Idempotency-Key, which makes that
// safe.
type TransportError struct {
	// Method and URL are the request's.
	Method, URL string
	// Err is the cause, as net/http reported it.
	Err error
}

// Error describes the failure for people.
func (e *TransportError) Error() string {
	return fmt.Sprintf("longrun: %s %s: %v", e.Method, e.URL, e.Err)
}

// Unwrap returns the cause, so errors.Is(err, context.DeadlineExceeded) and the like work.
func (e *TransportError) Unwrap() error { return e.Err }

// ErrRetryWindowPassed is what a *RetryWindowError is (errors.Is): Create refused to send its
// request again because the first attempt is older than the idempotency window it was told
// (RetryOptions.RetryWindow). The API may have forgotten the key by then, so a retry could
// admit a second operation.
var ErrRetryWindowPassed = errors.New("longrun: the first attempt is older than the idempotency window; a retry could create a second operation")

// RetryWindowError is Create's refusal to retry past the idempotency window. It is
// ErrRetryWindowPassed (errors.Is) and wraps the failure it would have retried (errors.As
// reaches that *TransportError or *ProblemError), which leaves whether the operation was
// admitted unknown: look for it (List) before creating it again under a new key.
type RetryWindowError struct {
	// Key is the Idempotency-Key every attempt carried.
	Key string
	// FirstAttempt is when the key was first sent (CreateOptions.FirstAttempt, or the first
	// attempt of this call).
	FirstAttempt time.Time
	// Window is the window the client knew (RetryOptions.RetryWindow).
	Window time.Duration
	// Last is the failure that would have been retried; nil when the refusal came before
	// this call sent anything (CreateOptions.FirstAttempt already too old).
	Last error
}

// Error describes the refusal for people.
func (e *RetryWindowError) Error() string {
	msg := fmt.Sprintf("longrun: not retrying Idempotency-Key %q: first sent %s, more than the %s idempotency window ago; a retry could create a second operation",
		e.Key, e.FirstAttempt.UTC().Format(time.RFC3339), e.Window)
	if e.Last != nil {
		msg += ": last attempt: " + e.Last.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrRetryWindowPassed) true.
func (e *RetryWindowError) Is(target error) bool { return target == ErrRetryWindowPassed }

// Unwrap returns the failure that would have been retried.
func (e *RetryWindowError) Unwrap() error { return e.Last }

// OperationError is an operation that ended without succeeding, as Operation.Err reports it:
// the call that read it succeeded, the operation did not. State is failed, canceled or
// outcome_unknown; Problem says why (nil for canceled).
type OperationError struct {
	OperationID string
	State       State
	Problem     *OperationProblem
}

// Error describes the outcome for people.
func (e *OperationError) Error() string {
	msg := fmt.Sprintf("longrun: operation %s %s", e.OperationID, e.State)
	if e.Problem != nil {
		msg += ": " + e.Problem.Code
		if e.Problem.Detail != "" {
			msg += ": " + e.Problem.Detail
		}
	}
	return msg
}

// problemFrom turns an error response into a *ProblemError. now is the client's clock, for a
// Retry-After given as a date.
func problemFrom(resp *http.Response, body []byte, now time.Time) *ProblemError {
	pe := &ProblemError{
		Status:     resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: retryAfter(resp.Header, now),
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/problem+json" && mt != "application/json" {
		pe.Detail = snippet(body)
		return pe
	}
	var p struct {
		api.Problem
		Message string `json:"message"` // API Gateway's own errors
	}
	if err := json.Unmarshal(body, &p); err != nil {
		pe.Detail = snippet(body)
		return pe
	}
	pe.Code, pe.Type, pe.Title, pe.Detail = ErrorCode(p.Code), p.Type, p.Title, p.Detail
	if pe.Detail == "" {
		pe.Detail = p.Message
	}
	if p.OperationID != nil {
		pe.OperationID = *p.OperationID
	}
	if p.Errors != nil {
		for _, f := range *p.Errors {
			pe.Fields = append(pe.Fields, FieldError{Pointer: f.Pointer, Detail: f.Detail})
		}
	}
	if pe.RequestID == "" {
		pe.RequestID = p.RequestID
	}
	return pe
}

// snippet is the start of a body that is not a problem, for Detail.
func snippet(body []byte) string {
	const max = 200
	s := strings.TrimSpace(string(body))
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Package problem is longrun's one error type. Every error a client can see carries one of
// the contract's machine codes; the HTTP layer maps codes to statuses in one place.
package problem

import (
	"errors"
	"fmt"
	"time"
)

// Code is a machine-readable error code of the contract (api/openapi.yaml, schema
// Problem). Clients decide by code.
type Code string

const (
	InvalidInput             Code = "invalid_input"
	InvalidIdempotencyKey    Code = "invalid_idempotency_key"
	UnsupportedOperationType Code = "unsupported_operation_type"
	UnknownSignal            Code = "unknown_signal"
	Unauthenticated          Code = "unauthenticated"
	Forbidden                Code = "forbidden"
	NotFound                 Code = "not_found"
	IdempotencyKeyReused     Code = "idempotency_key_reused"
	TargetBusy               Code = "target_busy"
	AlreadyTerminal          Code = "already_terminal"
	CallbackExpired          Code = "callback_expired"
	DeadlinePassed           Code = "deadline_passed"
	NotRetryable             Code = "not_retryable"
	VersionMismatch          Code = "version_mismatch"
	PayloadTooLarge          Code = "payload_too_large"
	UnsupportedMediaType     Code = "unsupported_media_type"
	MethodNotAllowed         Code = "method_not_allowed"
	QuotaExceeded            Code = "quota_exceeded"
	Unavailable              Code = "unavailable"
	Internal                 Code = "internal"
)

// Codes lists every code of the contract (a new slice each call).
func Codes() []Code {
	return []Code{InvalidInput, InvalidIdempotencyKey, UnsupportedOperationType, UnknownSignal, Unauthenticated, Forbidden,
		NotFound, IdempotencyKeyReused, TargetBusy, AlreadyTerminal, CallbackExpired, DeadlinePassed, NotRetryable, VersionMismatch, PayloadTooLarge,
		UnsupportedMediaType, MethodNotAllowed, QuotaExceeded, Unavailable, Internal}
}

// FieldError names one invalid part of a request by JSON pointer (RFC 6901).
type FieldError struct {
	Pointer string `json:"pointer"`
	Detail  string `json:"detail"`
}

// Error is an error with a contract code. Detail is safe to show to a client; the wrapped
// cause is for logs only.
type Error struct {
	Code        Code
	Detail      string
	Fields      []FieldError
	OperationID string
	RetryAfter  time.Duration
	cause       error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Detail, e.cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Detail)
}

func (e *Error) Unwrap() error { return e.cause }

// New returns an Error with a client-safe detail.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error whose cause is kept for logs but never shown to clients.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...), cause: cause}
}

// Invalid returns an invalid_input Error listing the offending fields.
func Invalid(fields ...FieldError) *Error {
	detail := "The request is invalid."
	if len(fields) == 1 {
		detail = fields[0].Detail
	}
	return &Error{Code: InvalidInput, Detail: detail, Fields: fields}
}

// WithRetryAfter sets the delay a client should wait before retrying.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	e.RetryAfter = d
	return e
}

// WithOperation names the operation the error is about.
func (e *Error) WithOperation(id string) *Error {
	e.OperationID = id
	return e
}

// As returns the Error in err's chain, or an internal Error that hides err's text.
func As(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return Wrap(Internal, err, "An internal error occurred.")
}

// CodeOf returns the contract code of err (Internal for foreign errors).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return As(err).Code
}

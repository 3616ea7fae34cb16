package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// describe is the one place a contract code becomes an HTTP status, with its title. (A
// switch, not a map, so the table cannot change at run time.)
func describe(code problem.Code) (status int, title string) {
	switch code {
	case problem.InvalidInput:
		return http.StatusBadRequest, "Invalid input"
	case problem.InvalidIdempotencyKey:
		return http.StatusBadRequest, "Invalid Idempotency-Key"
	case problem.UnsupportedOperationType:
		return http.StatusBadRequest, "Unsupported operation type"
	case problem.UnknownSignal:
		return http.StatusBadRequest, "Unknown signal"
	case problem.Unauthenticated:
		return http.StatusUnauthorized, "Unauthenticated"
	case problem.Forbidden:
		return http.StatusForbidden, "Forbidden"
	case problem.NotFound:
		return http.StatusNotFound, "Not found"
	case problem.IdempotencyKeyReused:
		return http.StatusConflict, "Idempotency-Key reused"
	case problem.TargetBusy:
		return http.StatusConflict, "Target busy"
	case problem.AlreadyTerminal:
		return http.StatusConflict, "Already terminal"
	case problem.CallbackExpired:
		return http.StatusGone, "Callback expired"
	case problem.DeadlinePassed:
		return http.StatusConflict, "Deadline passed"
	case problem.NotRetryable:
		return http.StatusConflict, "Not retryable"
	case problem.VersionMismatch:
		return http.StatusPreconditionFailed, "Version mismatch"
	case problem.PayloadTooLarge:
		return http.StatusRequestEntityTooLarge, "Payload too large"
	case problem.UnsupportedMediaType:
		return http.StatusUnsupportedMediaType, "Unsupported media type"
	case problem.MethodNotAllowed:
		return http.StatusMethodNotAllowed, "Method not allowed"
	case problem.QuotaExceeded:
		return http.StatusTooManyRequests, "Quota exceeded"
	case problem.Unavailable:
		return http.StatusServiceUnavailable, "Service unavailable"
	case problem.Internal:
		return http.StatusInternalServerError, "Internal error"
	}
	return 0, ""
}

// StatusOf returns the HTTP status for a code (500 for anything unknown).
func StatusOf(code problem.Code) int {
	if s, _ := describe(code); s != 0 {
		return s
	}
	return http.StatusInternalServerError
}

// TitleOf returns a code's title ("" for anything unknown).
func TitleOf(code problem.Code) string {
	_, t := describe(code)
	return t
}

// body is the application/problem+json document (api/openapi.yaml, schema Problem).
type body struct {
	Type        string               `json:"type"`
	Title       string               `json:"title"`
	Status      int                  `json:"status"`
	Code        problem.Code         `json:"code"`
	Detail      string               `json:"detail"`
	RequestID   string               `json:"requestId"`
	OperationID string               `json:"operationId,omitempty"`
	Errors      []problem.FieldError `json:"errors,omitempty"`
}

// mustRetryAfter tells the statuses whose clients must be told when to come back.
func mustRetryAfter(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// MaxFieldErrors bounds the field errors a problem lists.
const MaxFieldErrors = 20

// problemResponse renders err. Internal errors never show their cause.
func problemResponse(err error, requestID string) response {
	pe := problem.As(err)
	status := StatusOf(pe.Code)
	detail := pe.Detail
	if pe.Code == problem.Internal {
		detail = "An internal error occurred. Quote the requestId when reporting it."
	}
	fields := pe.Fields
	if len(fields) > MaxFieldErrors {
		// A body can hold thousands of bad fields; the answer stays small.
		detail += fmt.Sprintf(" (the first %d of %d field errors)", MaxFieldErrors, len(fields))
		fields = fields[:MaxFieldErrors]
	}
	b, _ := json.Marshal(body{
		Type: "https://longrun.dev/problems/" + string(pe.Code), Title: TitleOf(pe.Code), Status: status,
		Code: pe.Code, Detail: detail, RequestID: requestID, OperationID: pe.OperationID, Errors: fields,
	})
	r := response{status: status, body: b, header: http.Header{"Content-Type": {"application/problem+json"}}}
	if pe.RetryAfter > 0 || mustRetryAfter(status) {
		r.header.Set("Retry-After", retryAfter(pe.RetryAfter))
	}
	var ae *allowError
	if errors.As(err, &ae) {
		r.header.Set("Allow", strings.Join(ae.allow, ", "))
	}
	return r
}

// MaxRetryAfter bounds every Retry-After the API sends (api/openapi.yaml, RetryAfter).
const MaxRetryAfter = time.Hour

// retryAfter writes whole seconds, at least one and at most MaxRetryAfter's.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(int(math.Min(MaxRetryAfter.Seconds(), math.Max(1, math.Ceil(d.Seconds())))))
}

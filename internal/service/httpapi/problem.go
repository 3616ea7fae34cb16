package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// statuses is the one place a contract code becomes an HTTP status.
var statuses = map[problem.Code]int{
	problem.InvalidInput:             http.StatusBadRequest,
	problem.InvalidIdempotencyKey:    http.StatusBadRequest,
	problem.UnsupportedOperationType: http.StatusBadRequest,
	problem.Unauthenticated:          http.StatusUnauthorized,
	problem.Forbidden:                http.StatusForbidden,
	problem.NotFound:                 http.StatusNotFound,
	problem.IdempotencyKeyReused:     http.StatusConflict,
	problem.TargetBusy:               http.StatusConflict,
	problem.AlreadyTerminal:          http.StatusConflict,
	problem.VersionMismatch:          http.StatusPreconditionFailed,
	problem.PayloadTooLarge:          http.StatusRequestEntityTooLarge,
	problem.QuotaExceeded:            http.StatusTooManyRequests,
	problem.Unavailable:              http.StatusServiceUnavailable,
	problem.Internal:                 http.StatusInternalServerError,
}

var titles = map[problem.Code]string{
	problem.InvalidInput:             "Invalid input",
	problem.InvalidIdempotencyKey:    "Invalid Idempotency-Key",
	problem.UnsupportedOperationType: "Unsupported operation type",
	problem.Unauthenticated:          "Unauthenticated",
	problem.Forbidden:                "Forbidden",
	problem.NotFound:                 "Not found",
	problem.IdempotencyKeyReused:     "Idempotency-Key reused",
	problem.TargetBusy:               "Target busy",
	problem.AlreadyTerminal:          "Already terminal",
	problem.VersionMismatch:          "Version mismatch",
	problem.PayloadTooLarge:          "Payload too large",
	problem.QuotaExceeded:            "Quota exceeded",
	problem.Unavailable:              "Service unavailable",
	problem.Internal:                 "Internal error",
}

// StatusOf returns the HTTP status for a code (500 for anything unknown).
func StatusOf(code problem.Code) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// body is the application/problem+json document (CONTRACT.md, "Problem body").
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

// mustRetryAfter lists the statuses whose clients must be told when to come back.
var mustRetryAfter = map[int]bool{http.StatusTooManyRequests: true, http.StatusServiceUnavailable: true}

// problemResponse renders err. Internal errors never show their cause.
func problemResponse(err error, requestID string) response {
	pe := problem.As(err)
	status := StatusOf(pe.Code)
	detail := pe.Detail
	if pe.Code == problem.Internal {
		detail = "An internal error occurred. Quote the requestId when reporting it."
	}
	b, _ := json.Marshal(body{
		Type: "https://longrun.dev/problems/" + string(pe.Code), Title: titles[pe.Code], Status: status,
		Code: pe.Code, Detail: detail, RequestID: requestID, OperationID: pe.OperationID, Errors: pe.Fields,
	})
	r := response{status: status, body: b, header: http.Header{"Content-Type": {"application/problem+json"}}}
	if pe.RetryAfter > 0 || mustRetryAfter[status] {
		r.header.Set("Retry-After", retryAfter(pe.RetryAfter))
	}
	return r
}

// retryAfter writes whole seconds, at least one.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(int(math.Max(1, math.Ceil(d.Seconds()))))
}

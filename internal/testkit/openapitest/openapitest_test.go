package openapitest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/longrun-dev/longrun/api"
)

const (
	opID      = "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3"
	statusURL = "/v1/operations/" + opID
	requestID = "req-1"
)

var (
	validatorOnce sync.Once
	validator     *Validator
	validatorErr  error
)

func newValidator(t *testing.T) *Validator {
	t.Helper()
	validatorOnce.Do(func() { validator, validatorErr = New(context.Background()) })
	if validatorErr != nil {
		t.Fatalf("New: %v", validatorErr)
	}
	return validator
}

// obj is a JSON object under test; with and without derive variants of it.
type obj map[string]any

func (o obj) with(kv ...any) obj {
	c := obj{}
	for k, v := range o {
		c[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	return c
}

func (o obj) without(keys ...string) obj {
	c := o.with()
	for _, k := range keys {
		delete(c, k)
	}
	return c
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func hdrWithout(h http.Header, keys ...string) http.Header {
	c := h.Clone()
	for _, k := range keys {
		c.Del(k)
	}
	return c
}

func hdrWith(h http.Header, kv ...string) http.Header {
	c := h.Clone()
	for i := 0; i < len(kv); i += 2 {
		c.Set(kv[i], kv[i+1])
	}
	return c
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	admissionBody = `{"type":"export.orders","input":{"from":"2026-09-01","to":"2026-09-23"}}`

	accepted = obj{
		"operationId": opID,
		"type":        "export.orders",
		"target":      "orders:2026-09-01..2026-09-23",
		"state":       "accepted",
		"statusUrl":   statusURL,
		"createdAt":   "2026-11-30T10:00:00Z",
	}
	acceptedHeader = hdr(
		"Content-Type", "application/json",
		"Location", statusURL,
		"Retry-After", "1",
		"X-Request-Id", requestID,
	)

	running = obj{
		"operationId":     opID,
		"type":            "demo.task",
		"target":          "demo:invoice-42",
		"state":           "running",
		"terminal":        false,
		"version":         3,
		"statusUrl":       statusURL,
		"createdAt":       "2026-11-30T10:00:00Z",
		"updatedAt":       "2026-11-30T10:00:02Z",
		"observedAt":      "2026-11-30T10:00:02Z",
		"cancelRequested": false,
	}
	runningHeader = hdr(
		"Content-Type", "application/json",
		"ETag", `"3"`,
		"Cache-Control", "no-store",
		"Retry-After", "1",
		"X-Request-Id", requestID,
	)
	succeeded = running.with(
		"state", "succeeded", "terminal", true, "version", 5,
		"result", map[string]any{"rowCount": 1234, "sha256": "abc"},
	)
	succeededHeader = hdr(
		"Content-Type", "application/json",
		"ETag", `"5"`,
		"Cache-Control", "no-store",
		"X-Request-Id", requestID,
	)

	conflict = obj{
		"type":        "https://longrun.dev/problems/target_busy",
		"title":       "Target busy",
		"status":      409,
		"code":        "target_busy",
		"detail":      "Another active operation holds this target.",
		"requestId":   requestID,
		"operationId": opID,
	}
	problemHeader = hdr(
		"Content-Type", "application/problem+json",
		"X-Request-Id", requestID,
	)
	unavailable = obj{
		"type":      "https://longrun.dev/problems/unavailable",
		"title":     "Unavailable",
		"status":    503,
		"code":      "unavailable",
		"detail":    "Try again.",
		"requestId": requestID,
	}
	notAllowed = obj{
		"type":      "https://longrun.dev/problems/method_not_allowed",
		"title":     "Method not allowed",
		"status":    405,
		"code":      "method_not_allowed",
		"detail":    "DELETE is not a method of /v1/operations; it has GET, POST.",
		"requestId": requestID,
	}
	unsupportedMediaType = obj{
		"type":      "https://longrun.dev/problems/unsupported_media_type",
		"title":     "Unsupported media type",
		"status":    415,
		"code":      "unsupported_media_type",
		"detail":    `charset "utf-16" is not supported: the body must be UTF-8.`,
		"requestId": requestID,
	}
	exportOrders = obj{
		"name":        "export.orders",
		"version":     1,
		"description": "Exports the caller's orders for a date range.",
		"inputSchema": map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": []any{"from", "to"},
			"properties": map[string]any{"from": map[string]any{"type": "string", "format": "date"}},
		},
		"deadlineSeconds": 3600,
	}
	typeHeader = hdr(
		"Content-Type", "application/json",
		"Cache-Control", "no-store",
		"X-Request-Id", requestID,
	)
	progress  = map[string]any{"completedSteps": 2, "totalSteps": 3, "percent": 66.7, "message": "Rendered page 2 of 3."}
	keyReused = conflict.with("type", "https://longrun.dev/problems/idempotency_key_reused",
		"title", "Idempotency-Key reused", "code", "idempotency_key_reused",
		"detail", "This Idempotency-Key was already used with a different request.")
	awaiting = running.with("awaiting", map[string]any{"signal": "approval", "since": "2026-11-30T10:00:02Z", "until": "2026-11-30T10:10:02Z"})

	unknownSignal = obj{
		"type":        "https://longrun.dev/problems/unknown_signal",
		"title":       "Unknown signal",
		"status":      400,
		"code":        "unknown_signal",
		"detail":      `Operations of type demo.task take no signal "aproval".`,
		"requestId":   requestID,
		"operationId": opID,
	}
	invalidInput = obj{
		"type":      "https://longrun.dev/problems/invalid_input",
		"title":     "Invalid input",
		"status":    400,
		"code":      "invalid_input",
		"detail":    "The request body failed validation.",
		"requestId": requestID,
		"errors":    []any{map[string]any{"pointer": "/input/from", "detail": "must be a date"}},
	}
)

type exchange struct {
	name    string
	method  string
	target  string
	reqBody string
	status  int
	header  http.Header
	body    any // obj, or a raw string
	wantErr string
}

func (x exchange) run(t *testing.T, v *Validator) {
	t.Helper()
	req := httptest.NewRequest(x.method, x.target, strings.NewReader(x.reqBody))
	err := v.ValidateResponse(context.Background(), req, []byte(x.reqBody), x.status, x.header, mustJSON(t, x.body))
	switch {
	case x.wantErr == "" && err != nil:
		t.Errorf("want valid, got: %v", err)
	case x.wantErr != "" && err == nil:
		t.Errorf("want an error containing %q, got none", x.wantErr)
	case x.wantErr != "" && !strings.Contains(err.Error(), x.wantErr):
		t.Errorf("want an error containing %q, got: %v", x.wantErr, err)
	default:
		if err != nil {
			t.Logf("rejected as expected: %v", err)
		}
	}
}

const (
	admit  = "/v1/operations"
	getOne = "/v1/operations/" + opID
	cancel = "/v1/operations/" + opID + "/cancel"
	signal = "/v1/operations/" + opID + "/signals/approval"
)

func TestValidateResponse(t *testing.T) {
	v := newValidator(t)
	tests := []exchange{
		// Signals.
		{name: "202 signal", method: "POST", target: signal, reqBody: `{"approved":true}`,
			status: 202, header: hdrWith(runningHeader, "Location", statusURL), body: awaiting},
		{name: "202 signal replayed after the end", method: "POST", target: signal, reqBody: `{"approved":true}`,
			status: 202, header: hdrWith(succeededHeader, "Location", statusURL, "Idempotent-Replayed", "true"), body: succeeded},
		{name: "202 signal Location not statusUrl", method: "POST", target: signal, reqBody: `{"approved":true}`,
			status: 202, header: hdrWith(runningHeader, "Location", "/v1/operations/op_01JDY3Q4W5E6R7T8Y9V0A1B2C4"), body: awaiting,
			wantErr: "differs from statusUrl"},
		{name: "202 signal without Location", method: "POST", target: signal, reqBody: `{"approved":true}`,
			status: 202, header: runningHeader, body: awaiting,
			wantErr: `response header "Location" missing`},
		{name: "202 awaiting while cancelling", method: "POST", target: signal, reqBody: `{"approved":true}`,
			status: 202, header: hdrWith(runningHeader, "Location", statusURL), body: awaiting.with("state", "cancelling", "cancelRequested", true),
			wantErr: "doesn't match schema"},
		{name: "202 awaiting without until", method: "POST", target: signal, reqBody: `{"approved":true}`,
			status: 202, header: hdrWith(runningHeader, "Location", statusURL),
			body:    awaiting.with("awaiting", map[string]any{"signal": "approval", "since": "2026-11-30T10:00:02Z"}),
			wantErr: "doesn't match schema"},
		{name: "400 unknown signal", method: "POST", target: signal, reqBody: `{"approved":true}`,
			status: 400, header: problemHeader, body: unknownSignal},
		{name: "400 unknown signal on admission", method: "POST", target: admit, reqBody: admissionBody,
			status: 400, header: problemHeader, body: unknownSignal,
			wantErr: "doesn't match schema"},
		{name: "409 signal after the end", method: "POST", target: signal, reqBody: `{"approved":true}`,
			status: 409, header: problemHeader, body: conflict.with("code", "already_terminal", "type", "https://longrun.dev/problems/already_terminal", "title", "Already terminal")},
		{name: "409 target busy on a signal", method: "POST", target: signal, reqBody: `{"approved":true}`,
			status: 409, header: problemHeader, body: conflict,
			wantErr: "doesn't match schema"},

		// Admission.
		{name: "202 admission", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: acceptedHeader, body: accepted},
		{name: "202 replay", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: hdrWith(acceptedHeader, "Idempotent-Replayed", "true"), body: accepted},
		{name: "202 replay header not true", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: hdrWith(acceptedHeader, "Idempotent-Replayed", "yes"), body: accepted,
			wantErr: `"Idempotent-Replayed"`},
		{name: "202 without Location", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: hdrWithout(acceptedHeader, "Location"), body: accepted,
			wantErr: `response header "Location" missing`},
		{name: "202 without Retry-After", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: hdrWithout(acceptedHeader, "Retry-After"), body: accepted,
			wantErr: `response header "Retry-After" missing`},
		{name: "202 without X-Request-Id", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: hdrWithout(acceptedHeader, "X-Request-Id"), body: accepted,
			wantErr: `response header "X-Request-Id" missing`},
		{name: "202 Retry-After not an integer", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: hdrWith(acceptedHeader, "Retry-After", "soon"), body: accepted,
			wantErr: `"Retry-After"`},
		{name: "202 Location not statusUrl", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: hdrWith(acceptedHeader, "Location", "/v1/operations/op_01JDY3Q4W5E6R7T8Y9V0A1B2C4"), body: accepted,
			wantErr: "differs from statusUrl"},
		{name: "202 extra body field", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: acceptedHeader, body: accepted.with("executionArn", "arn:aws:states:..."),
			wantErr: "executionArn"},
		{name: "202 missing createdAt", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: acceptedHeader, body: accepted.without("createdAt"),
			wantErr: "createdAt"},
		{name: "202 state not accepted", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: acceptedHeader, body: accepted.with("state", "running"),
			wantErr: "doesn't match schema"},
		{name: "202 malformed operationId", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: acceptedHeader, body: accepted.with("operationId", "op_01JDY3Q4W5E6R7T8Y9U0I1O2P3"),
			wantErr: "doesn't match schema"},
		{name: "202 served as text/plain", method: "POST", target: admit, reqBody: admissionBody,
			status: 202, header: hdrWith(acceptedHeader, "Content-Type", "text/plain"), body: accepted,
			wantErr: "Content-Type"},
		{name: "200 for an accepted operation", method: "POST", target: admit, reqBody: admissionBody,
			status: 200, header: acceptedHeader, body: accepted,
			wantErr: "status 200 is not declared"},
		{name: "400 invalid input", method: "POST", target: admit, reqBody: `{"type":"export.orders","input":{"from":"x"}}`,
			status: 400, header: problemHeader, body: invalidInput},
		{name: "400 bad pointer", method: "POST", target: admit, reqBody: `{}`,
			status: 400, header: problemHeader,
			body:    invalidInput.with("errors", []any{map[string]any{"pointer": "input.from", "detail": "bad"}}),
			wantErr: "doesn't match schema"},
		{name: "409 target busy", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: problemHeader, body: conflict},
		{name: "409 unknown code", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: problemHeader,
			body:    conflict.with("code", "conflict", "type", "https://longrun.dev/problems/conflict"),
			wantErr: "doesn't match schema"},
		{name: "409 code of another route", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: problemHeader,
			body:    conflict.with("code", "already_terminal", "type", "https://longrun.dev/problems/already_terminal"),
			wantErr: "doesn't match schema"},
		{name: "409 type does not match code", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: problemHeader,
			body:    conflict.with("type", "https://longrun.dev/problems/idempotency_key_reused"),
			wantErr: "doesn't match schema"},
		{name: "409 body status differs", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: problemHeader, body: conflict.with("status", 400),
			wantErr: "doesn't match schema"},
		{name: "409 requestId differs from header", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: problemHeader, body: conflict.with("requestId", "other"),
			wantErr: "differs from X-Request-Id"},
		{name: "409 problem served as application/json", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: hdrWith(problemHeader, "Content-Type", "application/json"), body: conflict,
			wantErr: "Content-Type"},
		{name: "409 problem with charset", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: hdrWith(problemHeader, "Content-Type", "application/problem+json; charset=utf-8"), body: conflict},
		{name: "418 status", method: "POST", target: admit, reqBody: admissionBody,
			status: 418, header: problemHeader, body: conflict.with("status", 418),
			wantErr: "status 418 is not declared"},
		{name: "307 status", method: "POST", target: admit, reqBody: admissionBody,
			status: 307, header: hdr("Location", "/elsewhere", "X-Request-Id", requestID), body: "",
			wantErr: "status 307 is not declared"},
		{name: "429 with Retry-After", method: "POST", target: admit, reqBody: admissionBody,
			status: 429, header: hdrWith(problemHeader, "Retry-After", "30"),
			body: unavailable.with("code", "quota_exceeded", "status", 429, "type", "https://longrun.dev/problems/quota_exceeded")},
		{name: "429 without Retry-After", method: "POST", target: admit, reqBody: admissionBody,
			status: 429, header: problemHeader,
			body:    unavailable.with("code", "quota_exceeded", "status", 429, "type", "https://longrun.dev/problems/quota_exceeded"),
			wantErr: `response header "Retry-After" missing`},
		{name: "503 without Retry-After", method: "POST", target: admit, reqBody: admissionBody,
			status: 503, header: problemHeader, body: unavailable,
			wantErr: `response header "Retry-After" missing`},
		{name: "503 with Retry-After", method: "GET", target: getOne,
			status: 503, header: hdrWith(problemHeader, "Retry-After", "2"), body: unavailable},
		{name: "401 without credentials (request not judged)", method: "POST", target: admit, reqBody: "not json",
			status: 401, header: problemHeader,
			body: unavailable.with("code", "unauthenticated", "status", 401, "type", "https://longrun.dev/problems/unauthenticated")},

		// Representation.
		{name: "200 running", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running},
		{name: "200 accepted observedAt null", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("state", "accepted", "observedAt", nil)},
		{name: "200 observedAt 5", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("observedAt", 5),
			wantErr: "doesn't match schema"},
		{name: "200 observedAt not a date-time", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("observedAt", "yesterday"),
			wantErr: "doesn't match schema"},
		{name: "200 observedAt missing", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.without("observedAt"),
			wantErr: "doesn't match schema"},
		{name: "200 unknown state", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("state", "pending"),
			wantErr: "doesn't match schema"},
		{name: "200 succeeded", method: "GET", target: getOne,
			status: 200, header: succeededHeader, body: succeeded},
		{name: "200 succeeded but not terminal", method: "GET", target: getOne,
			status: 200, header: hdrWith(succeededHeader, "Retry-After", "1"), body: succeeded.with("terminal", false),
			wantErr: "doesn't match schema"},
		{name: "200 result while running", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("result", map[string]any{}),
			wantErr: "doesn't match schema"},
		{name: "200 failed with problem", method: "GET", target: getOne,
			status: 200, header: hdrWith(succeededHeader, "ETag", `"4"`),
			body: running.with("state", "failed", "terminal", true, "version", 4, "problem", map[string]any{
				"type": "https://longrun.dev/problems/demo_failed", "title": "Failed", "code": "demo_failed", "detail": "as asked",
			})},
		{name: "200 problem with relative type", method: "GET", target: getOne,
			status: 200, header: runningHeader,
			body: running.with("state", "outcome_unknown", "problem", map[string]any{
				"type": "demo_failed", "title": "Unknown", "code": "lost", "detail": "lost",
			}),
			wantErr: "doesn't match schema"},
		{name: "200 without ETag", method: "GET", target: getOne,
			status: 200, header: hdrWithout(runningHeader, "ETag"), body: running,
			wantErr: `response header "ETag" missing`},
		{name: "200 ETag unquoted", method: "GET", target: getOne,
			status: 200, header: hdrWith(runningHeader, "ETag", "3"), body: running,
			wantErr: `"ETag"`},
		{name: "200 ETag not the version", method: "GET", target: getOne,
			status: 200, header: hdrWith(runningHeader, "ETag", `"2"`), body: running,
			wantErr: "is not the quoted version"},
		{name: "200 Cache-Control not no-store", method: "GET", target: getOne,
			status: 200, header: hdrWith(runningHeader, "Cache-Control", "max-age=60"), body: running,
			wantErr: `"Cache-Control"`},
		{name: "200 running without Retry-After", method: "GET", target: getOne,
			status: 200, header: hdrWithout(runningHeader, "Retry-After"), body: running,
			wantErr: "Retry-After is missing"},
		{name: "200 terminal with Retry-After", method: "GET", target: getOne,
			status: 200, header: hdrWith(succeededHeader, "Retry-After", "1"), body: succeeded,
			wantErr: "Retry-After is set on a terminal"},
		{name: "200 another operation", method: "GET", target: "/v1/operations/op_01JDY3Q4W5E6R7T8Y9V0A1B2C4",
			status: 200, header: runningHeader, body: running,
			wantErr: "differs from the one in the path"},
		{name: "404", method: "GET", target: getOne,
			status: 404, header: problemHeader,
			body: unavailable.with("code", "not_found", "status", 404, "type", "https://longrun.dev/problems/not_found")},
		{name: "GET 400 undeclared", method: "GET", target: getOne,
			status: 400, header: problemHeader, body: invalidInput,
			wantErr: "status 400 is not declared"},

		// Progress.
		{name: "200 running with progress", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("progress", progress)},
		{name: "200 progress of completed steps only", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("progress", map[string]any{"completedSteps": 0})},
		{name: "200 progress without completedSteps", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("progress", map[string]any{"totalSteps": 3}),
			wantErr: "doesn't match schema"},
		{name: "200 progress over 100 percent", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("progress", map[string]any{"completedSteps": 1, "percent": 100.5}),
			wantErr: "doesn't match schema"},
		{name: "200 progress of no steps in all", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("progress", map[string]any{"completedSteps": 0, "totalSteps": 0}),
			wantErr: "doesn't match schema"},
		{name: "200 progress message too long", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("progress", map[string]any{"completedSteps": 1, "message": strings.Repeat("m", 201)}),
			wantErr: "doesn't match schema"},
		{name: "200 progress with another member", method: "GET", target: getOne,
			status: 200, header: runningHeader, body: running.with("progress", map[string]any{"completedSteps": 1, "eta": "soon"}),
			wantErr: "eta"},

		// Operation types.
		{name: "200 operation types", method: "GET", target: "/v1/operation-types",
			status: 200, header: typeHeader, body: obj{"items": []any{exportOrders, exportOrders.with("name", "demo.task")}}},
		{name: "200 no operation types", method: "GET", target: "/v1/operation-types",
			status: 200, header: typeHeader, body: obj{"items": []any{}}},
		{name: "200 operation types without items", method: "GET", target: "/v1/operation-types",
			status: 200, header: typeHeader, body: obj{},
			wantErr: "items"},
		{name: "200 operation type", method: "GET", target: "/v1/operation-types/export.orders",
			status: 200, header: typeHeader, body: exportOrders},
		{name: "200 operation type without Cache-Control", method: "GET", target: "/v1/operation-types/export.orders",
			status: 200, header: hdrWithout(typeHeader, "Cache-Control"), body: exportOrders,
			wantErr: `response header "Cache-Control" missing`},
		{name: "200 operation type with another member", method: "GET", target: "/v1/operation-types/export.orders",
			status: 200, header: typeHeader, body: exportOrders.with("worker", "export-orders"),
			wantErr: "worker"},
		{name: "200 operation type without inputSchema", method: "GET", target: "/v1/operation-types/export.orders",
			status: 200, header: typeHeader, body: exportOrders.without("inputSchema"),
			wantErr: "inputSchema"},
		{name: "200 inputSchema as a string", method: "GET", target: "/v1/operation-types/export.orders",
			status: 200, header: typeHeader, body: exportOrders.with("inputSchema", `{"type":"object"}`),
			wantErr: "doesn't match schema"},
		{name: "200 deadline as a duration", method: "GET", target: "/v1/operation-types/export.orders",
			status: 200, header: typeHeader, body: exportOrders.with("deadlineSeconds", "1h"),
			wantErr: "doesn't match schema"},
		{name: "200 deadline in fractions", method: "GET", target: "/v1/operation-types/export.orders",
			status: 200, header: typeHeader, body: exportOrders.with("deadlineSeconds", 1.5),
			wantErr: "doesn't match schema"},
		{name: "404 operation type", method: "GET", target: "/v1/operation-types/no.such.type",
			status: 404, header: problemHeader,
			body: unavailable.with("code", "not_found", "status", 404, "type", "https://longrun.dev/problems/not_found")},
		{name: "404 operation types undeclared", method: "GET", target: "/v1/operation-types",
			status: 404, header: problemHeader,
			body:    unavailable.with("code", "not_found", "status", 404, "type", "https://longrun.dev/problems/not_found"),
			wantErr: "status 404 is not declared"},
		{name: "405 on operation types", method: "POST", target: "/v1/operation-types",
			status: 405, header: hdrWith(problemHeader, "Allow", "GET"), body: notAllowed},
		{name: "405 on an operation type", method: "DELETE", target: "/v1/operation-types/export.orders",
			status: 405, header: hdrWith(problemHeader, "Allow", "GET"), body: notAllowed},
		{name: "405 on an operation type allowing POST", method: "DELETE", target: "/v1/operation-types/export.orders",
			status: 405, header: hdrWith(problemHeader, "Allow", "GET, POST"), body: notAllowed,
			wantErr: "is not the path's methods"},

		// Cancel, list, resolve.
		{name: "cancel 202 cancelling", method: "POST", target: cancel,
			status: 202, header: runningHeader, body: running.with("state", "cancelling", "cancelRequested", true)},
		{name: "cancel 200 canceled", method: "POST", target: cancel,
			status: 200, header: hdrWithout(runningHeader, "Retry-After"),
			body: running.with("state", "canceled", "terminal", true, "cancelRequested", true)},
		{name: "cancel 412", method: "POST", target: cancel,
			status: 412, header: problemHeader,
			body: unavailable.with("code", "version_mismatch", "status", 412, "type", "https://longrun.dev/problems/version_mismatch")},
		{name: "list", method: "GET", target: "/v1/operations?limit=2&state=running",
			status: 200, header: hdr("Content-Type", "application/json", "X-Request-Id", requestID),
			body: obj{"items": []any{running, succeeded}, "nextCursor": "abc"}},
		{name: "list last page", method: "GET", target: "/v1/operations",
			status: 200, header: hdr("Content-Type", "application/json", "X-Request-Id", requestID),
			body: obj{"items": []any{}, "nextCursor": nil}},
		{name: "list bad item", method: "GET", target: "/v1/operations",
			status: 200, header: hdr("Content-Type", "application/json", "X-Request-Id", requestID),
			body:    obj{"items": []any{running.without("version")}, "nextCursor": nil},
			wantErr: "doesn't match schema"},
		{name: "resolve 403", method: "POST", target: "/v1/operations/" + opID + "/resolve", reqBody: `{"outcome":"failed","reason":"x"}`,
			status: 403, header: problemHeader,
			body: unavailable.with("code", "forbidden", "status", 403, "type", "https://longrun.dev/problems/forbidden")},

		// Routing.
		{name: "unknown route", method: "GET", target: "/v2/operations",
			status: 200, header: runningHeader, body: running, wantErr: "no route"},
		{name: "unknown method answered 204", method: "DELETE", target: getOne,
			status: 204, header: hdr("X-Request-Id", requestID), body: "", wantErr: "must be answered with 405"},
		{name: "unknown method answered 404", method: "DELETE", target: admit,
			status: 404, header: problemHeader,
			body:    unavailable.with("code", "not_found", "status", 404, "type", "https://longrun.dev/problems/not_found"),
			wantErr: "must be answered with 405"},
		{name: "405 with Allow", method: "DELETE", target: admit,
			status: 405, header: hdrWith(problemHeader, "Allow", "GET, POST"), body: notAllowed},
		{name: "405 Allow in another order", method: "PUT", target: admit,
			status: 405, header: hdrWith(problemHeader, "Allow", "POST, GET"), body: notAllowed},
		{name: "405 on an operation's path", method: "PATCH", target: getOne,
			status: 405, header: hdrWith(problemHeader, "Allow", "GET"), body: notAllowed},
		{name: "405 HEAD on cancel", method: "HEAD", target: cancel,
			status: 405, header: hdrWith(problemHeader, "Allow", "POST"), body: notAllowed},
		{name: "405 without Allow", method: "DELETE", target: admit,
			status: 405, header: problemHeader, body: notAllowed,
			wantErr: "is not the path's methods"},
		{name: "405 Allow not the path's methods", method: "DELETE", target: admit,
			status: 405, header: hdrWith(problemHeader, "Allow", "GET"), body: notAllowed,
			wantErr: "is not the path's methods"},
		{name: "405 Allow malformed", method: "DELETE", target: getOne,
			status: 405, header: hdrWith(problemHeader, "Allow", "GET;"), body: notAllowed,
			wantErr: "is not the path's methods"},
		{name: "405 with another code", method: "DELETE", target: admit,
			status: 405, header: hdrWith(problemHeader, "Allow", "GET, POST"),
			body:    notAllowed.with("code", "not_found", "type", "https://longrun.dev/problems/not_found"),
			wantErr: "doesn't match schema"},
		{name: "405 for a declared method", method: "GET", target: getOne,
			status: 405, header: hdrWith(problemHeader, "Allow", "GET"), body: notAllowed,
			wantErr: "405 answers only methods the path does not declare"},
		{name: "401 for an unknown method", method: "DELETE", target: admit,
			status: 401, header: problemHeader,
			body: unavailable.with("code", "unauthenticated", "status", 401, "type", "https://longrun.dev/problems/unauthenticated")},
		{name: "405 on an unknown path", method: "DELETE", target: "/v1/things",
			status: 405, header: hdrWith(problemHeader, "Allow", "GET"), body: notAllowed,
			wantErr: "no route"},

		// Media types and key reuse.
		{name: "415 admission", method: "POST", target: admit, reqBody: admissionBody,
			status: 415, header: problemHeader, body: unsupportedMediaType},
		{name: "415 resolve", method: "POST", target: "/v1/operations/" + opID + "/resolve", reqBody: `{}`,
			status: 415, header: problemHeader, body: unsupportedMediaType},
		{name: "415 on GET", method: "GET", target: getOne,
			status: 415, header: problemHeader, body: unsupportedMediaType,
			wantErr: "status 415 is not declared"},
		{name: "409 key reused names the operation", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: problemHeader, body: keyReused},
		{name: "409 key reused without operationId", method: "POST", target: admit, reqBody: admissionBody,
			status: 409, header: problemHeader, body: keyReused.without("operationId"),
			wantErr: "doesn't match schema"},
	}
	for _, x := range tests {
		t.Run(x.name, func(t *testing.T) {
			t.Parallel()
			x.run(t, v)
		})
	}
}

// OpenAPI has no path-level responses, so the 405 a path answers for the methods it does
// not have is listed under each of its operations; every one must list it.
func TestEveryOperationDeclares405(t *testing.T) {
	v := newValidator(t)
	for path, item := range v.Doc().Paths.Map() {
		for method, op := range item.Operations() {
			if r := op.Responses.Status(http.StatusMethodNotAllowed); r == nil || r.Ref != "#/components/responses/MethodNotAllowed" {
				t.Errorf("%s %s does not declare the MethodNotAllowed response", method, path)
			}
		}
	}
}

func TestLowercaseHeaderKeys(t *testing.T) {
	v := newValidator(t)
	h := http.Header{}
	for k, vs := range acceptedHeader {
		h[strings.ToLower(k)] = vs
	}
	exchange{method: "POST", target: admit, reqBody: admissionBody, status: 202, header: h, body: accepted}.run(t, v)
}

func TestDocumentIsOpenAPI31(t *testing.T) {
	v := newValidator(t)
	if !v.Doc().IsOpenAPI31OrLater() {
		t.Fatalf("document is %s, want 3.1", v.Doc().OpenAPI)
	}
}

func TestOpenAPIReturnsACopy(t *testing.T) {
	a := api.OpenAPI()
	if len(a) == 0 {
		t.Fatal("empty document")
	}
	a[0] = 'X'
	if b := api.OpenAPI(); b[0] == 'X' {
		t.Fatal("api.OpenAPI returned the embedded bytes, not a copy")
	}
}

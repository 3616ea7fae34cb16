package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/jcs"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/core/runes"
)

// cancel serves POST /v1/operations/{id}/cancel.
func (h *Handler) cancel(ctx context.Context, ev events.APIGatewayProxyRequest, scope admission.Scope, id string) (response, error) {
	if !ids.Valid("op_", id) {
		return response{}, errNotFound()
	}
	var ifMatch []int
	if values := headerValues(ev, "If-Match"); len(values) > 0 {
		var ok bool
		if ifMatch, ok = parseIfMatch(values); !ok {
			return response{}, problem.New(problem.VersionMismatch, `If-Match must be the operation's ETag, e.g. "3".`)
		}
	}
	by := intent.Sender{Tenant: scope.Tenant, Principal: scope.Principal, Operator: h.Callers.IsOperator(ev.RequestContext)}
	op, already, err := h.Intents.Cancel(ctx, id, by, h.sees(ev, scope), ifMatch)
	if problem.CodeOf(err) == problem.NotFound {
		return response{}, errNotFound()
	}
	if err != nil {
		return response{}, err
	}
	resp, err := h.representation(ctx, op, admission.StatusPath(basePath(ev), op.ID))
	if !already {
		resp.status = http.StatusAccepted
		if op.State == operation.Canceled && h.Metrics != nil {
			// Canceled before it was dispatched: an outcome, and no step ran.
			for _, m := range operation.OutcomeMeasures(op, operation.KindCanceled, 0, op.UpdatedAt) {
				h.Metrics.Add(m.Name, m.Unit, m.Value, m.Dims...)
			}
		}
	}
	return resp, err
}

// parseIfMatch reads If-Match values: a list of entity tags ("3", W/"3") or "*". It returns
// nil for "*" (any version matches) and ok=false when a value is not one of ours.
func parseIfMatch(values []string) (versions []int, ok bool) {
	for _, v := range values {
		for _, tag := range strings.Split(v, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" {
				return nil, true
			}
			unquoted, err := strconv.Unquote(tag)
			n, convErr := strconv.Atoi(unquoted)
			if err != nil || convErr != nil || !strings.HasPrefix(tag, `"`) || n < 1 {
				return nil, false
			}
			versions = append(versions, n)
		}
	}
	return versions, true
}

// resolve serves POST /v1/operations/{id}/resolve, for operators only.
func (h *Handler) resolve(ctx context.Context, ev events.APIGatewayProxyRequest, scope admission.Scope, id string) (response, error) {
	if !h.Callers.IsOperator(ev.RequestContext) {
		return response{}, problem.New(problem.Forbidden, "Only operators may resolve operations.")
	}
	if !ids.Valid("op_", id) {
		return response{}, errNotFound()
	}
	payload, err := requestBody(ev)
	if err != nil {
		return response{}, err
	}
	mt, params := mediaType(ev)
	r, err := parseResolution(mt, params, payload)
	if err != nil {
		return response{}, err
	}
	if values := headerValues(ev, "If-Match"); len(values) > 0 {
		var ok bool
		if r.IfMatch, ok = parseIfMatch(values); !ok {
			return response{}, problem.New(problem.VersionMismatch, `If-Match must be the operation's ETag, e.g. "3".`)
		}
		if r.IfMatch == nil {
			r.IfMatch = []int{} // "*": any version, but one was given
		}
	}
	if r.Outcome == operation.KindRetried && r.IfMatch == nil {
		// Running a step again is the one resolution that does more work: the operator must
		// have decided on the version they saw, not on whatever it is by now.
		return response{}, problem.Invalid(problem.FieldError{Pointer: "/If-Match", Detail: `A retry needs If-Match: the ETag of the version you decided on, e.g. "3".`})
	}
	op, err := h.Intents.Resolve(ctx, id, scope.Tenant+"/"+scope.Principal, r)
	if problem.CodeOf(err) == problem.NotFound {
		return response{}, errNotFound()
	}
	if err != nil {
		return response{}, err
	}
	return h.representation(ctx, op, admission.StatusPath(basePath(ev), op.ID))
}

func parseResolution(mediaType string, params map[string]string, payload []byte) (intent.Resolution, error) {
	var r intent.Resolution
	if len(payload) > admission.MaxBodyBytes {
		return r, problem.New(problem.PayloadTooLarge, "The body must be at most %d bytes.", admission.MaxBodyBytes)
	}
	if err := admission.CheckMediaType(mediaType, params); err != nil {
		return r, err
	}
	if _, err := jcs.Parse(payload); err != nil {
		return r, problem.Wrap(problem.InvalidInput, err, "The body is not acceptable JSON: %s.", err.Error())
	}
	var body struct {
		Outcome string             `json:"outcome"`
		Reason  string             `json:"reason"`
		Result  json.RawMessage    `json:"result"`
		Problem *operation.Problem `json:"problem"`
	}
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return r, problem.Invalid(problem.FieldError{Pointer: "", Detail: "The body must be an object with outcome, reason and optionally result or problem."})
	}
	var fields []problem.FieldError
	switch body.Outcome {
	case "succeeded":
		r.Outcome = operation.KindSucceeded
		if body.Problem != nil {
			fields = append(fields, problem.FieldError{Pointer: "/problem", Detail: "problem goes with outcome failed."})
		}
		if len(body.Result) > 0 && (body.Result[0] != '{') {
			fields = append(fields, problem.FieldError{Pointer: "/result", Detail: "result must be an object."})
		}
	case "failed":
		r.Outcome = operation.KindFailed
		if len(body.Result) > 0 {
			fields = append(fields, problem.FieldError{Pointer: "/result", Detail: "result goes with outcome succeeded."})
		}
		if p := body.Problem; p != nil && (p.Code == "" || p.Title == "") {
			fields = append(fields, problem.FieldError{Pointer: "/problem", Detail: "problem needs a code and a title."})
		} else if p != nil {
			fields = append(fields, problemFields(p)...)
		}
	case "retry":
		r.Outcome = operation.KindRetried
		if len(body.Result) > 0 || body.Problem != nil {
			fields = append(fields, problem.FieldError{Pointer: "/outcome", Detail: "a retry takes no result and no problem: the step's own run decides them."})
		}
	default:
		fields = append(fields, problem.FieldError{Pointer: "/outcome", Detail: "outcome must be succeeded, failed or retry."})
	}
	if n := len([]rune(body.Reason)); n < 1 || n > 1000 {
		fields = append(fields, problem.FieldError{Pointer: "/reason", Detail: "reason is required: 1 to 1000 characters."})
	}
	if len(fields) > 0 {
		return r, problem.Invalid(fields...)
	}
	r.Reason, r.Result, r.Problem = body.Reason, body.Result, body.Problem
	if r.Problem != nil {
		r.Problem = operation.NewProblem(r.Problem.Code, r.Problem.Title, r.Problem.Detail)
	}
	return r, nil
}

// The bounds of an operation's problem (api/openapi.yaml, OperationProblem): the step
// protocol's for a worker's report (api/worker/step-report.schema.json), and an operator's
// resolution is held to the same.
var problemCodePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

const (
	maxProblemTitle  = 200
	maxProblemDetail = 2000
)

// problemFields checks an operator's problem against the contract's bounds.
func problemFields(p *operation.Problem) []problem.FieldError {
	var fields []problem.FieldError
	if !problemCodePattern.MatchString(p.Code) {
		fields = append(fields, problem.FieldError{Pointer: "/problem/code", Detail: "code must be snake_case: a lowercase letter, then at most 63 lowercase letters, digits or underscores."})
	}
	if utf8.RuneCountInString(p.Title) > maxProblemTitle {
		fields = append(fields, problem.FieldError{Pointer: "/problem/title", Detail: fmt.Sprintf("title must be at most %d characters.", maxProblemTitle)})
	}
	if utf8.RuneCountInString(p.Detail) > maxProblemDetail {
		fields = append(fields, problem.FieldError{Pointer: "/problem/detail", Detail: fmt.Sprintf("detail must be at most %d characters.", maxProblemDetail)})
	}
	return fields
}

// signal serves POST /v1/operations/{id}/signals/{name}: a signal delivered to a running
// operation, idempotent by its key (docs/idempotency.md).
func (h *Handler) signal(ctx context.Context, ev events.APIGatewayProxyRequest, scope admission.Scope, id, name string) (response, error) {
	if !ids.Valid("op_", id) {
		return response{}, errNotFound()
	}
	if !optype.SignalNamePattern.MatchString(name) {
		return response{}, problem.New(problem.UnknownSignal, "%q is not a signal's name: names match %s.", runes.Cut(name, 80), optype.SignalNamePattern)
	}
	keys := headerValues(ev, "Idempotency-Key")
	if len(keys) != 1 {
		return response{}, problem.New(problem.InvalidIdempotencyKey, "Send exactly one Idempotency-Key header: a signal is delivered once per key.")
	}
	if err := admission.ValidateKey(keys[0]); err != nil {
		return response{}, err
	}
	var ifMatch []int
	if values := headerValues(ev, "If-Match"); len(values) > 0 {
		var ok bool
		if ifMatch, ok = parseIfMatch(values); !ok {
			return response{}, problem.New(problem.VersionMismatch, `If-Match must be the operation's ETag, e.g. "3".`)
		}
	}
	data, decoded, err := signalData(ev)
	if err != nil {
		return response{}, err
	}
	sender := intent.Sender{Tenant: scope.Tenant, Principal: scope.Principal, Operator: h.Callers.IsOperator(ev.RequestContext)}
	op, replayed, err := h.Intents.Signal(ctx, h.Types, intent.SignalRequest{ID: id, Name: name, Data: data, Decoded: decoded,
		Key: keys[0], Sender: sender, IfMatch: ifMatch})
	if problem.CodeOf(err) == problem.NotFound {
		return response{}, errNotFound()
	}
	if err != nil {
		return response{}, err
	}
	statusURL := admission.StatusPath(basePath(ev), op.ID)
	resp, err := h.representation(ctx, op, statusURL)
	resp.status = http.StatusAccepted
	if resp.header != nil {
		resp.header.Set("Location", statusURL) // Retry-After as a GET's: none once terminal
		if replayed {
			resp.header.Set("Idempotent-Replayed", "true")
		}
	}
	return resp, err
}

// signalData reads a signal's body: a JSON object of at most the admission's size, as
// compact canonical JSON and decoded for its schema.
func signalData(ev events.APIGatewayProxyRequest) (json.RawMessage, any, error) {
	payload, err := requestBody(ev)
	if err != nil {
		return nil, nil, err
	}
	if len(payload) > admission.MaxBodyBytes {
		return nil, nil, problem.New(problem.PayloadTooLarge, "The body must be at most %d bytes.", admission.MaxBodyBytes)
	}
	mt, params := mediaType(ev)
	if err := admission.CheckMediaType(mt, params); err != nil {
		return nil, nil, err
	}
	decoded, err := jcs.Parse(payload)
	if err != nil {
		return nil, nil, problem.Wrap(problem.InvalidInput, err, "The body is not acceptable JSON: %s.", err.Error())
	}
	if _, ok := decoded.(map[string]any); !ok {
		return nil, nil, problem.Invalid(problem.FieldError{Pointer: "", Detail: "The body must be a JSON object: the signal's data."})
	}
	data, err := jcs.Marshal(decoded)
	if err != nil {
		return nil, nil, problem.Wrap(problem.InvalidInput, err, "The body is not acceptable JSON: %s.", err.Error())
	}
	return data, decoded, nil
}

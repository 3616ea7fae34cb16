// Package httpapi maps API Gateway REST proxy events to longrun's services and back: routes,
// the caller's scope from the request context, problem+json errors and the contract's
// headers. It is the only place that knows about HTTP.
package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/logctx"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/core/runes"
	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/core/tracelink"
)

// Admitter admits operations.
type Admitter interface {
	Admit(ctx context.Context, req admission.Request) (admission.Outcome, error)
}

// Operations reads operations: one folded from its facts, its facts, or a page of a
// caller's; and, for operators, the attention queue and the stats across tenants.
type Operations interface {
	Load(ctx context.Context, id string) (operation.Operation, error)
	List(ctx context.Context, q ListQuery) ([]operation.Representation, string, error)
	// Facts are an operation's facts in version order; an unknown id is not_found.
	Facts(ctx context.Context, id string) ([]operation.Fact, error)
	// Attention is one page of every tenant's operations in outcome_unknown, oldest first,
	// and the cursor of the next ("" when there is none); a cursor it did not write is
	// invalid_input, answered before anything is read.
	Attention(ctx context.Context, q AttentionQuery) ([]TenantOperation, string, error)
	// Stats counts the operations in flight and waiting for an operator, from the
	// indexes, within bounded work.
	Stats(ctx context.Context) (Stats, error)
}

// Intents records cancellation and operator resolutions.
type Intents interface {
	Cancel(ctx context.Context, id string, by intent.Sender, visible intent.Visible, ifMatch []int) (operation.Operation, bool, error)
	Resolve(ctx context.Context, id, operator string, r intent.Resolution) (operation.Operation, error)
	Signal(ctx context.Context, types *optype.Registry, r intent.SignalRequest) (operation.Operation, bool, error)
}

// Metrics is where the handler counts what it did (the functions give it internal/aws/emf;
// docs/observability.md lists the metrics). dims are name, value pairs.
type Metrics interface {
	Add(name, unit string, value float64, dims ...string)
}

// Admission outcomes, the Outcome dimension of the Admissions metric.
const (
	OutcomeCreated       = "created"
	OutcomeReplayed      = "replayed"
	OutcomeKeyReused     = "key_reused"
	OutcomeTargetBusy    = "target_busy"
	OutcomeQuotaExceeded = "quota_exceeded"
	OutcomeInvalid       = "invalid"
	OutcomeUnavailable   = "unavailable"
	OutcomeInternal      = "internal"
)

// AdmissionOutcome is the Outcome an admission's answer counts as.
func AdmissionOutcome(replayed bool, err error) string {
	if err == nil {
		if replayed {
			return OutcomeReplayed
		}
		return OutcomeCreated
	}
	switch problem.CodeOf(err) {
	case problem.IdempotencyKeyReused:
		return OutcomeKeyReused
	case problem.TargetBusy:
		return OutcomeTargetBusy
	case problem.QuotaExceeded:
		return OutcomeQuotaExceeded
	case problem.Unavailable:
		return OutcomeUnavailable
	case problem.Internal:
		return OutcomeInternal
	}
	return OutcomeInvalid // the request's fault: key, media type, size, type, input
}

// Handler serves the /v1 API.
type Handler struct {
	Admission  Admitter
	Operations Operations
	Intents    Intents
	// Types is what discovery (GET /v1/operation-types) serves. It must be the registry
	// admission validates against (admission.Service.Registry), so a served inputSchema is
	// exactly what an admission's input must satisfy. Without it discovery answers 500
	// internal and logs why; every other route works without it.
	Types        *optype.Registry
	Callers      Callers
	NewRequestID func() string
	Log          *slog.Logger
	// Metrics counts admissions by outcome; nil counts nothing.
	Metrics Metrics
	// Tracer starts a span per request (method, route, status, operation id, an
	// admission's outcome; never a body, key or token), linked to the caller's traceparent;
	// an admission records the span's traceparent with the operation. nil traces nothing.
	Tracer trace.Tracer
	// Now is the clock of the polling intervals the representation suggests (PollAfter);
	// nil is time.Now.
	Now func() time.Time
	// CallbackKey checks the tokens of callback URLs (internal/core/callback); without it
	// every callback is not_found.
	CallbackKey *seal.Sealer
	// Console serves the operations console's files under /console (console.go); nil
	// answers 404 there.
	Console Console
}

func (h *Handler) count(name string, value float64, dims ...string) {
	if h.Metrics != nil {
		h.Metrics.Add(name, "Count", value, dims...)
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

const operationsPath = "/v1/operations"

// callbacksPath is where callback URLs point (POST /v1/callbacks/{token}).
const callbacksPath = "/v1/callbacks"

// Handle serves one API Gateway REST proxy event. It never returns an error to Lambda: every
// failure is a problem response, so API Gateway never answers with its own 502.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayProxyRequest) (out events.APIGatewayProxyResponse, _ error) {
	start := time.Now()
	requestID := h.NewRequestID()
	// The request's correlation id; an operation the request is about brings its own
	// (admission records this one in the operation it creates).
	traceparent := headerValues(ev, "traceparent")
	ctx = logctx.With(ctx, logctx.Fields{RequestID: requestID, CorrelationID: CorrelationID(traceparent, requestID)})
	ctx, span := h.startSpan(ctx, ev, traceparent)
	log := h.Log.With("request_id", requestID, "method", ev.HTTPMethod, "path", loggedPath(ev.Path))
	if ev.RequestContext.RequestID != "" {
		log = log.With("apigw_request_id", ev.RequestContext.RequestID) // logs only, never a response
	}
	var resp response
	var opID string
	var code problem.Code // the problem's, for the alarms on its rate (quota_exceeded, say)
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "panic", "panic", fmt.Sprint(p))
			resp = problemResponse(problem.New(problem.Internal, "panic"), requestID)
		}
		out = finish(resp, requestID)
		log.InfoContext(ctx, "request", "status", resp.status, "code", string(code), "operation_id", opID, "duration_ms", time.Since(start).Milliseconds())
		endSpan(span, resp.status, code, opID)
	}()

	var err error
	resp, opID, err = h.route(ctx, ev)
	logctx.Set(ctx, logctx.Fields{OperationID: opID})
	if err != nil {
		pe := problem.As(err)
		code = pe.Code
		if pe.Code == problem.Internal || pe.Code == problem.Unavailable {
			log.ErrorContext(ctx, "request failed", "code", pe.Code, "error", err.Error())
		}
		if opID == "" {
			opID = pe.OperationID
		}
		resp = problemResponse(err, requestID)
	}
	return out, nil
}

func (h *Handler) route(ctx context.Context, ev events.APIGatewayProxyRequest) (response, string, error) {
	path := strings.TrimSuffix(ev.Path, "/")
	route, param := routeOf(path)
	if route == routeCallback {
		// A callback carries no credentials: its token is one (callback.go).
		if ev.HTTPMethod != http.MethodPost {
			return response{}, "", methodNotAllowed(ev.HTTPMethod, routeCallback, http.MethodPost)
		}
		resp, err := h.callback(ctx, ev, param)
		return resp, "", err
	}
	if isConsolePath(ev.Path) {
		// The console's files are public; what it shows, the API gives its caller's token.
		resp, err := h.console(ev)
		return resp, "", err
	}
	scope, err := h.Callers.Scope(ev.RequestContext)
	if err != nil {
		return response{}, "", err
	}
	switch route {
	case routeTypes, routeType:
		resp, err := h.typesRoute(ev.HTTPMethod, path, param)
		return resp, "", err
	case routeOperations:
		switch ev.HTTPMethod {
		case http.MethodPost:
			resp, id, err := h.admit(ctx, ev, scope)
			outcome := AdmissionOutcome(resp.header.Get("Idempotent-Replayed") == "true", err)
			h.count("Admissions", 1, "Outcome", outcome)
			trace.SpanFromContext(ctx).SetAttributes(attrOutcome.String(outcome))
			return resp, id, err
		case http.MethodGet:
			resp, err := h.list(ctx, ev, scope)
			return resp, "", err
		}
		return response{}, "", methodNotAllowed(ev.HTTPMethod, path, http.MethodGet, http.MethodPost)
	case routeAttention, routeStats:
		if ev.HTTPMethod != http.MethodGet {
			return response{}, "", methodNotAllowed(ev.HTTPMethod, path, http.MethodGet)
		}
		if route == routeAttention {
			resp, err := h.attention(ctx, ev)
			return resp, "", err
		}
		resp, err := h.stats(ctx, ev)
		return resp, "", err
	case routeOperation, routeHistory, routeCancel, routeResolve, routeSignal:
		id := param
		var resp response
		var err error
		switch {
		case route == routeOperation && ev.HTTPMethod == http.MethodGet:
			resp, err = h.get(ctx, ev, scope, id)
		case route == routeHistory && ev.HTTPMethod == http.MethodGet:
			resp, err = h.getHistory(ctx, ev, h.sees(ev, scope), h.Callers.IsOperator(ev.RequestContext), id)
		case route == routeCancel && ev.HTTPMethod == http.MethodPost:
			resp, err = h.cancel(ctx, ev, scope, id)
		case route == routeResolve && ev.HTTPMethod == http.MethodPost:
			resp, err = h.resolve(ctx, ev, scope, id)
		case route == routeSignal && ev.HTTPMethod == http.MethodPost:
			resp, err = h.signal(ctx, ev, scope, id, path[strings.LastIndex(path, "/")+1:])
		case id != "" && (route == routeOperation || route == routeHistory):
			return response{}, "", methodNotAllowed(ev.HTTPMethod, path, http.MethodGet)
		case id != "":
			return response{}, "", methodNotAllowed(ev.HTTPMethod, path, http.MethodPost)
		default:
			return response{}, "", errNoRoute(ev.HTTPMethod, path)
		}
		return resp, id, err
	}
	return response{}, "", errNoRoute(ev.HTTPMethod, path)
}

// attrOutcome is an admission's outcome on its request's span (the Admissions metric's).
const attrOutcome = attribute.Key("longrun.admission.outcome")

// startSpan starts the request's span: a server span named for the route, a child of the
// invocation's, linked to the caller's trace when it sent exactly one traceparent.
func (h *Handler) startSpan(ctx context.Context, ev events.APIGatewayProxyRequest, traceparent []string) (context.Context, trace.Span) {
	if h.Tracer == nil {
		return tracelink.Start(ctx, nil, "", "") // a span that records nothing
	}
	caller := ""
	if len(traceparent) == 1 {
		caller = strings.TrimSpace(traceparent[0])
	}
	route, _ := routeOf(strings.TrimSuffix(ev.Path, "/"))
	method := runes.Cut(ev.HTTPMethod, 16)
	attrs := []attribute.KeyValue{attribute.String("http.request.method", method)}
	name := method
	if name == "" {
		name = "HTTP" // semantic conventions' name for a request of no known method
	}
	if route != "" {
		attrs = append(attrs, attribute.String("http.route", route))
		name += " " + route
	}
	return tracelink.Start(ctx, h.Tracer, name, caller, attrs...)
}

// endSpan ends a request's span with how it was answered; a 5xx is an error (a 4xx is the
// caller's, so it is not).
func endSpan(span trace.Span, status int, code problem.Code, opID string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if opID != "" {
		span.SetAttributes(tracelink.AttrOperationID.String(opID))
	}
	if code != "" {
		span.SetAttributes(attribute.String("longrun.problem.code", string(code)))
	}
	if status >= 500 {
		span.SetStatus(codes.Error, string(code))
	}
	span.End()
}

// The API's route templates (api/openapi.yaml): the router's, and its spans' names, which
// must not hold ids.
const (
	routeOperations = operationsPath
	routeOperation  = operationsPath + "/{operationId}"
	routeHistory    = routeOperation + "/history"
	routeCancel     = routeOperation + "/cancel"
	routeResolve    = routeOperation + "/resolve"
	routeSignal     = routeOperation + "/signals/{signal}"
	routeCallback   = callbacksPath + "/{token}"
	routeTypes      = operationTypesPath
	routeType       = operationTypesPath + "/{name}"
	routeAttention  = attentionPath
	routeStats      = statsPath
)

// routeOf is the route template path belongs to and the operation id or type name in it; ""
// for none of them. An operation's routes keep an empty id (…//cancel): the router answers
// those itself.
func routeOf(path string) (route, param string) {
	if token, ok := strings.CutPrefix(path, callbacksPath+"/"); ok && token != "" && !strings.Contains(token, "/") {
		return routeCallback, token
	}
	switch path {
	case operationsPath:
		return routeOperations, ""
	case operationTypesPath:
		return routeTypes, ""
	case attentionPath:
		return routeAttention, ""
	case statsPath:
		return routeStats, ""
	}
	if name, ok := strings.CutPrefix(path, operationTypesPath+"/"); ok {
		if name == "" || strings.Contains(name, "/") {
			return "", ""
		}
		return routeType, name
	}
	rest, ok := strings.CutPrefix(path, operationsPath+"/")
	if !ok {
		return "", ""
	}
	id, action, _ := strings.Cut(rest, "/")
	switch action {
	case "":
		return routeOperation, id
	case "history":
		return routeHistory, id
	case "cancel":
		return routeCancel, id
	case "resolve":
		return routeResolve, id
	}
	if name, ok := strings.CutPrefix(action, "signals/"); ok && name != "" && !strings.Contains(name, "/") {
		return routeSignal, id
	}
	return "", ""
}

// loggedPath is the path a log line shows: a callback's as its route, since its token is
// a credential.
func loggedPath(path string) string {
	if route, _ := routeOf(strings.TrimSuffix(path, "/")); route == routeCallback {
		return routeCallback
	}
	return path
}

// allowError is a 405: the problem, and the path's methods for the Allow header.
type allowError struct {
	err   *problem.Error
	allow []string
}

func (e *allowError) Error() string { return e.err.Error() }

func (e *allowError) Unwrap() error { return e.err }

// methodNotAllowed is the 405 for a known path called with another method; allow lists the
// path's methods.
func methodNotAllowed(method, path string, allow ...string) error {
	return &allowError{allow: allow, err: problem.New(problem.MethodNotAllowed, "%s is not a method of %s; it has %s.",
		runes.Cut(method, 16), runes.Cut(path, 128), strings.Join(allow, ", "))}
}

// errNoRoute is the 404 for a path the API does not have.
func errNoRoute(method, path string) error {
	return problem.New(problem.NotFound, "No such route: %s %s.", method, runes.Cut(path, 128))
}

func (h *Handler) admit(ctx context.Context, ev events.APIGatewayProxyRequest, scope admission.Scope) (response, string, error) {
	keys := headerValues(ev, "Idempotency-Key")
	if len(keys) > 1 {
		return response{}, "", problem.New(problem.InvalidIdempotencyKey, "Send exactly one Idempotency-Key header.")
	}
	key := ""
	if len(keys) == 1 {
		key = keys[0]
	}
	payload, err := requestBody(ev)
	if err != nil {
		return response{}, "", err
	}
	mt, params := mediaType(ev)
	out, err := h.Admission.Admit(ctx, admission.Request{Scope: scope, Key: key, MediaType: mt, MediaParams: params,
		Body: payload, BasePath: basePath(ev), CorrelationID: logctx.From(ctx).CorrelationID, Traceparent: tracelink.Traceparent(ctx)})
	if err != nil {
		return response{}, "", err
	}
	header := http.Header{
		"Content-Type": {"application/json"},
		"Location":     {out.Record.Location},
		"Retry-After":  {"1"},
	}
	if out.Replayed {
		header.Set("Idempotent-Replayed", "true")
	}
	return response{status: out.Record.Status, header: header, body: out.Record.Body}, out.Record.OperationID, nil
}

func (h *Handler) get(ctx context.Context, ev events.APIGatewayProxyRequest, scope admission.Scope, id string) (response, error) {
	op, err := h.visible(ctx, h.sees(ev, scope), id)
	if err != nil {
		return response{}, err
	}
	return h.representation(ctx, op, admission.StatusPath(basePath(ev), op.ID))
}

// visible loads an operation the caller may see (see: sees). One it may not see is answered
// exactly like a missing one, so ids reveal nothing across tenants.
func (h *Handler) visible(ctx context.Context, see intent.Visible, id string) (operation.Operation, error) {
	if !ids.Valid("op_", id) {
		return operation.Operation{}, errNotFound()
	}
	op, err := h.Operations.Load(ctx, id)
	if problem.CodeOf(err) == problem.NotFound {
		return op, errNotFound()
	}
	if err != nil {
		return op, err
	}
	if !see(op) {
		return operation.Operation{}, errNotFound()
	}
	return op, nil
}

func errNotFound() error { return problem.New(problem.NotFound, "No such operation.") }

// owns is the visibility rule: an operation belongs to the scope that admitted it.
func owns(scope admission.Scope) intent.Visible {
	return func(op operation.Operation) bool { return op.Tenant == scope.Tenant && op.Principal == scope.Principal }
}

// representation is op's 200, and tells ctx's log fields which operation the request is
// about, with its correlation id.
func (h *Handler) representation(ctx context.Context, op operation.Operation, statusURL string) (response, error) {
	logctx.Set(ctx, logctx.Fields{OperationID: op.ID, CorrelationID: op.CorrelationID})
	b, err := json.Marshal(op.Represent(statusURL))
	if err != nil {
		return response{}, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	header := http.Header{
		"Content-Type": {"application/json"},
		"ETag":         {strconv.Quote(strconv.Itoa(op.Version))},
	}
	if !op.State.Terminal() {
		header.Set("Retry-After", retryAfter(PollAfter(op, h.now())))
	}
	return response{status: http.StatusOK, header: header, body: b}, nil
}

// PollAfter is when a client should read op again, at now: while an operator is needed,
// 30 s; while the work waits (a worker asked to) and no cancel was asked for, when the wait
// ends; otherwise every
// second for its first 10 s, then a tenth of its age, at most 30 s. A long operation is
// then read a few dozen times, not once a second for hours, and a wait of any length costs
// its client a constant number of reads (the Retry-After header, at most MaxRetryAfter).
func PollAfter(op operation.Operation, now time.Time) time.Duration {
	switch {
	case op.State == operation.OutcomeUnknown:
		return 30 * time.Second
	case op.Waiting(now) && !op.CancelRequested: // a cancel ends a wait at once
		return op.WaitingUntil.Sub(now)
	}
	return min(max(time.Second, now.Sub(op.CreatedAt)/10), 30*time.Second)
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// finish adds the headers every response carries.
func finish(r response, requestID string) events.APIGatewayProxyResponse {
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set("X-Request-Id", requestID)
	if r.header.Get("Cache-Control") == "" { // only the console's files say otherwise
		r.header.Set("Cache-Control", "no-store")
	}
	single := make(map[string]string, len(r.header))
	for k, v := range r.header {
		single[k] = v[0]
	}
	return events.APIGatewayProxyResponse{StatusCode: r.status, Headers: single, Body: string(r.body)}
}

// Callers resolves who is calling from what API Gateway's authorizer put in the request
// context, never from a header or the body (docs/security.md, "Trust boundaries"):
//   - a Lambda authorizer's (or the local stack's) tenant and principal, and its role;
//   - a Cognito user pool's ID token claims: only ID tokens (token_use "id") of the app
//     clients listed in CognitoClientIDs; the tenant is custom:tenant, which the pool must
//     let only administrators write (the stack's pool does), the principal is sub;
//   - the IAM identity of a SigV4 request: the account is the tenant and the caller's ARN the
//     principal, except that an assumed role's session name is dropped: every session of a
//     role is one caller, arn:<partition>:sts::<account>:assumed-role/<role> (see
//     rolePrincipal), so a service that retries through another instance, with another
//     session, stays in its idempotency scope and sees its own operations. IAM users, root
//     and every other identity are taken as they are.
type Callers struct {
	// CognitoClientIDs are the app clients whose ID tokens are accepted. With none, no
	// Cognito token is: a token of some other client of the pool (one that lets users write
	// their own custom:tenant, say) must never choose a tenant.
	CognitoClientIDs []string
	// OperatorPrincipals are the IAM identities that are operators: role ARNs
	// (arn:aws:iam::<account>:role/<path/><name>, meaning every session of the role) or
	// principals as Scope names them.
	OperatorPrincipals []string
}

// Scope is the caller's idempotency and visibility scope, or 401.
func (c Callers) Scope(rc events.APIGatewayProxyRequestContext) (admission.Scope, error) {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	if t, p := str(rc.Authorizer, "tenant"), str(rc.Authorizer, "principal"); t != "" && p != "" {
		return admission.Scope{Tenant: t, Principal: p}, nil
	}
	if claims, ok := rc.Authorizer["claims"].(map[string]any); ok {
		if !c.trusted(claims) {
			return admission.Scope{}, problem.New(problem.Unauthenticated, "The token is not an ID token of an app client this API accepts.")
		}
		if t, p := str(claims, "custom:tenant"), str(claims, "sub"); t != "" && p != "" {
			return admission.Scope{Tenant: t, Principal: p}, nil
		}
		return admission.Scope{}, problem.New(problem.Unauthenticated, "The token carries no tenant.")
	}
	if principal := iamPrincipal(rc.Identity); rc.Identity.AccountID != "" && principal != "" {
		return admission.Scope{Tenant: rc.Identity.AccountID, Principal: principal}, nil
	}
	return admission.Scope{}, problem.New(problem.Unauthenticated, "The request has no resolvable caller.")
}

// trusted reports whether Cognito claims are an ID token of an accepted app client. API
// Gateway's Cognito authorizer has checked the signature, the issuer (the pool) and the
// expiry; which client the token was issued to, and which kind it is, are ours to check.
func (c Callers) trusted(claims map[string]any) bool {
	use, _ := claims["token_use"].(string)
	aud, _ := claims["aud"].(string)
	return use == "id" && aud != "" && slices.Contains(c.CognitoClientIDs, aud)
}

// IsOperator reports whether the caller is an operator: a Lambda authorizer's (or the local
// stack's) role "operator", membership of the longrun-operators group in an accepted Cognito
// token, or an IAM identity listed in OperatorPrincipals.
func (c Callers) IsOperator(rc events.APIGatewayProxyRequestContext) bool {
	if role, _ := rc.Authorizer["role"].(string); role == "operator" {
		return true
	}
	if claims, ok := rc.Authorizer["claims"].(map[string]any); ok {
		if !c.trusted(claims) {
			return false
		}
		groups, _ := claims["cognito:groups"].(string)
		for _, g := range strings.FieldsFunc(groups, func(r rune) bool { return r == ',' || r == ' ' || r == '[' || r == ']' }) {
			if g == "longrun-operators" {
				return true
			}
		}
		return false
	}
	principal := iamPrincipal(rc.Identity)
	if rc.Identity.AccountID == "" || principal == "" {
		return false
	}
	for _, op := range c.OperatorPrincipals {
		if op == principal || roleAsPrincipal(op) == principal {
			return true
		}
	}
	return false
}

// iamPrincipal is the principal of a SigV4 caller.
func iamPrincipal(id events.APIGatewayRequestIdentity) string {
	return firstOf(rolePrincipal(id.UserArn), id.Caller, id.User)
}

// roleAsPrincipal turns an IAM role ARN, arn:<partition>:iam::<account>:role/<path/><name>,
// into the principal its sessions have, arn:<partition>:sts::<account>:assumed-role/<name>
// (an assumed-role ARN carries no path). Anything else is returned as it is.
func roleAsPrincipal(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "iam" || parts[4] == "" || !strings.HasPrefix(parts[5], "role/") {
		return arn
	}
	name := parts[5][strings.LastIndex(parts[5], "/")+1:]
	if name == "" {
		return arn
	}
	return "arn:" + parts[1] + ":sts::" + parts[4] + ":assumed-role/" + name
}

// rolePrincipal drops the session name from an assumed-role ARN,
// arn:<partition>:sts::<account>:assumed-role/<role-name>/<role-session-name>, leaving
// arn:<partition>:sts::<account>:assumed-role/<role-name>. A role's path is not part of that
// ARN and neither a role name nor a session name may contain "/", so the session is exactly
// the last segment. Any other ARN (an IAM user, root, a federated user) is returned as it is.
func rolePrincipal(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[2] != "sts" || parts[4] == "" {
		return arn
	}
	role, ok := strings.CutPrefix(parts[5], "assumed-role/")
	if !ok {
		return arn
	}
	name, session, ok := strings.Cut(role, "/")
	if !ok || name == "" || session == "" || strings.Contains(session, "/") {
		return arn
	}
	return strings.Join(parts[:5], ":") + ":assumed-role/" + name
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// headerValues returns every value of a header, matching its name case-insensitively, so a
// repeated header is seen as repeated.
func headerValues(ev events.APIGatewayProxyRequest, name string) []string {
	var values []string
	for k, v := range ev.MultiValueHeaders {
		if strings.EqualFold(k, name) {
			values = append(values, v...)
		}
	}
	if len(values) > 0 {
		return values
	}
	for k, v := range ev.Headers {
		if strings.EqualFold(k, name) {
			values = append(values, v)
		}
	}
	return values
}

func header(ev events.APIGatewayProxyRequest, name string) string {
	if v := headerValues(ev, name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// mediaType is the request's media type, lowercased, and its parameters (names lowercased):
// "" and none when the header is absent or unparseable. admission.CheckMediaType judges them.
func mediaType(ev events.APIGatewayProxyRequest) (string, map[string]string) {
	mt, params, err := mime.ParseMediaType(header(ev, "Content-Type"))
	if err != nil {
		return "", nil
	}
	return strings.ToLower(mt), params
}

func requestBody(ev events.APIGatewayProxyRequest) ([]byte, error) {
	if !ev.IsBase64Encoded {
		return []byte(ev.Body), nil
	}
	b, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil {
		return nil, problem.New(problem.InvalidInput, "The body could not be decoded.")
	}
	return b, nil
}

// basePath is the part of the path the client called that precedes the API's own routes: a
// stage ("/prod") or a custom domain's base path, "" when there is none.
func basePath(ev events.APIGatewayProxyRequest) string {
	full := ev.RequestContext.Path
	if full == "" || !strings.HasSuffix(full, ev.Path) {
		return ""
	}
	return strings.TrimSuffix(full, ev.Path)
}

// CorrelationID is a request's correlation id: the trace-id of its W3C traceparent header
// (https://www.w3.org/TR/trace-context/#traceparent-header) when there is exactly one and it
// is valid, else requestID.
func CorrelationID(traceparent []string, requestID string) string {
	if len(traceparent) == 1 {
		if id, ok := traceID(strings.TrimSpace(traceparent[0])); ok {
			return id
		}
	}
	return requestID
}

// traceID reads version-traceid-parentid-flags: lowercase hex, neither id all zeros, version
// ff invalid; a later version may append "-…" members, version 00 may not.
func traceID(h string) (string, bool) {
	if len(h) < 55 || (len(h) > 55 && (h[:2] == "00" || h[55] != '-')) {
		return "", false
	}
	version, trace, parent, flags := h[0:2], h[3:35], h[36:52], h[53:55]
	if h[2] != '-' || h[35] != '-' || h[52] != '-' || version == "ff" ||
		!lowerHex(version) || !lowerHex(trace) || !lowerHex(parent) || !lowerHex(flags) ||
		strings.Trim(trace, "0") == "" || strings.Trim(parent, "0") == "" {
		return "", false
	}
	return trace, true
}

func lowerHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/client/api"
)

// Client is longrun's API client: admission with an idempotency key and safe retries
// (Create, BeginCreate), reads (Get, List, Types, Type), signals (Signal), cancellation
// (Cancel), the operator's Resolve, and a Poller that follows an operation to its end.
// Build it once with New; it is safe for concurrent use.
type Client struct {
	base      *url.URL // the API's base URL, ending in "/"
	server    string   // base as the generated request builders take it
	http      *http.Client
	auth      Authenticator
	userAgent string
	retry     RetryOptions // defaults filled in
	clock     Clock
	jitter    *jitter
}

// ClientOptions configures a Client. The zero value (or nil) is the defaults: no
// authentication, http.DefaultClient, the default RetryOptions and the wall clock.
type ClientOptions struct {
	// HTTPClient sends the requests (its Transport, Timeout, …). nil: http.DefaultClient.
	HTTPClient *http.Client
	// Auth authenticates every request: BearerToken, SigV4 or one of the caller's own.
	// nil sends none (the API answers 401 unauthenticated).
	Auth Authenticator
	// UserAgent, when set, is sent before the client's own product token.
	UserAgent string
	// Retry bounds the retries of Create and of the reads.
	Retry RetryOptions
	// Clock is the time of every attempt, wait and signature; nil is the wall clock. Tests
	// inject one that records waits instead of sleeping.
	Clock Clock
	// Rand is the source of backoff jitter; nil is math/rand/v2's global generator. Tests
	// inject a seeded one.
	Rand rand.Source
}

// RetryOptions bounds how a Client retries a call that got no answer (a *TransportError)
// or a transient one (500, 502, 503 and 504; a 429 that is API Gateway's throttling rather
// than longrun's quota). It waits what Retry-After asks for, or else an exponential backoff
// with full jitter between MinDelay and MaxDelay, and stops at MaxAttempts attempts or when
// the next would start more than MaxElapsed after the first. Zero fields are defaults.
//
// Create retries with the same Idempotency-Key, so a retry whose predecessor was admitted
// is answered as a replay of it; once the first attempt is older than RetryWindow it
// refuses instead (*RetryWindowError). Signal retries with its key too (the operation keeps
// it as long as it lives, so no window applies). Reads retry the same way; Cancel with
// IfVersion and Resolve retry only answers that say nothing was committed (503
// unavailable, throttling).
type RetryOptions struct {
	// MaxAttempts is the most attempts of one call, the first included; default 5. 1 turns
	// retries off.
	MaxAttempts int
	// MaxElapsed bounds the time from the first attempt to the start of the last; default
	// 2 minutes.
	MaxElapsed time.Duration
	// MinDelay and MaxDelay bound the backoff when the answer gave no Retry-After; defaults
	// 250 ms and 20 s.
	MinDelay, MaxDelay time.Duration
	// RetryWindow is how long after the first attempt a Create may still be retried with the
	// same key; default DefaultRetryWindow. Set it below the deployment's idempotency window
	// when that is shorter than the API's default.
	RetryWindow time.Duration
	// RetryQuotaExceeded makes Create retry 429 quota_exceeded (after its Retry-After) too.
	// Off by default: the caller's active operations are at their quota, which changes only
	// when one of them ends, so it is an answer rather than a fault.
	RetryQuotaExceeded bool
}

// IdempotencyWindow is how long the API answers a replayed Idempotency-Key by default
// (docs/idempotency.md): after it, the same key admits a new operation.
const IdempotencyWindow = 24 * time.Hour

// DefaultRetryWindow is RetryOptions.RetryWindow's default: the API's IdempotencyWindow less
// an hour's margin for clock skew between client and API and for the time the first attempt
// took to be recorded.
const DefaultRetryWindow = IdempotencyWindow - time.Hour

func (r RetryOptions) withDefaults() RetryOptions {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 5
	}
	if r.MaxElapsed <= 0 {
		r.MaxElapsed = 2 * time.Minute
	}
	if r.MinDelay <= 0 {
		r.MinDelay = 250 * time.Millisecond
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = 20 * time.Second
	}
	r.MaxDelay = max(r.MaxDelay, r.MinDelay)
	if r.RetryWindow <= 0 {
		r.RetryWindow = DefaultRetryWindow
	}
	return r
}

// userAgent is the client's product token.
const userAgent = "longrun-go-client"

// New returns a Client of the API at baseURL: its scheme, host and base path, as the
// operations' statusUrl are relative to (a stage, `https://abc.execute-api.eu-west-1.amazonaws.com/prod`,
// or a custom domain's base path; `http://127.0.0.1:8080` for the local stack). opts may be
// nil.
func New(baseURL string, opts *ClientOptions) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("longrun: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("longrun: base URL %q: want an http or https URL with a host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("longrun: base URL %q: want no query, fragment or user info", baseURL)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	if opts == nil {
		opts = &ClientOptions{}
	}
	c := &Client{
		base:      u,
		server:    u.String(),
		http:      opts.HTTPClient,
		auth:      opts.Auth,
		userAgent: userAgent,
		retry:     opts.Retry.withDefaults(),
		clock:     opts.Clock,
		jitter:    newJitter(opts.Rand),
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.clock == nil {
		c.clock = wallClock{}
	}
	if ua := strings.TrimSpace(opts.UserAgent); ua != "" {
		c.userAgent = ua + " " + userAgent
	}
	return c, nil
}

// Raw returns the generated client of the whole contract (package client/api: every route,
// every status as its own field), sending through this Client's HTTP client with its
// authentication and User-Agent but without its retries: the way to a route or a response
// this Client does not wrap.
func (c *Client) Raw() *api.ClientWithResponses {
	raw, err := api.NewClientWithResponses(c.server, api.WithHTTPClient(rawDoer{c}))
	if err != nil { // NewClient fails only through an option that fails
		panic(err)
	}
	return raw
}

type rawDoer struct{ c *Client }

func (d rawDoer) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	if err := d.c.prepare(req.Context(), req, body); err != nil {
		return nil, err
	}
	return d.c.http.Do(req)
}

// maxResponse bounds what the client reads of a response.
const maxResponse = 16 << 20

// prepare sets the headers every request carries, then authenticates it (last, so a
// signature covers them).
func (c *Client) prepare(ctx context.Context, req *http.Request, body []byte) error {
	req.Header.Set("User-Agent", c.userAgent)
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json, application/problem+json")
	}
	if c.auth != nil {
		if err := c.auth.Authenticate(ctx, req, body, c.clock.Now()); err != nil {
			return err
		}
	}
	return nil
}

// send makes one attempt of a request: build returns it afresh (body is what it carries),
// and the answer is the response with its whole body, a *ProblemError for a status of 400
// or above, or a *TransportError when no complete response arrived.
func (c *Client) send(ctx context.Context, build func() (*http.Request, error), body []byte) (*http.Response, []byte, error) {
	req, err := build()
	if err != nil {
		return nil, nil, fmt.Errorf("longrun: building the request: %w", err)
	}
	req = req.WithContext(ctx)
	if err := c.prepare(ctx, req, body); err != nil {
		return nil, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, &TransportError{Method: req.Method, URL: req.URL.Redacted(), Err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, nil, &TransportError{Method: req.Method, URL: req.URL.Redacted(), Err: err}
	}
	if resp.StatusCode >= 400 {
		return resp, b, problemFrom(resp, b, c.clock.Now())
	}
	return resp, b, nil
}

// retryable decides whether a failed attempt is worth another.
type retryable func(error) bool

// transient: no answer at all, or one that says "later": any 5xx but 501 and 505, and a
// 429 that is not quota_exceeded (API Gateway's throttling has no longrun code).
func transient(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return true
	}
	var pe *ProblemError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Status {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusTooManyRequests:
		return pe.Code != ErrorCodeQuotaExceeded
	}
	return false
}

// uncommitted: only answers that say the request changed nothing (503 unavailable, which
// the API sends before anything is committed, and throttling), for calls a blind retry
// could misreport (Cancel with If-Match, Resolve).
func uncommitted(err error) bool {
	var pe *ProblemError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Status == http.StatusServiceUnavailable ||
		(pe.Status == http.StatusTooManyRequests && pe.Code != ErrorCodeQuotaExceeded)
}

// window is the idempotency window a retry loop must stay within (Create only).
type window struct {
	key   string
	first time.Time // when the key was first sent; zero: this call's first attempt
}

// do runs attempt until it succeeds, fails for good, or the retry budget (and, with w, the
// idempotency window) is spent; it returns the last attempt's error.
func (c *Client) do(ctx context.Context, again retryable, w *window, attempt func(ctx context.Context) error) error {
	r := c.retry
	start := c.clock.Now()
	first := start
	resumed := false
	if w != nil && !w.first.IsZero() {
		first, resumed = w.first, true
	}
	var last error
	for n := 1; ; n++ {
		if w != nil && (n > 1 || resumed) && c.clock.Now().Sub(first) > r.RetryWindow {
			return &RetryWindowError{Key: w.key, FirstAttempt: first, Window: r.RetryWindow, Last: last}
		}
		err := attempt(ctx)
		if err == nil || ctx.Err() != nil || !again(err) {
			return err
		}
		last = err
		if n >= r.MaxAttempts {
			return err
		}
		var wait time.Duration
		var pe *ProblemError
		if errors.As(err, &pe) {
			wait = pe.RetryAfter
		}
		if wait <= 0 {
			wait = c.jitter.backoff(n, r.MinDelay, r.MaxDelay)
		}
		next := c.clock.Now().Add(wait)
		if next.Sub(start) > r.MaxElapsed {
			return err
		}
		if w != nil && next.Sub(first) > r.RetryWindow {
			return &RetryWindowError{Key: w.key, FirstAttempt: first, Window: r.RetryWindow, Last: err}
		}
		if serr := c.clock.Sleep(ctx, wait); serr != nil {
			return fmt.Errorf("longrun: %w while waiting to retry after: %w", serr, err)
		}
	}
}

// decodeOperation reads a representation and its headers.
func (c *Client) decodeOperation(resp *http.Response, body []byte) (*Operation, error) {
	var op Operation
	if err := json.Unmarshal(body, &op); err != nil {
		return nil, fmt.Errorf("longrun: decoding the operation (%d %s): %w", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	if op.OperationID == "" || op.State == "" {
		return nil, fmt.Errorf("longrun: the %d response is not an operation: %s", resp.StatusCode, snippet(body))
	}
	op.withHeaders(resp.Header, c.clock.Now())
	return &op, nil
}

// Get reads operation id's representation (GET /v1/operations/{id}). An operation of
// another caller, or none, is a *ProblemError with ErrorCodeNotFound.
func (c *Client) Get(ctx context.Context, id string) (*Operation, error) {
	if id == "" {
		return nil, errors.New("longrun: Get: empty operation id")
	}
	return c.operation(ctx, transient, nil, func() (*http.Request, error) { return api.NewGetOperationRequest(c.server, id) })
}

// operation sends the request build makes (with body, for signing), retrying as again says,
// and decodes the operation it answers.
func (c *Client) operation(ctx context.Context, again retryable, body []byte, build func() (*http.Request, error)) (*Operation, error) {
	var op *Operation
	err := c.do(ctx, again, nil, func(ctx context.Context) error {
		resp, b, err := c.send(ctx, build, body)
		if err != nil {
			return err
		}
		op, err = c.decodeOperation(resp, b)
		return err
	})
	if err != nil {
		return nil, err
	}
	return op, nil
}

// CancelOptions are Cancel's options.
type CancelOptions struct {
	// IfVersion, when set, is sent as If-Match ("<version>"): the cancel is refused with
	// 412 version_mismatch when the operation has moved past that version. Pass the
	// Version of the representation the decision was made on.
	IfVersion *int
}

// Cancel records cancellation intent for operation id (POST /v1/operations/{id}/cancel): a
// request to stop the remaining work, not a rollback. It returns the representation after
// it: cancelling, or canceled when the work never started or was already canceled. An
// operation that already succeeded or failed (or is outcome_unknown) is a *ProblemError
// with ErrorCodeAlreadyTerminal; one past IfVersion, ErrorCodeVersionMismatch. opts may be
// nil.
//
// Without IfVersion a lost answer is retried like a read (recording the intent twice
// changes nothing). With it, only answers that say nothing was committed are: a retry of a
// cancel that was recorded would be refused as a version mismatch.
func (c *Client) Cancel(ctx context.Context, id string, opts *CancelOptions) (*Operation, error) {
	if id == "" {
		return nil, errors.New("longrun: Cancel: empty operation id")
	}
	params := &api.CancelOperationParams{}
	again := retryable(transient)
	if opts != nil && opts.IfVersion != nil {
		etag := `"` + strconv.Itoa(*opts.IfVersion) + `"`
		params.IfMatch = &etag
		again = uncommitted
	}
	return c.operation(ctx, again, nil, func() (*http.Request, error) { return api.NewCancelOperationRequest(c.server, id, params) })
}

// Resolve records an operator's reconciliation of an operation in outcome_unknown (POST
// /v1/operations/{id}/resolve), of any tenant: it becomes succeeded (optionally with a
// result) or failed (optionally with a problem), or, with ResolveRetry, the step whose
// outcome was unknown runs again and the operation is running once more. Callers who are
// not operators get a *ProblemError with ErrorCodeForbidden; an operation in another state,
// ErrorCodeAlreadyTerminal; one past req.IfVersion, ErrorCodeVersionMismatch; a retry past
// the operation's deadline, ErrorCodeDeadlinePassed, and of an unknown outcome whose step
// was not recorded, ErrorCodeNotRetryable (resolve those as succeeded or failed). Only
// answers that say nothing was committed are retried.
func (c *Client) Resolve(ctx context.Context, id string, req ResolveRequest) (*Operation, error) {
	if id == "" {
		return nil, errors.New("longrun: Resolve: empty operation id")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("longrun: Resolve: encoding the request: %w", err)
	}
	params := &api.ResolveOperationParams{}
	if req.IfVersion != nil {
		etag := `"` + strconv.Itoa(*req.IfVersion) + `"`
		params.IfMatch = &etag
	}
	return c.operation(ctx, uncommitted, body, func() (*http.Request, error) {
		return api.NewResolveOperationRequestWithBody(c.server, id, params, "application/json", bytes.NewReader(body))
	})
}

// Types lists the operation types the API admits, sorted by name (GET /v1/operation-types),
// each with the JSON Schema an admission's input must satisfy.
func (c *Client) Types(ctx context.Context) ([]OperationType, error) {
	var list struct {
		Items []OperationType `json:"items"`
	}
	err := c.do(ctx, transient, nil, func(ctx context.Context) error {
		_, body, err := c.send(ctx, func() (*http.Request, error) { return api.NewListOperationTypesRequest(c.server) }, nil)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return fmt.Errorf("longrun: decoding the operation types: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Type reads one operation type (GET /v1/operation-types/{name}); a name the API does not
// admit is a *ProblemError with ErrorCodeNotFound.
func (c *Client) Type(ctx context.Context, name string) (*OperationType, error) {
	if name == "" {
		return nil, errors.New("longrun: Type: empty type name")
	}
	var t OperationType
	err := c.do(ctx, transient, nil, func(ctx context.Context) error {
		_, body, err := c.send(ctx, func() (*http.Request, error) { return api.NewGetOperationTypeRequest(c.server, name) }, nil)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(body, &t); err != nil {
			return fmt.Errorf("longrun: decoding the operation type: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// resolve turns a statusUrl or Location into the absolute URL to poll: relative to the
// base URL, and refused when it would leave the API's origin (the client's credentials
// must not go anywhere else).
func (c *Client) resolve(ref string) (*url.URL, error) {
	u, err := c.base.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("longrun: status URL %q: %w", ref, err)
	}
	if u.Scheme != c.base.Scheme || u.Host != c.base.Host {
		return nil, fmt.Errorf("longrun: status URL %q is not on the API's origin %s://%s", ref, c.base.Scheme, c.base.Host)
	}
	return u, nil
}

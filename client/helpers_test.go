package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/client"
)

var epoch = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// fakeClock is ClientOptions.Clock for tests: its time moves only when the client sleeps
// (at once, the wait recorded) or a test advances it. (The client is a module of its own
// and imports nothing of longrun's module, so it does not share internal/testkit/clocktest.)
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newClock() *fakeClock { return &fakeClock{now: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep returns at once, unless ctx is done, with the clock moved on by d.
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Waits are the client's sleeps, in order.
func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// freshConnections is an HTTP client that opens a connection per request, so net/http
// never replays a request on its own (it retries an idempotent request, which a request
// with an Idempotency-Key is, once when a reused connection turns out closed) and a test
// counts exactly the attempts the client made.
func freshConnections() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

// newClient is a client of srv (under base, e.g. "/prod") with the fake clock and a seeded
// jitter source; opts adjusts the options first.
func newClient(t *testing.T, srv *httptest.Server, clock *fakeClock, opts func(*client.ClientOptions)) *client.Client {
	t.Helper()
	o := &client.ClientOptions{
		HTTPClient: freshConnections(),
		Auth:       client.BearerToken("alice-dev-token"),
		Clock:      clock,
		Rand:       rand.NewPCG(1, 2),
	}
	if opts != nil {
		opts(o)
	}
	c, err := client.New(srv.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const opID = "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3"

// rep is a representation of opID in state at version, as the API writes it.
func rep(state client.State, version int) map[string]any {
	m := map[string]any{
		"operationId":     opID,
		"type":            "demo.task",
		"target":          "demo:invoice-42",
		"state":           string(state),
		"terminal":        state.IsTerminal(),
		"version":         version,
		"statusUrl":       "/v1/operations/" + opID,
		"createdAt":       "2026-11-30T10:00:00Z",
		"updatedAt":       "2026-11-30T10:00:01Z",
		"observedAt":      nil,
		"cancelRequested": state == client.StateCancelling || state == client.StateCanceled,
	}
	switch state {
	case client.StateSucceeded:
		m["result"] = map[string]any{"rowCount": 1234}
	case client.StateFailed:
		m["problem"] = map[string]any{"type": "https://longrun.dev/problems/deadline_exceeded", "title": "Deadline exceeded", "code": "deadline_exceeded", "detail": "The operation ran past its deadline."}
	case client.StateOutcomeUnknown:
		m["problem"] = map[string]any{"type": "https://longrun.dev/problems/worker_error", "title": "Worker error", "code": "worker_error", "detail": "The worker failed after it may have acted."}
	}
	return m
}

// writeRep writes a 200 representation, with Retry-After (seconds) when retryAfter >= 0.
func writeRep(w http.ResponseWriter, m map[string]any, retryAfter int) {
	writeRepStatus(w, http.StatusOK, m, retryAfter)
}

// writeRepStatus is writeRep with another status (202 for a cancel).
func writeRepStatus(w http.ResponseWriter, status int, m map[string]any, retryAfter int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", fmt.Sprintf(`"%v"`, m["version"]))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Request-Id", "req_poll")
	if retryAfter >= 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(m)
}

// problemStatus is the status each code belongs to (the contract's Problem rules; the
// tests that read them from the contract check this table too).
var problemStatus = map[client.ErrorCode]int{
	client.ErrorCodeInvalidInput:             400,
	client.ErrorCodeInvalidIdempotencyKey:    400,
	client.ErrorCodeUnsupportedOperationType: 400,
	client.ErrorCodeUnknownSignal:            400,
	client.ErrorCodeUnauthenticated:          401,
	client.ErrorCodeForbidden:                403,
	client.ErrorCodeNotFound:                 404,
	client.ErrorCodeMethodNotAllowed:         405,
	client.ErrorCodeIdempotencyKeyReused:     409,
	client.ErrorCodeTargetBusy:               409,
	client.ErrorCodeAlreadyTerminal:          409,
	client.ErrorCodeCallbackExpired:          410,
	client.ErrorCodeDeadlinePassed:           409,
	client.ErrorCodeNotRetryable:             409,
	client.ErrorCodeVersionMismatch:          412,
	client.ErrorCodePayloadTooLarge:          413,
	client.ErrorCodeUnsupportedMediaType:     415,
	client.ErrorCodeQuotaExceeded:            429,
	client.ErrorCodeUnavailable:              503,
	client.ErrorCodeInternal:                 500,
}

// writeProblem writes a problem of code (its status from problemStatus), with Retry-After
// when retryAfter >= 0 and detail as its detail.
func writeProblem(w http.ResponseWriter, code client.ErrorCode, retryAfter int, detail string) {
	status := problemStatus[code]
	p := map[string]any{
		"type": "https://longrun.dev/problems/" + string(code), "title": string(code), "status": status,
		"code": string(code), "detail": detail, "requestId": "req_problem",
	}
	if code == client.ErrorCodeIdempotencyKeyReused || code == client.ErrorCodeTargetBusy {
		p["operationId"] = opID
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Request-Id", "req_problem")
	if retryAfter >= 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

// resetConnection answers with a TCP reset: no response at all.
func resetConnection(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	conn := hijack(t, w)
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // close sends RST
	}
	_ = conn.Close()
}

// dropConnection closes the connection without a response, as a load balancer whose
// upstream timed out after the request was handled may.
func dropConnection(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	_ = hijack(t, w).Close()
}

func hijack(t *testing.T, w http.ResponseWriter) net.Conn {
	t.Helper()
	h, ok := w.(http.Hijacker)
	if !ok {
		t.Fatal("the response writer cannot be hijacked")
	}
	conn, _, err := h.Hijack()
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// script serves one path with a sequence of handlers, one per request (the last repeats),
// and fails the test on a request to any other path: proof that the client followed the
// URL it was given rather than building one.
type script struct {
	t     *testing.T
	mu    sync.Mutex
	paths map[string]bool
	steps []http.HandlerFunc
	seen  []*http.Request
}

func newScript(t *testing.T, paths []string, steps ...http.HandlerFunc) (*script, *httptest.Server) {
	s := &script{t: t, paths: map[string]bool{}, steps: steps}
	for _, p := range paths {
		s.paths[p] = true
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := len(s.seen)
	s.seen = append(s.seen, r)
	s.mu.Unlock()
	if !s.paths[r.URL.Path] {
		s.t.Errorf("request %d: %s %s, a path the API never gave", n+1, r.Method, r.URL.Path)
		http.Error(w, "no such path", http.StatusTeapot)
		return
	}
	s.steps[min(n, len(s.steps)-1)](w, r)
}

func (s *script) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...)
}

func (s *script) count() int { return len(s.requests()) }

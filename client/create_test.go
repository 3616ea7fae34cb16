package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/client"
)

// admissions is a fake admission endpoint with the contract's idempotency: a key's first
// request creates an operation and stores its answer; the same key again replays it with
// Idempotent-Replayed; the same key with another body is 409 idempotency_key_reused. before
// runs first on every request (n counts from 1) and may answer instead (returning true), or
// ask, with after, for the connection to be dropped once the operation is committed.
type admissions struct {
	t      *testing.T
	mu     sync.Mutex
	byKey  map[string]admitted
	n      int
	keys   []string
	bodies []string
	before func(n int, w http.ResponseWriter) (handled bool)
	after  func(n int, w http.ResponseWriter) (dropped bool)
}

type admitted struct {
	body string
	resp []byte
}

func newAdmissions(t *testing.T) (*admissions, *httptest.Server) {
	a := &admissions{t: t, byKey: map[string]admitted{}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return a, srv
}

func (a *admissions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.n++
	n := a.n
	key := r.Header.Get("Idempotency-Key")
	a.keys = append(a.keys, key)
	a.bodies = append(a.bodies, string(body))
	a.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/operations" || r.Header.Get("Content-Type") != "application/json" {
		a.t.Errorf("request %d: %s %s (%s)", n, r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	if a.before != nil && a.before(n, w) {
		return
	}
	a.mu.Lock()
	stored, ok := a.byKey[key]
	replay := ok
	if !ok {
		id := opID
		if len(a.byKey) > 0 {
			id = "op_01JDY3Q4W5E6R7T8Y9V0A1B2C" + string(rune('A'+len(a.byKey)))
		}
		resp, _ := json.Marshal(map[string]any{
			"operationId": id, "type": "demo.task", "target": "demo:invoice-42", "state": "accepted",
			"statusUrl": "/v1/operations/" + id, "createdAt": "2026-11-30T10:00:00Z",
		})
		stored = admitted{body: string(body), resp: resp}
		a.byKey[key] = stored
	}
	a.mu.Unlock()
	if replay && stored.body != string(body) {
		writeProblem(w, client.ErrorCodeIdempotencyKeyReused, -1, "This Idempotency-Key was already used with a different request.")
		return
	}
	if a.after != nil && a.after(n, w) {
		return
	}
	var accepted struct {
		StatusURL string `json:"statusUrl"`
	}
	_ = json.Unmarshal(stored.resp, &accepted)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", accepted.StatusURL)
	w.Header().Set("Retry-After", "1")
	if replay {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write(stored.resp)
}

func (a *admissions) operations() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byKey)
}

func (a *admissions) requests() (n int, keys []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n, append([]string(nil), a.keys...)
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestCreateRetriesADroppedResponseWithTheSameKey: the API commits the operation, then the
// connection drops before the answer; Create retries with the key it minted, the retry is
// answered as a replay, and there is one operation.
func TestCreateRetriesADroppedResponseWithTheSameKey(t *testing.T) {
	a, srv := newAdmissions(t)
	a.after = func(n int, w http.ResponseWriter) bool {
		if n == 1 {
			dropConnection(t, w)
			return true
		}
		return false
	}
	clock := newClock()
	c := newClient(t, srv, clock, func(o *client.ClientOptions) {
		o.Retry.MinDelay, o.Retry.MaxDelay = time.Second, 10*time.Second
	})
	op, err := c.Create(context.Background(), client.CreateRequest{Type: "demo.task", Input: map[string]any{"target": "invoice-42"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, keys := a.requests()
	if n != 2 || keys[0] != keys[1] || !uuidV4.MatchString(keys[0]) {
		t.Fatalf("%d requests with keys %q, want 2 with one minted key", n, keys)
	}
	if a.operations() != 1 {
		t.Errorf("%d operations, want 1", a.operations())
	}
	if op.OperationID != opID || !op.Replayed || op.IdempotencyKey != keys[0] || op.State != client.StateAccepted || op.Location != "/v1/operations/"+opID {
		t.Errorf("got %+v", op)
	}
	if w := clock.Waits(); len(w) != 1 || w[0] < time.Second || w[0] > 2*time.Second {
		t.Errorf("waits %v, want one backoff in [1s, 2s]", w)
	}
}

// TestCreateRetriesAConnectionReset: a reset before anything was committed; the retry, with
// the same key, creates the operation (not a replay).
func TestCreateRetriesAConnectionReset(t *testing.T) {
	a, srv := newAdmissions(t)
	a.before = func(n int, w http.ResponseWriter) bool {
		if n <= 2 {
			resetConnection(t, w)
			return true
		}
		return false
	}
	c := newClient(t, srv, newClock(), nil)
	op, err := c.Create(context.Background(), client.CreateRequest{Type: "demo.task", Key: "k-reset"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, keys := a.requests()
	if n != 3 || keys[0] != "k-reset" || keys[1] != "k-reset" || keys[2] != "k-reset" || a.operations() != 1 || op.Replayed {
		t.Errorf("%d requests (%q), %d operations, replayed %t", n, keys, a.operations(), op.Replayed)
	}
}

// TestCreateWaitsRetryAfterOn503: 503 unavailable with Retry-After is waited exactly and
// retried with the same key.
func TestCreateWaitsRetryAfterOn503(t *testing.T) {
	a, srv := newAdmissions(t)
	a.before = func(n int, w http.ResponseWriter) bool {
		if n == 1 {
			writeProblem(w, client.ErrorCodeUnavailable, 3, "throttled")
			return true
		}
		return false
	}
	clock := newClock()
	op, err := newClient(t, srv, clock, nil).Create(context.Background(), client.CreateRequest{Type: "demo.task", Key: "k-503"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, keys := a.requests()
	if n != 2 || keys[1] != "k-503" || op.Replayed {
		t.Errorf("%d requests (%q), replayed %t", n, keys, op.Replayed)
	}
	if w := clock.Waits(); len(w) != 1 || w[0] != 3*time.Second {
		t.Errorf("waits %v, want [3s]", w)
	}
}

// TestCreateReturnsKeyReusedTyped: the same key with another request is a typed 409 naming
// the operation the key was first used for, and is not retried.
func TestCreateReturnsKeyReusedTyped(t *testing.T) {
	a, srv := newAdmissions(t)
	clock := newClock()
	c := newClient(t, srv, clock, nil)
	first, err := c.Create(context.Background(), client.CreateRequest{Type: "demo.task", Input: map[string]any{"target": "a"}, Key: "k-409"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(context.Background(), client.CreateRequest{Type: "demo.task", Input: map[string]any{"target": "b"}, Key: "k-409"}, nil)
	var pe *client.ProblemError
	if !errors.As(err, &pe) || pe.Status != http.StatusConflict || pe.Code != client.ErrorCodeIdempotencyKeyReused ||
		pe.OperationID != first.OperationID || !client.IsCode(err, client.ErrorCodeIdempotencyKeyReused) {
		t.Fatalf("got %v, want 409 idempotency_key_reused naming %s", err, first.OperationID)
	}
	if n, _ := a.requests(); n != 2 || len(clock.Waits()) != 0 {
		t.Errorf("%d requests, waits %v: the 409 was retried", n, clock.Waits())
	}
}

// TestCreateDoesNotRetryRealAnswers: 400, 409 target_busy, 413, 415 and 429 quota_exceeded
// are answers: one request each, returned typed. 429 quota_exceeded is retried only when
// asked for, and API Gateway's throttling (429 without a code) always.
func TestCreateDoesNotRetryRealAnswers(t *testing.T) {
	for _, code := range []client.ErrorCode{client.ErrorCodeInvalidInput, client.ErrorCodeUnsupportedOperationType,
		client.ErrorCodeTargetBusy, client.ErrorCodePayloadTooLarge, client.ErrorCodeUnsupportedMediaType, client.ErrorCodeQuotaExceeded} {
		t.Run(string(code), func(t *testing.T) {
			a, srv := newAdmissions(t)
			a.before = func(n int, w http.ResponseWriter) bool {
				writeProblem(w, code, 1, "no")
				return true
			}
			clock := newClock()
			_, err := newClient(t, srv, clock, nil).Create(context.Background(), client.CreateRequest{Type: "demo.task"}, nil)
			if !client.IsCode(err, code) {
				t.Fatalf("got %v, want %s", err, code)
			}
			if n, _ := a.requests(); n != 1 || len(clock.Waits()) != 0 {
				t.Errorf("%d requests, waits %v; want one request", n, clock.Waits())
			}
		})
	}
	t.Run("quota_exceeded when asked", func(t *testing.T) {
		a, srv := newAdmissions(t)
		a.before = func(n int, w http.ResponseWriter) bool {
			if n == 1 {
				writeProblem(w, client.ErrorCodeQuotaExceeded, 5, "at quota")
				return true
			}
			return false
		}
		clock := newClock()
		c := newClient(t, srv, clock, func(o *client.ClientOptions) { o.Retry.RetryQuotaExceeded = true })
		if _, err := c.Create(context.Background(), client.CreateRequest{Type: "demo.task"}, nil); err != nil {
			t.Fatal(err)
		}
		if n, keys := a.requests(); n != 2 || keys[0] != keys[1] || len(clock.Waits()) != 1 || clock.Waits()[0] != 5*time.Second {
			t.Errorf("%d requests (%q), waits %v", n, keys, clock.Waits())
		}
	})
	t.Run("gateway throttling", func(t *testing.T) {
		a, srv := newAdmissions(t)
		a.before = func(n int, w http.ResponseWriter) bool {
			if n == 1 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"message":"Too Many Requests"}`))
				return true
			}
			return false
		}
		if _, err := newClient(t, srv, newClock(), nil).Create(context.Background(), client.CreateRequest{Type: "demo.task"}, nil); err != nil {
			t.Fatal(err)
		}
		if n, keys := a.requests(); n != 2 || keys[0] != keys[1] {
			t.Errorf("%d requests (%q)", n, keys)
		}
	})
}

// TestCreateRefusesToRetryPastTheWindow: once the first attempt is older than the window the
// client knows, it does not send the key again, and says so with a typed error that still
// carries the failure it would have retried.
func TestCreateRefusesToRetryPastTheWindow(t *testing.T) {
	t.Run("the first attempt took too long", func(t *testing.T) {
		a, srv := newAdmissions(t)
		clock := newClock()
		a.before = func(n int, w http.ResponseWriter) bool {
			clock.Advance(client.DefaultRetryWindow + time.Minute) // the client stalled that long
			writeProblem(w, client.ErrorCodeUnavailable, 1, "down")
			return true
		}
		_, err := newClient(t, srv, clock, func(o *client.ClientOptions) { o.Retry.MaxElapsed = 48 * time.Hour }).
			Create(context.Background(), client.CreateRequest{Type: "demo.task", Key: "k-old"}, nil)
		var we *client.RetryWindowError
		if !errors.Is(err, client.ErrRetryWindowPassed) || !errors.As(err, &we) || we.Key != "k-old" || !we.FirstAttempt.Equal(epoch) || we.Window != client.DefaultRetryWindow {
			t.Fatalf("got %v, want a RetryWindowError", err)
		}
		if !client.IsCode(err, client.ErrorCodeUnavailable) {
			t.Errorf("the refusal does not carry the 503 it would have retried: %v", err)
		}
		if n, _ := a.requests(); n != 1 || len(clock.Waits()) != 0 {
			t.Errorf("%d requests, waits %v; want 1 and none", n, clock.Waits())
		}
	})
	t.Run("the wait would end past it", func(t *testing.T) {
		a, srv := newAdmissions(t)
		a.before = func(n int, w http.ResponseWriter) bool {
			writeProblem(w, client.ErrorCodeUnavailable, 120, "down")
			return true
		}
		clock := newClock()
		_, err := newClient(t, srv, clock, nil).Create(context.Background(), client.CreateRequest{Type: "demo.task", Key: "k-late"},
			&client.CreateOptions{FirstAttempt: epoch.Add(-client.DefaultRetryWindow + time.Minute)})
		if !errors.Is(err, client.ErrRetryWindowPassed) {
			t.Fatalf("got %v", err)
		}
		if n, _ := a.requests(); n != 1 || len(clock.Waits()) != 0 {
			t.Errorf("%d requests, waits %v; want 1 and no wait", n, clock.Waits())
		}
	})
	t.Run("a key first sent a day ago", func(t *testing.T) {
		a, srv := newAdmissions(t)
		_, err := newClient(t, srv, newClock(), nil).Create(context.Background(), client.CreateRequest{Type: "demo.task", Key: "k-day"},
			&client.CreateOptions{FirstAttempt: epoch.Add(-24 * time.Hour)})
		var we *client.RetryWindowError
		if !errors.As(err, &we) || we.Last != nil || !errors.Is(err, client.ErrRetryWindowPassed) {
			t.Fatalf("got %v", err)
		}
		if n, _ := a.requests(); n != 0 {
			t.Errorf("%d requests, want none", n)
		}
	})
	t.Run("a key first sent within it", func(t *testing.T) {
		a, srv := newAdmissions(t)
		op, err := newClient(t, srv, newClock(), nil).Create(context.Background(), client.CreateRequest{Type: "demo.task", Key: "k-hour"},
			&client.CreateOptions{FirstAttempt: epoch.Add(-time.Hour)})
		if err != nil || op.OperationID != opID {
			t.Fatalf("got %v, %v", op, err)
		}
		if n, _ := a.requests(); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("a shorter window", func(t *testing.T) {
		a, srv := newAdmissions(t)
		a.before = func(n int, w http.ResponseWriter) bool {
			writeProblem(w, client.ErrorCodeUnavailable, 40, "down")
			return true
		}
		clock := newClock()
		_, err := newClient(t, srv, clock, func(o *client.ClientOptions) { o.Retry.RetryWindow = 90 * time.Second }).
			Create(context.Background(), client.CreateRequest{Type: "demo.task"}, nil)
		if !errors.Is(err, client.ErrRetryWindowPassed) {
			t.Fatalf("got %v", err)
		}
		if n, _ := a.requests(); n != 3 || len(clock.Waits()) != 2 {
			t.Errorf("%d requests, waits %v; want 3 requests (at 0, 40 and 80 s) and no third wait", n, clock.Waits())
		}
	})
}

// TestCreateBudget: retries stop at MaxAttempts, and before a wait that would end past
// MaxElapsed, with the last failure.
func TestCreateBudget(t *testing.T) {
	t.Run("attempts", func(t *testing.T) {
		a, srv := newAdmissions(t)
		a.before = func(n int, w http.ResponseWriter) bool {
			writeProblem(w, client.ErrorCodeUnavailable, 1, "down")
			return true
		}
		clock := newClock()
		_, err := newClient(t, srv, clock, func(o *client.ClientOptions) { o.Retry.MaxAttempts = 3 }).
			Create(context.Background(), client.CreateRequest{Type: "demo.task"}, nil)
		if !client.IsCode(err, client.ErrorCodeUnavailable) {
			t.Fatalf("got %v", err)
		}
		if n, keys := a.requests(); n != 3 || keys[0] != keys[2] || len(clock.Waits()) != 2 {
			t.Errorf("%d requests (%q), waits %v", n, keys, clock.Waits())
		}
	})
	t.Run("time", func(t *testing.T) {
		a, srv := newAdmissions(t)
		a.before = func(n int, w http.ResponseWriter) bool {
			writeProblem(w, client.ErrorCodeUnavailable, 100, "down")
			return true
		}
		clock := newClock()
		_, err := newClient(t, srv, clock, func(o *client.ClientOptions) { o.Retry.MaxElapsed = time.Minute }).
			Create(context.Background(), client.CreateRequest{Type: "demo.task"}, nil)
		if !client.IsCode(err, client.ErrorCodeUnavailable) {
			t.Fatalf("got %v", err)
		}
		if n, _ := a.requests(); n != 1 || len(clock.Waits()) != 0 {
			t.Errorf("%d requests, waits %v", n, clock.Waits())
		}
	})
	t.Run("transport failures to the end", func(t *testing.T) {
		a, srv := newAdmissions(t)
		a.before = func(n int, w http.ResponseWriter) bool {
			resetConnection(t, w)
			return true
		}
		clock := newClock()
		_, err := newClient(t, srv, clock, func(o *client.ClientOptions) {
			o.Retry.MaxAttempts, o.Retry.MinDelay, o.Retry.MaxDelay = 4, time.Second, 3*time.Second
		}).Create(context.Background(), client.CreateRequest{Type: "demo.task"}, nil)
		var te *client.TransportError
		if !errors.As(err, &te) || te.Method != http.MethodPost {
			t.Fatalf("got %v, want a *TransportError", err)
		}
		w := clock.Waits()
		if n, _ := a.requests(); n != 4 || len(w) != 3 {
			t.Fatalf("%d requests, waits %v", n, w)
		}
		for i, d := range w {
			if ceiling := min(3*time.Second, time.Second<<(i+1)); d < time.Second || d > ceiling {
				t.Errorf("wait %d: %v, outside [1s, %v]", i+1, d, ceiling)
			}
		}
	})
}

// TestCreateSendsTheRequest: the caller's key, the body {"type", "input"} with the input as
// given (nil as {}), JSON; a key the API would refuse is refused before anything is sent.
func TestCreateSendsTheRequest(t *testing.T) {
	a, srv := newAdmissions(t)
	c := newClient(t, srv, newClock(), nil)
	if _, err := c.Create(context.Background(), client.CreateRequest{Type: "export.orders", Input: json.RawMessage(`{"from":"2026-09-01","to":"2026-09-23"}`), Key: "my-key"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), client.CreateRequest{Type: "demo.task", Key: "other-key"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, keys := a.requests(); keys[0] != "my-key" || keys[1] != "other-key" {
		t.Errorf("keys %q", keys)
	}
	want := []string{`{"type":"export.orders","input":{"from":"2026-09-01","to":"2026-09-23"}}`, `{"type":"demo.task","input":{}}`}
	for i, b := range a.bodies {
		if b != want[i] {
			t.Errorf("body %d: %s, want %s", i, b, want[i])
		}
	}
	for _, bad := range []string{"line\nbreak", string(make([]byte, 129)), "é"} {
		if _, err := c.Create(context.Background(), client.CreateRequest{Type: "demo.task", Key: bad}, nil); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
	if n, _ := a.requests(); n != 2 {
		t.Errorf("%d requests, want 2: a bad key was sent", n)
	}
}

func TestNewIdempotencyKey(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		k := client.NewIdempotencyKey()
		if !uuidV4.MatchString(k) || seen[k] {
			t.Fatalf("key %q: not a fresh UUIDv4", k)
		}
		seen[k] = true
	}
}

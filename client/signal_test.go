package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/client"
)

const signalPath = "/v1/operations/" + opID + "/signals/approval"

// signals is a fake signal endpoint with the contract's idempotency: a key's first request
// records the signal (the version goes up) and answers 202 with the representation; the
// same key with the same body is a replay (Idempotent-Replayed); with another body, 409
// idempotency_key_reused. before runs first on every request (n counts from 1) and may
// answer instead; after runs once the signal is recorded and may drop the connection.
type signals struct {
	t       *testing.T
	mu      sync.Mutex
	version int
	byKey   map[string]string // key → the body it delivered
	seen    []*http.Request
	bodies  []string
	before  func(n int, w http.ResponseWriter, r *http.Request) (handled bool)
	after   func(n int, w http.ResponseWriter) (dropped bool)
}

func newSignals(t *testing.T) (*signals, *httptest.Server) {
	s := &signals{t: t, version: 4, byKey: map[string]string{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// awaiting is the representation of opID at version, its work waiting for an approval.
func awaiting(version int) map[string]any {
	m := rep(client.StateRunning, version)
	m["awaiting"] = map[string]any{"signal": "approval", "since": "2026-11-30T10:00:03.000Z", "until": "2026-12-01T10:00:03.000Z"}
	return m
}

func (s *signals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, r)
	s.bodies = append(s.bodies, string(body))
	n := len(s.seen)
	s.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/operations/"+opID+"/signals/") {
		s.t.Errorf("request %d: %s %s", n, r.Method, r.URL.Path)
	}
	if s.before != nil && s.before(n, w, r) {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	first, replay := s.byKey[key]
	if !replay {
		s.byKey[key] = string(body)
		s.version++
	}
	version := s.version
	s.mu.Unlock()
	if replay && first != string(body) {
		writeProblem(w, client.ErrorCodeIdempotencyKeyReused, -1, "This Idempotency-Key was already used with a different signal on this operation.")
		return
	}
	if s.after != nil && s.after(n, w) {
		return
	}
	w.Header().Set("Location", "/v1/operations/"+opID)
	if replay {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeRepStatus(w, http.StatusAccepted, awaiting(version), 1)
}

// at is the fake operation's version.
func (s *signals) at() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

func (s *signals) requests() ([]*http.Request, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...), append([]string(nil), s.bodies...)
}

// Signal posts the data to the signal's path with the key, If-Match from IfVersion and
// JSON; the answer is the representation with its awaiting, the key, the Location and the
// headers' ETag and Retry-After.
func TestSignalSendsTheKeyTheVersionAndTheData(t *testing.T) {
	s, srv := newSignals(t)
	c := newClient(t, srv, newClock(), nil)
	version := 4
	op, err := c.Signal(context.Background(), opID, "approval", map[string]any{"approved": true, "comment": "<ok>"},
		&client.SignalOptions{Key: "approval-1", IfVersion: &version})
	if err != nil {
		t.Fatal(err)
	}
	reqs, bodies := s.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.URL.Path != signalPath || r.Header.Get("Idempotency-Key") != "approval-1" || r.Header.Get("If-Match") != `"4"` ||
		r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer alice-dev-token" {
		t.Errorf("request %s %v", r.URL.Path, r.Header)
	}
	if bodies[0] != `{"approved":true,"comment":"\u003cok\u003e"}` && bodies[0] != `{"approved":true,"comment":"<ok>"}` {
		t.Errorf("body %s", bodies[0])
	}
	since := time.Date(2026, 11, 30, 10, 0, 3, 0, time.UTC)
	if op.OperationID != opID || op.Version != 5 || op.State != client.StateRunning || op.Replayed || op.IdempotencyKey != "approval-1" ||
		op.Location != "/v1/operations/"+opID || op.ETag != `"5"` || op.RetryAfter != time.Second || op.RequestID != "req_poll" {
		t.Errorf("got %+v", op)
	}
	if a := op.Awaiting; a == nil || a.Signal != "approval" || !a.Since.Equal(since) || !a.Until.Equal(since.Add(24*time.Hour)) {
		t.Errorf("awaiting %+v", op.Awaiting)
	}
}

// Without a key Signal mints one, sends it and returns it; without data it sends {}; without
// IfVersion no If-Match.
func TestSignalMintsAKeyAndSendsAnEmptyObject(t *testing.T) {
	s, srv := newSignals(t)
	c := newClient(t, srv, newClock(), nil)
	op, err := c.Signal(context.Background(), opID, "approval", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs, bodies := s.requests()
	key := reqs[0].Header.Get("Idempotency-Key")
	if !uuidV4.MatchString(key) || op.IdempotencyKey != key || bodies[0] != "{}" || reqs[0].Header.Get("If-Match") != "" {
		t.Errorf("key %q (returned %q), body %s, If-Match %q", key, op.IdempotencyKey, bodies[0], reqs[0].Header.Get("If-Match"))
	}
	// json.RawMessage goes out as it is.
	if _, err := c.Signal(context.Background(), opID, "approval", json.RawMessage(`{"approved":false}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, bodies := s.requests(); bodies[1] != `{"approved":false}` {
		t.Errorf("body %s", bodies[1])
	}
}

// The signal is recorded, then the connection drops before the answer; a 503 follows.
// Signal retries with the same key and body (with If-Match too: the API recognizes the
// replay first), the retry is answered as a replay, and the operation heard the signal once.
func TestSignalRetriesALostAnswerWithTheSameKey(t *testing.T) {
	s, srv := newSignals(t)
	s.after = func(n int, w http.ResponseWriter) bool {
		if n == 1 {
			dropConnection(t, w)
			return true
		}
		return false
	}
	s.before = func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 2 {
			writeProblem(w, client.ErrorCodeUnavailable, 2, "The table is not answering.")
			return true
		}
		return false
	}
	clock := newClock()
	c := newClient(t, srv, clock, func(o *client.ClientOptions) { o.Retry.MinDelay, o.Retry.MaxDelay = time.Second, 10*time.Second })
	version := 4
	op, err := c.Signal(context.Background(), opID, "approval", map[string]bool{"approved": true}, &client.SignalOptions{IfVersion: &version})
	if err != nil {
		t.Fatal(err)
	}
	reqs, bodies := s.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Header.Get("Idempotency-Key") != op.IdempotencyKey || bodies[i] != bodies[0] || r.Header.Get("If-Match") != `"4"` {
			t.Errorf("attempt %d: key %q If-Match %q body %s; want key %q", i+1, r.Header.Get("Idempotency-Key"), r.Header.Get("If-Match"), bodies[i], op.IdempotencyKey)
		}
	}
	if !op.Replayed || op.Version != 5 || s.at() != 5 {
		t.Errorf("replayed %t, version %d, the fake at %d", op.Replayed, op.Version, s.at())
	}
	if waits := clock.Waits(); len(waits) != 2 || waits[1] != 2*time.Second {
		t.Errorf("waited %v, want a backoff then the 503's Retry-After (2s)", waits)
	}
}

// The same key with other data is a conflict naming the operation, and is not retried.
func TestSignalKeyReusedIsAConflict(t *testing.T) {
	s, srv := newSignals(t)
	c := newClient(t, srv, newClock(), nil)
	opts := &client.SignalOptions{Key: "k-1"}
	if _, err := c.Signal(context.Background(), opID, "approval", map[string]bool{"approved": true}, opts); err != nil {
		t.Fatal(err)
	}
	again, err := c.Signal(context.Background(), opID, "approval", map[string]bool{"approved": true}, opts)
	if err != nil || !again.Replayed {
		t.Fatalf("the same signal again: %+v %v", again, err)
	}
	_, err = c.Signal(context.Background(), opID, "approval", map[string]bool{"approved": false}, opts)
	var pe *client.ProblemError
	if !errors.As(err, &pe) || pe.Code != client.ErrorCodeIdempotencyKeyReused || pe.Status != 409 || pe.OperationID != opID {
		t.Fatalf("got %v", err)
	}
	if reqs, _ := s.requests(); len(reqs) != 3 || s.at() != 5 {
		t.Errorf("%d requests, version %d", len(reqs), s.at())
	}
}

// Every refusal is a typed *ProblemError, sent once (a refusal records nothing, and is an
// answer, not a fault): the codes the contract lists for the route.
func TestSignalRefusalsAreTypedAndNotRetried(t *testing.T) {
	for _, code := range []client.ErrorCode{
		client.ErrorCodeUnknownSignal, client.ErrorCodeInvalidInput, client.ErrorCodeInvalidIdempotencyKey,
		client.ErrorCodeForbidden, client.ErrorCodeNotFound, client.ErrorCodeAlreadyTerminal, client.ErrorCodeVersionMismatch,
		client.ErrorCodePayloadTooLarge, client.ErrorCodeUnsupportedMediaType,
	} {
		t.Run(string(code), func(t *testing.T) {
			s, srv := newSignals(t)
			s.before = func(n int, w http.ResponseWriter, r *http.Request) bool {
				writeProblem(w, code, -1, "refused: "+string(code))
				return true
			}
			c := newClient(t, srv, newClock(), nil)
			_, err := c.Signal(context.Background(), opID, "approval", map[string]bool{"approved": true}, nil)
			var pe *client.ProblemError
			if !errors.As(err, &pe) || pe.Code != code || pe.Status != problemStatus[code] || pe.Detail != "refused: "+string(code) || !client.IsCode(err, code) {
				t.Fatalf("got %v", err)
			}
			if reqs, _ := s.requests(); len(reqs) != 1 {
				t.Errorf("%d attempts, want 1", len(reqs))
			}
		})
	}
}

// What the API would refuse without a doubt is refused before anything is sent.
func TestSignalRefusesWhatItCannotSend(t *testing.T) {
	s, srv := newSignals(t)
	c := newClient(t, srv, newClock(), nil)
	for _, tc := range []struct {
		id, name, key string
		data          any
		want          string
	}{
		{"", "approval", "", nil, "empty operation id"},
		{opID, "", "", nil, "empty signal name"},
		{opID, "approval", "k\n", nil, "only printable ASCII"},
		{opID, "approval", strings.Repeat("k", 129), nil, "at most 128"},
		{opID, "approval", "", func() {}, "encoding the data"},
	} {
		_, err := c.Signal(context.Background(), tc.id, tc.name, tc.data, &client.SignalOptions{Key: tc.key})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "longrun: Signal: ") {
			t.Errorf("%q %q %q: %v, want %q", tc.id, tc.name, tc.key, err, tc.want)
		}
	}
	if reqs, _ := s.requests(); len(reqs) != 0 {
		t.Errorf("%d requests sent", len(reqs))
	}
}

package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/client"
)

// Paths no client would build: the poller must get them from Location and statusUrl.
const (
	locationPath = "/tenant-x/stage-7/v1/operations/" + opID
	movedPath    = "/elsewhere/v1/operations/" + opID
)

// at is a representation whose statusUrl is path.
func at(path string, state client.State, version int) map[string]any {
	m := rep(state, version)
	m["statusUrl"] = path
	return m
}

// withProgress adds progress to a representation.
func withProgress(m map[string]any, completed, total int, percent float64, msg string) map[string]any {
	m["progress"] = map[string]any{"completedSteps": completed, "totalSteps": total, "percent": percent, "message": msg}
	return m
}

func accepted(path string) *client.Operation {
	return &client.Operation{OperationID: opID, State: client.StateAccepted, StatusURL: path, Location: path, RetryAfter: time.Second}
}

type change struct {
	state    client.State
	version  int
	progress int
}

func recordChanges(into *[]change) func(client.Operation) {
	return func(op client.Operation) {
		c := change{state: op.State, version: op.Version, progress: -1}
		if op.Progress != nil {
			c.progress = op.Progress.CompletedSteps
		}
		*into = append(*into, c)
	}
}

// TestPollerFollowsTheOperation: against a server that serves the status only under the
// paths its Location and statusUrl name, resets a connection, answers 503 and repeats
// itself, the poller waits each Retry-After exactly (the admission's before the first poll),
// backs off within bounds after the reset, reports each change once and ends at succeeded.
func TestPollerFollowsTheOperation(t *testing.T) {
	s, srv := newScript(t, []string{locationPath, movedPath},
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, at(movedPath, client.StateRunning, 2), 2) },
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, at(movedPath, client.StateRunning, 2), 2) },
		func(w http.ResponseWriter, r *http.Request) { resetConnection(t, w) },
		func(w http.ResponseWriter, r *http.Request) { writeProblem(w, client.ErrorCodeUnavailable, 4, "busy") },
		func(w http.ResponseWriter, r *http.Request) {
			writeRep(w, withProgress(at(movedPath, client.StateRunning, 3), 1, 3, 33.3, "Step 1 of 3."), 3)
		},
		func(w http.ResponseWriter, r *http.Request) {
			writeRep(w, withProgress(at(movedPath, client.StateRunning, 3), 1, 3, 33.3, "Step 1 of 3."), 3)
		},
		func(w http.ResponseWriter, r *http.Request) {
			writeRep(w, withProgress(at(movedPath, client.StateSucceeded, 4), 3, 3, 100, "Done."), -1)
		},
	)
	clock := newClock()
	c := newClient(t, srv, clock, nil)
	p, err := c.NewPoller(accepted(locationPath))
	if err != nil {
		t.Fatal(err)
	}
	var changes []change
	op, err := p.PollUntilDone(context.Background(), &client.PollOptions{MinDelay: time.Second, MaxDelay: 8 * time.Second, OnChange: recordChanges(&changes)})
	if err != nil {
		t.Fatal(err)
	}
	if op.State != client.StateSucceeded || op.Version != 4 || !p.Done() || op.Err() != nil {
		t.Fatalf("ended with %+v", op)
	}
	var result struct{ RowCount int }
	if err := op.DecodeResult(&result); err != nil || result.RowCount != 1234 {
		t.Errorf("result %+v, %v", result, err)
	}
	wantChanges := []change{{client.StateRunning, 2, -1}, {client.StateRunning, 3, 1}, {client.StateSucceeded, 4, 3}}
	if !slices.Equal(changes, wantChanges) {
		t.Errorf("OnChange saw %v, want %v", changes, wantChanges)
	}
	waits := clock.Waits()
	// 1 s (the 202), 2 s, 2 s, a backoff after the reset, 4 s (the 503), 3 s, 3 s.
	if len(waits) != 7 {
		t.Fatalf("waits %v", waits)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, -1, 4 * time.Second, 3 * time.Second, 3 * time.Second} {
		if want >= 0 && waits[i] != want {
			t.Errorf("wait %d: %v, want %v (Retry-After)", i+1, waits[i], want)
		}
	}
	// The reset is the third poll with nothing new since the change at the first: its
	// backoff's ceiling is 1 s·2³.
	if waits[3] < time.Second || waits[3] > 8*time.Second {
		t.Errorf("backoff after the reset: %v, outside [1s, 8s]", waits[3])
	}
	paths := []string{}
	for _, r := range s.requests() {
		paths = append(paths, r.URL.Path)
		if r.Method != http.MethodGet || r.Header.Get("Authorization") != "Bearer alice-dev-token" {
			t.Errorf("%s %s with %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
	}
	if paths[0] != locationPath || slices.ContainsFunc(paths[1:], func(p string) bool { return p != movedPath }) || len(paths) != 7 {
		t.Errorf("polled %v: want Location first, then the statusUrl", paths)
	}
	// Done: no more I/O.
	if again, err := p.Poll(context.Background()); err != nil || again.Version != 4 || s.count() != 7 {
		t.Errorf("Poll after done: %v, %v, %d requests", again, err, s.count())
	}
}

// TestPollerStopsAtEveryEnd: succeeded, failed, canceled and outcome_unknown end polling
// with the operation and a nil error, typed result or problem included.
func TestPollerStopsAtEveryEnd(t *testing.T) {
	for _, end := range []client.State{client.StateSucceeded, client.StateFailed, client.StateCanceled, client.StateOutcomeUnknown} {
		t.Run(string(end), func(t *testing.T) {
			s, srv := newScript(t, []string{"/v1/operations/" + opID},
				func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateRunning, 2), 1) },
				func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(end, 3), -1) },
				func(w http.ResponseWriter, r *http.Request) {
					t.Errorf("polled after %s", end)
					writeRep(w, rep(end, 3), -1)
				},
			)
			p, err := newClient(t, srv, newClock(), nil).NewPoller(&client.Operation{StatusURL: "/v1/operations/" + opID})
			if err != nil {
				t.Fatal(err)
			}
			op, err := p.PollUntilDone(context.Background(), nil)
			if err != nil || op.State != end || !p.Done() || s.count() != 2 {
				t.Fatalf("got %+v, %v after %d polls", op, err, s.count())
			}
			if r, err := p.Result(); err != nil || r.State != end {
				t.Errorf("Result: %v, %v", r, err)
			}
			var oe *client.OperationError
			switch end {
			case client.StateSucceeded:
				if op.Err() != nil || len(op.Result) == 0 {
					t.Errorf("succeeded: Err %v, result %s", op.Err(), op.Result)
				}
			case client.StateCanceled:
				if !errors.As(op.Err(), &oe) || oe.State != end {
					t.Errorf("Err %v", op.Err())
				}
			default:
				if !errors.As(op.Err(), &oe) || oe.Problem == nil || oe.Problem.Code != op.Problem.Code || op.Problem.Code == "" {
					t.Errorf("Err %v, problem %+v", op.Err(), op.Problem)
				}
			}
		})
	}
}

// TestPollerStopsOnAnswersPollingCannotChange: 401, 403 and 404 end polling with their typed
// error, which Result keeps; nothing is polled again.
func TestPollerStopsOnAnswersPollingCannotChange(t *testing.T) {
	for _, code := range []client.ErrorCode{client.ErrorCodeUnauthenticated, client.ErrorCodeForbidden, client.ErrorCodeNotFound} {
		t.Run(string(code), func(t *testing.T) {
			s, srv := newScript(t, []string{"/v1/operations/" + opID},
				func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateRunning, 2), 1) },
				func(w http.ResponseWriter, r *http.Request) { writeProblem(w, code, -1, "no") },
				func(w http.ResponseWriter, r *http.Request) { t.Errorf("polled after %s", code) },
			)
			p, err := newClient(t, srv, newClock(), nil).NewPoller(&client.Operation{StatusURL: "/v1/operations/" + opID})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.PollUntilDone(context.Background(), nil)
			var pe *client.ProblemError
			if !errors.As(err, &pe) || pe.Code != code || pe.Status != problemStatus[code] {
				t.Fatalf("got %v, want %s", err, code)
			}
			if _, rerr := p.Result(); !p.Done() || !client.IsCode(rerr, code) {
				t.Errorf("Done %t, Result %v", p.Done(), rerr)
			}
			if _, perr := p.Poll(context.Background()); !client.IsCode(perr, code) || s.count() != 2 {
				t.Errorf("Poll after the stop: %v, %d requests", perr, s.count())
			}
		})
	}
}

// TestPollerFailureBudget: MaxTransientFailures consecutive failures are survived (a success
// starts the count again); one more ends polling with the last of them.
func TestPollerFailureBudget(t *testing.T) {
	failing := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if n%2 == 0 {
				resetConnection(t, w)
				return
			}
			writeProblem(w, client.ErrorCodeUnavailable, 1, fmt.Sprintf("failure %d", n))
		}
	}
	running := func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateRunning, 2), 1) }
	t.Run("survived", func(t *testing.T) {
		steps := []http.HandlerFunc{failing(1), failing(2), failing(3), running, failing(5), failing(6), failing(7),
			func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateSucceeded, 3), -1) }}
		s, srv := newScript(t, []string{"/v1/operations/" + opID}, steps...)
		p, _ := newClient(t, srv, newClock(), nil).NewPoller(&client.Operation{StatusURL: "/v1/operations/" + opID})
		op, err := p.PollUntilDone(context.Background(), &client.PollOptions{MaxTransientFailures: 3})
		if err != nil || op.State != client.StateSucceeded || s.count() != 8 {
			t.Fatalf("got %v, %v after %d polls", op, err, s.count())
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		steps := []http.HandlerFunc{running, failing(1), failing(2), failing(3), failing(5),
			func(w http.ResponseWriter, r *http.Request) { t.Error("polled past the budget") }}
		s, srv := newScript(t, []string{"/v1/operations/" + opID}, steps...)
		p, _ := newClient(t, srv, newClock(), nil).NewPoller(&client.Operation{StatusURL: "/v1/operations/" + opID})
		_, err := p.PollUntilDone(context.Background(), &client.PollOptions{MaxTransientFailures: 3})
		var pe *client.ProblemError
		if !errors.As(err, &pe) || pe.Detail != "failure 5" || s.count() != 5 {
			t.Fatalf("got %v after %d polls, want the fourth failure's (failure 5) after 5", err, s.count())
		}
		if p.Done() {
			t.Error("a transient failure stopped the poller for good")
		}
	})
	t.Run("none tolerated", func(t *testing.T) {
		s, srv := newScript(t, []string{"/v1/operations/" + opID}, failing(2))
		p, _ := newClient(t, srv, newClock(), nil).NewPoller(&client.Operation{StatusURL: "/v1/operations/" + opID})
		_, err := p.PollUntilDone(context.Background(), &client.PollOptions{MaxTransientFailures: -1})
		var te *client.TransportError
		if !errors.As(err, &te) || s.count() != 1 {
			t.Fatalf("got %v after %d polls", err, s.count())
		}
	})
}

// TestPollerBackoffJitter: with no Retry-After, the n-th wait since the last change is drawn
// from [MinDelay, min(MaxDelay, MinDelay·2ⁿ)]: many draws from a seeded source stay within
// their bounds, spread over them, and the same seed draws the same waits.
func TestPollerBackoffJitter(t *testing.T) {
	const polls = 400
	run := func(seed uint64) []time.Duration {
		n := 0
		_, srv := newScript(t, []string{"/v1/operations/" + opID}, func(w http.ResponseWriter, r *http.Request) {
			n++
			switch {
			case n == polls:
				writeRep(w, rep(client.StateSucceeded, 3), -1)
			default:
				writeRep(w, rep(client.StateRunning, 2), -1)
			}
		})
		clock := newClock()
		c := newClient(t, srv, clock, func(o *client.ClientOptions) { o.Rand = rand.NewPCG(seed, 7) })
		p, _ := c.NewPoller(&client.Operation{StatusURL: "/v1/operations/" + opID})
		if _, err := p.PollUntilDone(context.Background(), &client.PollOptions{MinDelay: time.Second, MaxDelay: 8 * time.Second}); err != nil {
			t.Fatal(err)
		}
		return clock.Waits()
	}
	waits := run(42)
	if len(waits) != polls-1 {
		t.Fatalf("%d waits for %d polls", len(waits), polls)
	}
	low, high := 0, 0
	for i, w := range waits {
		ceiling := min(8*time.Second, time.Second<<min(i+1, 4))
		if w < time.Second || w > ceiling {
			t.Fatalf("wait %d: %v outside [1s, %v]", i+1, w, ceiling)
		}
		if i >= 3 { // ceiling 8 s from the third on
			if w < 4500*time.Millisecond {
				low++
			} else {
				high++
			}
		}
	}
	if low < polls/4 || high < polls/4 {
		t.Errorf("waits at the 8 s ceiling are not spread over [1s, 8s]: %d below 4.5 s, %d above", low, high)
	}
	if !slices.Equal(run(42), waits) {
		t.Error("the same seed drew other waits: the injected source is not the one used")
	}
	if slices.Equal(run(43), waits) {
		t.Error("another seed drew the same waits")
	}
}

// TestPollerIgnoresALaggingRead: a representation older than one already seen is neither
// reported nor taken as the operation's state.
func TestPollerIgnoresALaggingRead(t *testing.T) {
	_, srv := newScript(t, []string{"/v1/operations/" + opID},
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateRunning, 3), 1) },
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateDispatched, 2), 1) },
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateSucceeded, 4), -1) },
	)
	p, _ := newClient(t, srv, newClock(), nil).NewPoller(&client.Operation{StatusURL: "/v1/operations/" + opID})
	var changes []change
	if _, err := p.PollUntilDone(context.Background(), &client.PollOptions{OnChange: recordChanges(&changes)}); err != nil {
		t.Fatal(err)
	}
	if want := []change{{client.StateRunning, 3, -1}, {client.StateSucceeded, 4, -1}}; !slices.Equal(changes, want) {
		t.Errorf("OnChange saw %v, want %v", changes, want)
	}
}

// TestPollerManualStepping: Poll reads once per call, Done and Result follow it, and a
// context cancelled mid-way stops PollUntilDone without touching the operation.
func TestPollerManualStepping(t *testing.T) {
	s, srv := newScript(t, []string{"/v1/operations/" + opID},
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateRunning, 2), 1) },
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateCancelling, 3), 1) },
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateCanceled, 4), -1) },
	)
	p, err := newClient(t, srv, newClock(), nil).NewPoller(&client.Operation{StatusURL: "/v1/operations/" + opID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Result(); !errors.Is(err, client.ErrPollerNotDone) || p.Done() {
		t.Fatalf("Result before polling: %v", err)
	}
	op, err := p.Poll(context.Background())
	if err != nil || op.State != client.StateRunning || p.Done() || p.Operation().Version != 2 {
		t.Fatalf("first poll: %+v, %v", op, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = p.PollUntilDone(ctx, &client.PollOptions{OnChange: func(client.Operation) { cancel() }})
	if !errors.Is(err, context.Canceled) || p.Done() || s.count() != 2 {
		t.Fatalf("after cancel: %v, done %t, %d requests", err, p.Done(), s.count())
	}
	for _, r := range s.requests() {
		if r.Method != http.MethodGet {
			t.Errorf("%s %s: polling sent more than reads", r.Method, r.URL.Path)
		}
	}
	if op, err := p.Poll(context.Background()); err != nil || op.State != client.StateCanceled || !p.Done() {
		t.Fatalf("third poll: %+v, %v", op, err)
	}
	if op, err := p.Result(); err != nil || op.State != client.StateCanceled {
		t.Errorf("Result: %+v, %v", op, err)
	}
}

// TestNewPoller: a poller of an operation that is already done is done without I/O; one whose
// status URL leaves the API's origin, or that has none, is refused.
func TestNewPoller(t *testing.T) {
	s, srv := newScript(t, []string{"/v1/operations/" + opID}, func(w http.ResponseWriter, r *http.Request) { t.Error("polled") })
	c := newClient(t, srv, newClock(), nil)
	var done client.Operation
	b, _ := json.Marshal(rep(client.StateSucceeded, 4))
	_ = json.Unmarshal(b, &done)
	p, err := c.NewPoller(&done)
	if err != nil {
		t.Fatal(err)
	}
	if op, err := p.PollUntilDone(context.Background(), nil); err != nil || op.Version != 4 || !p.Done() || s.count() != 0 {
		t.Errorf("got %v, %v after %d polls", op, err, s.count())
	}
	for _, bad := range []*client.Operation{
		nil,
		{OperationID: opID},
		{Location: "https://evil.example/v1/operations/" + opID},
		{StatusURL: "//evil.example/v1/operations/" + opID},
	} {
		if _, err := c.NewPoller(bad); err == nil {
			t.Errorf("NewPoller(%+v) accepted", bad)
		}
	}
}

// TestBeginCreate: the poller starts at the admission's Location, after its Retry-After.
func TestBeginCreate(t *testing.T) {
	s, srv := newScript(t, []string{"/v1/operations", locationPath},
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", locationPath)
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(map[string]any{"operationId": opID, "type": "demo.task", "target": "demo:x", "state": "accepted",
				"statusUrl": locationPath, "createdAt": "2026-11-30T10:00:00Z"})
		},
		func(w http.ResponseWriter, r *http.Request) {
			writeRep(w, at(locationPath, client.StateSucceeded, 5), -1)
		},
	)
	clock := newClock()
	p, err := newClient(t, srv, clock, nil).BeginCreate(context.Background(), client.CreateRequest{Type: "demo.task"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Operation().State != client.StateAccepted || p.Operation().IdempotencyKey == "" {
		t.Errorf("before polling: %+v", p.Operation())
	}
	op, err := p.PollUntilDone(context.Background(), nil)
	if err != nil || op.State != client.StateSucceeded {
		t.Fatalf("%v, %v", op, err)
	}
	if reqs := s.requests(); len(reqs) != 2 || reqs[1].URL.Path != locationPath || !slices.Equal(clock.Waits(), []time.Duration{5 * time.Second}) {
		t.Errorf("%d requests, waits %v", len(reqs), clock.Waits())
	}
}

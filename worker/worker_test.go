package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/worker"
)

type orderInput struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// The protocol's samples, read where the repository keeps them: the worker module's tests
// run in a longrun checkout.
var sampleDir = filepath.Join("..", "events", "samples", "worker")

func sample(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sampleDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A Func sees the request as a Step: every member, the carried state decoded on demand.
func TestTheStepIsTheRequest(t *testing.T) {
	var got worker.Step
	var in map[string]any
	h := worker.Handler(func(_ context.Context, s worker.Step, input map[string]any) (worker.Report, error) {
		got, in = s, input
		return worker.Succeed(nil), nil
	})
	if _, err := h(context.Background(), sample(t, "step-request-later")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if got.OperationID != "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3" || got.Type != "demo.task" || got.Version != 1 ||
		got.Number != 3 || got.MaxSteps != 20 || !got.Deadline.Equal(deadline) || got.StepTimeout != time.Minute {
		t.Fatalf("step %+v", got)
	}
	if in["target"] != "demo:alpha" || in["steps"] != 3.0 {
		t.Fatalf("input %v", in)
	}
	var state struct{ Done int }
	if ok, err := got.State(&state); !ok || err != nil || state.Done != 2 {
		t.Fatalf("state %+v %v %v", state, ok, err)
	}
	if key := got.IdempotencyKey(); key != "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3-step-3" {
		t.Fatalf("key %s", key)
	}
	if got.Attempt != 1 {
		t.Fatalf("a first run's attempt is %d, want 1", got.Attempt)
	}
	// A step an operator had run again: a later attempt, with the same identity.
	var retried map[string]any
	_ = json.Unmarshal(sample(t, "step-request-later"), &retried)
	retried["attempt"] = 2
	raw, _ := json.Marshal(retried)
	if _, err := h(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	if got.Attempt != 2 || got.IdempotencyKey() != "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3-step-3" {
		t.Fatalf("a retried step: attempt %d, key %s", got.Attempt, got.IdempotencyKey())
	}
}

func TestStepState(t *testing.T) {
	run := func(state string) (int, bool, error) {
		req := worker.Request{Input: json.RawMessage(`{}`), Step: 2}
		if state != "" {
			req.State = json.RawMessage(state)
		}
		n := -1
		var ok bool
		var err error
		_, _ = worker.Run(context.Background(), func(_ context.Context, s worker.Step, _ struct{}) (worker.Report, error) {
			ok, err = s.State(&n)
			return worker.Succeed(nil), nil
		}, req)
		return n, ok, err
	}
	for _, tc := range []struct {
		state string
		n     int
		ok    bool
		err   bool
	}{
		{"", -1, false, false},     // none carried: n untouched
		{"null", -1, false, false}, // null is none
		{"7", 7, true, false},
		{`"seven"`, -1, true, true},
	} {
		n, ok, err := run(tc.state)
		if n != tc.n || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("state %q: %d %v %v", tc.state, n, ok, err)
		}
	}
}

func TestIdempotencyKeysDifferPerStepAndOperation(t *testing.T) {
	keys := map[string]bool{}
	for _, op := range []string{"op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", "op_01JDY3Q4W5E6R7T8Y9V0A1B2C4"} {
		for n := 1; n <= 12; n++ {
			var key string
			_, _ = worker.Run(context.Background(), func(_ context.Context, s worker.Step, _ any) (worker.Report, error) {
				key = s.IdempotencyKey()
				return worker.Succeed(nil), nil
			}, worker.Request{OperationID: op, Step: n, Input: json.RawMessage(`{}`)})
			if keys[key] || !strings.HasPrefix(key, op) {
				t.Fatalf("key %q for %s step %d", key, op, n)
			}
			keys[key] = true
		}
	}
}

// Input that is not what the Func reads is a failed report: the Func never ran.
func TestInputThatDoesNotDecodeFailsWithoutRunning(t *testing.T) {
	for _, input := range []string{`{"from":7}`, `[]`, ``, `"x"`} {
		ran := false
		rep, err := worker.Run(context.Background(), func(context.Context, worker.Step, orderInput) (worker.Report, error) {
			ran = true
			return worker.Succeed(nil), nil
		}, worker.Request{Step: 1, Input: json.RawMessage(input)})
		if err != nil || ran || rep.Status() != worker.StatusFailed || rep.Problem().Code != worker.CodeInvalidInput || rep.Problem().Detail == "" {
			t.Errorf("input %q: %+v %v ran %v", input, rep.Problem(), err, ran)
		}
	}
}

// A *Problem as the error, wrapped or not, is a failed report; any other error is the
// invocation's error, returned as it is.
func TestErrorsFromTheFunc(t *testing.T) {
	errBoom := errors.New("connection reset")
	for _, tc := range []struct {
		err     error
		problem *worker.Problem // the failed report's problem, nil when the error is returned
	}{
		{&worker.Problem{Code: "quota_exhausted", Title: "No quota."}, &worker.Problem{Code: "quota_exhausted", Title: "No quota."}},
		{fmt.Errorf("export: %w", &worker.Problem{Code: "too_big", Title: "Too big.", Detail: "9 GB"}), &worker.Problem{Code: "too_big", Title: "Too big.", Detail: "9 GB"}},
		{errBoom, nil},
		{fmt.Errorf("submit: %w", context.DeadlineExceeded), nil},
	} {
		h := worker.Handler(func(context.Context, worker.Step, orderInput) (worker.Report, error) {
			return worker.Succeed(map[string]int{"ignored": 1}), tc.err
		})
		out, err := h(context.Background(), sample(t, "step-request-first"))
		if tc.problem == nil {
			if err != tc.err || out != nil { // returned as it is

				t.Errorf("%v: %s %v", tc.err, out, err)
			}
			continue
		}
		want, _ := json.Marshal(map[string]any{"status": "failed", "problem": tc.problem})
		if err != nil || !same(t, out, want) {
			t.Errorf("%v: %s %v, want %s", tc.err, out, err, want)
		}
	}
}

// A report that breaks the protocol is the worker's bug: an error, never sent as a report.
// (Text over its length limit is not: it is cut, TestOverLongTextIsCutNotRefused in api/.)
func TestAWronglyBuiltReportIsAnError(t *testing.T) {
	for _, tc := range []struct {
		rep  worker.Report
		want string
	}{
		{worker.Report{}, "zero Report"},
		{worker.Succeed([]int{1}), "must be a JSON object"},
		{worker.Succeed("done"), "must be a JSON object"},
		{worker.Succeed(func() {}), "encode the result"},
		{worker.Continue(make(chan int)), "encode the state"},
		{worker.Succeed(nil).Wait(), "Wait is only for a continue report"},
		{worker.Fail("x", "t", "").After(time.Second), "After is only for a continue report"},
		{worker.Continue(nil).After(-time.Second), "not between 0 and 24h0m0s"},
		{worker.Continue(nil).After(worker.MaxDelay + time.Millisecond), "not between 0 and 24h0m0s"},
		{worker.Fail("Quota", "t", ""), "does not match"},
		{worker.Fail("quota", "", ""), "title must have 1 to 200"},
		{worker.Succeed(nil).WithProgress(worker.Progress{TotalSteps: -1}), "totalSteps -1"},
		{worker.Succeed(nil).WithProgress(worker.Progress{Percent: new(100.01)}), "percent 100.01"},
		{worker.Succeed(nil).AwaitSignal("approval", time.Hour), "AwaitSignal is only for a continue report"},
		{worker.ResultLost("").AwaitSignal("approval", time.Hour), "AwaitSignal is only for a continue report"},
		{worker.Continue(nil).AwaitSignal("approval", 0), "is not more than 0 and at most 720h0m0s"},
		{worker.Continue(nil).AwaitSignal("approval", -time.Second), "is not more than 0 and at most 720h0m0s"},
		{worker.Continue(nil).AwaitSignal("approval", worker.MaxAwait+time.Nanosecond), "is not more than 0 and at most 720h0m0s"},
		{worker.Continue(nil).AwaitSignal("Approval", time.Hour), `signal name "Approval" does not match`},
		{worker.Continue(nil).AwaitSignal("", time.Hour), `signal name "" does not match`},
		{worker.Continue(nil).AwaitSignal("approval.v2", time.Hour), "does not match"},
		{worker.Continue(nil).AwaitSignal("a"+strings.Repeat("b", 64), time.Hour), "does not match"},
		{worker.Continue(nil).Wait().AwaitSignal("approval", time.Hour), "waits for a signal (AwaitSignal) or for a time (Wait, After), not both"},
		{worker.Continue(nil).AwaitSignal("approval", time.Hour).After(0), "not both"},
	} {
		h := worker.Handler(func(context.Context, worker.Step, any) (worker.Report, error) { return tc.rep, nil })
		out, err := h(context.Background(), sample(t, "step-request-first"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || out != nil {
			t.Errorf("want an error with %q, got %s %v", tc.want, out, err)
		}
		if _, err := json.Marshal(tc.rep); err == nil {
			t.Errorf("%q: the report marshals", tc.want)
		}
	}
	// A *Problem that breaks the protocol is no failed report either.
	_, err := worker.Run(context.Background(), func(context.Context, worker.Step, any) (worker.Report, error) {
		return worker.Report{}, &worker.Problem{Code: "bad code", Title: "t"}
	}, worker.Request{Input: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("a bad problem: %v", err)
	}
}

// Handler answers exactly what Run reports, as JSON, for the sample requests.
func TestHandlerRunsAStep(t *testing.T) {
	h := worker.Handler(func(_ context.Context, s worker.Step, in struct {
		Steps int `json:"steps"`
	}) (worker.Report, error) {
		var done struct{ Done int }
		if _, err := s.State(&done); err != nil {
			return worker.Report{}, err
		}
		if s.Number < in.Steps {
			return worker.Continue(map[string]int{"done": s.Number}).After(time.Minute), nil
		}
		return worker.Succeed(map[string]int{"steps": in.Steps, "carried": done.Done}), nil
	})
	for name, want := range map[string]string{
		"step-request-first": `{"status":"continue","state":{"done":1},"delaySeconds":60}`,
		"step-request-later": `{"status":"succeeded","result":{"carried":2,"steps":3}}`,
	} {
		out, err := h(context.Background(), sample(t, name))
		if err != nil || string(out) != want {
			t.Errorf("%s: %s %v, want %s", name, out, err, want)
		}
	}
	for _, payload := range []string{`not json`, `{"protocol":"longrun.step.v1"}`, `[]`} {
		out, err := h(context.Background(), json.RawMessage(payload))
		var rep worker.Report
		if err != nil || json.Unmarshal(out, &rep) != nil || rep.Problem() == nil || rep.Problem().Code != worker.CodeInvalidRequest {
			t.Errorf("%s: %s %v", payload, out, err)
		}
	}
}

// The context reaches the Func: a step that respects it ends when the invocation's time does.
func TestTheContextReachesTheFunc(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := worker.Run(ctx, func(ctx context.Context, _ worker.Step, _ any) (worker.Report, error) {
		select {
		case <-ctx.Done():
			return worker.Report{}, ctx.Err()
		case <-time.After(5 * time.Second):
			return worker.Succeed(nil), nil
		}
	}, worker.Request{Input: json.RawMessage(`{}`)})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("%v after %v", err, time.Since(start))
	}
}

// Reports are values: a modified copy leaves the original alone, and what the accessors
// return cannot change the report.
func TestReportsAreValues(t *testing.T) {
	percent := 10.0
	base := worker.Continue(map[string]int{"page": 1})
	withProgress := base.WithProgress(worker.Progress{TotalSteps: 4, Percent: &percent})
	waiting := withProgress.Wait()
	delayed := withProgress.After(90 * time.Second)
	percent = 99 // the caller's variable is not the report's

	if base.Progress() != nil || base.WaitsStepDelay() || withProgress.WaitsStepDelay() {
		t.Fatal("a copy changed its original")
	}
	if p := withProgress.Progress(); p == nil || p.TotalSteps != 4 || *p.Percent != 10 {
		t.Fatalf("progress %+v", p)
	}
	withProgress.Progress().TotalSteps = 9
	*withProgress.Progress().Percent = 50
	if p := withProgress.Progress(); p.TotalSteps != 4 || *p.Percent != 10 {
		t.Fatalf("an accessor's result changed the report: %+v", p)
	}
	if d, ok := waiting.Delay(); ok || d != 0 || !waiting.WaitsStepDelay() {
		t.Fatalf("waiting: %v %v %v", d, ok, waiting.WaitsStepDelay())
	}
	if d, ok := delayed.Delay(); !ok || d != 90*time.Second || delayed.WaitsStepDelay() {
		t.Fatalf("delayed: %v %v", d, ok)
	}
	if string(base.State()) != `{"page":1}` || base.Result() != nil || base.Problem() != nil {
		t.Fatalf("continue: %s %s %v", base.State(), base.Result(), base.Problem())
	}

	failed := worker.Fail("quota_exhausted", "No quota.", "")
	failed.Problem().Code = "changed"
	if failed.Problem().Code != "quota_exhausted" || failed.Status() != worker.StatusFailed || failed.State() != nil {
		t.Fatalf("failed: %+v", failed.Problem())
	}
	if r := worker.Succeed(nil).Result(); string(r) != `{}` {
		t.Fatalf("an empty result is %s", r)
	}
	if lost := worker.ResultLost("gone"); lost.Status() != worker.StatusOutcomeUnknown || lost.Problem().Code != worker.CodeResultLost || lost.Problem().Detail != "gone" {
		t.Fatalf("lost: %+v", lost.Problem())
	}
}

func TestProblemIsAnError(t *testing.T) {
	var err error = &worker.Problem{Code: "quota_exhausted", Title: "No quota."}
	if err.Error() != "quota_exhausted: No quota." {
		t.Fatal(err)
	}
	err = &worker.Problem{Code: "quota_exhausted", Title: "No quota.", Detail: "50 of 50."}
	if err.Error() != "quota_exhausted: No quota.: 50 of 50." {
		t.Fatal(err)
	}
}

// The step function sees the operation's correlation id, as the request carries it.
func TestStepHasTheCorrelationID(t *testing.T) {
	var got string
	h := worker.Handler(func(_ context.Context, s worker.Step, _ map[string]any) (worker.Report, error) {
		got = s.CorrelationID
		return worker.Succeed(nil), nil
	})
	payload := `{"protocol":"longrun.step.v1","operationId":"op_01JDY3Q4W5E6R7T8Y9V0A1B2C3","type":"demo.task","version":1,` +
		`"input":{},"step":1,"maxSteps":3,"deadline":"2026-12-01T12:00:00.000Z","stepTimeoutSeconds":60,"correlationId":"4bf92f3577b34da6a3ce929d0e0e4736"}`
	if _, err := h(context.Background(), json.RawMessage(payload)); err != nil || got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("Step.CorrelationID %q (%v)", got, err)
	}
	if _, err := h(context.Background(), json.RawMessage(strings.Replace(payload, `,"correlationId":"4bf92f3577b34da6a3ce929d0e0e4736"`, "", 1))); err != nil || got != "" {
		t.Fatalf("without one: %q (%v)", got, err)
	}
}

// A step's context ends at its stepTimeout even when the invocation may run longer (a
// worker serving types of different stepTimeouts), and a failure after it is reported as
// outcome_unknown with the code step_timeout: the step may have acted. A step that finished
// late keeps its report: its effect and result are real.
func TestTheStepTimeoutEndsTheContext(t *testing.T) {
	req := worker.Request{Input: json.RawMessage(`{}`), Step: 2, StepTimeoutSeconds: 1}
	rep, err := worker.Run(context.Background(), func(ctx context.Context, _ worker.Step, _ any) (worker.Report, error) {
		<-ctx.Done()
		return worker.Report{}, ctx.Err()
	}, req)
	if err != nil || rep.Status() != worker.StatusOutcomeUnknown || rep.Problem().Code != worker.CodeStepTimeout {
		t.Fatalf("%+v, %v", rep, err)
	}
	rep, err = worker.Run(context.Background(), func(ctx context.Context, _ worker.Step, _ any) (worker.Report, error) {
		return worker.Report{}, errors.New("boom")
	}, req)
	if err == nil {
		t.Fatalf("an error within the step's time is the invocation's failure: %+v", rep)
	}
}

// A step after a wait for a signal sees, as the request carries them, the signals that
// arrived, what the wait came to and the type's callback URLs.
func TestTheStepHasItsSignals(t *testing.T) {
	var got worker.Step
	h := worker.Handler(func(_ context.Context, s worker.Step, _ map[string]any) (worker.Report, error) {
		got = s
		return worker.Succeed(nil), nil
	})
	payload := `{"protocol":"longrun.step.v1","operationId":"op_01JDY3Q4W5E6R7T8Y9V0A1B2C3","type":"deploy.service","version":1,` +
		`"input":{},"step":2,"maxSteps":5,"deadline":"2026-12-08T12:00:00.000Z","stepTimeoutSeconds":60,` +
		`"signals":[` +
		`{"name":"approval","data":{"approved":false},"receivedAt":"2026-12-02T14:01:00.000Z","sender":"arn:aws:iam::123456789012:user/bob","via":"api"},` +
		`{"name":"comment","data":{"text":"ship it"},"receivedAt":"2026-12-02T14:03:00.000Z","sender":"arn:aws:iam::123456789012:user/alice","via":"api"},` +
		`{"name":"approval","data":{"approved":true},"receivedAt":"2026-12-02T14:05:16.000Z","sender":"arn:aws:iam::123456789012:user/alice","via":"api"}],` +
		`"awaited":{"signal":"approval","timedOut":false},` +
		`"callbacks":{"payment-settled":"https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d"}}`
	if _, err := h(context.Background(), json.RawMessage(payload)); err != nil {
		t.Fatal(err)
	}
	if len(got.Signals) != 3 || got.Signals[0].Name != "approval" || got.Signals[1].Name != "comment" || got.Signals[2].Name != "approval" {
		t.Fatalf("signals %+v, want the three in the order they arrived", got.Signals)
	}
	if got.Awaited == nil || *got.Awaited != (worker.Awaited{Signal: "approval"}) {
		t.Fatalf("awaited %+v", got.Awaited)
	}
	// Of two approvals, the last stands.
	sig, ok := got.Signal("approval")
	want := worker.Signal{Name: "approval", Data: json.RawMessage(`{"approved":true}`),
		ReceivedAt: time.Date(2026, 12, 2, 14, 5, 16, 0, time.UTC), Sender: "arn:aws:iam::123456789012:user/alice", Via: worker.ViaAPI}
	if !ok || sig.Name != want.Name || string(sig.Data) != string(want.Data) || !sig.ReceivedAt.Equal(want.ReceivedAt) ||
		sig.Sender != want.Sender || sig.Via != want.Via {
		t.Fatalf("Signal(approval) = %+v %v, want %+v", sig, ok, want)
	}
	var approval struct {
		Approved bool `json:"approved"`
	}
	if err := sig.Decode(&approval); err != nil || !approval.Approved {
		t.Fatalf("decoded %+v %v", approval, err)
	}
	if sig, ok := got.Signal("payment-settled"); ok {
		t.Fatalf("a signal that did not arrive: %+v", sig)
	}
	if url, ok := got.CallbackURL("payment-settled"); !ok || url != "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d" {
		t.Fatalf("callback URL %q %v", url, ok)
	}
	if url, ok := got.CallbackURL("approval"); ok {
		t.Fatalf("approval has no callback URL, got %q", url)
	}

	// A step without any of it: no signals, no wait, no callback URL.
	if _, err := h(context.Background(), sample(t, "step-request-later")); err != nil {
		t.Fatal(err)
	}
	if got.Signals != nil || got.Awaited != nil {
		t.Fatalf("signals %+v, awaited %+v", got.Signals, got.Awaited)
	}
	if _, ok := got.Signal("approval"); ok {
		t.Fatal("a signal on a step that received none")
	}
	if _, ok := got.CallbackURL("payment-settled"); ok {
		t.Fatal("a callback URL on a request that carries none")
	}
}

// Run gives the Func the request's signals and what the wait came to: a team's test of a
// step after a wait, including one that timed out. What the Func does with them leaves the
// test's request alone.
func TestRunWithSignals(t *testing.T) {
	type approval struct {
		Approved bool   `json:"approved"`
		Comment  string `json:"comment"`
	}
	decide := func(_ context.Context, s worker.Step, _ struct{}) (worker.Report, error) {
		if s.Awaited == nil {
			return worker.Continue(nil).AwaitSignal("approval", 72*time.Hour), nil
		}
		if s.Awaited.TimedOut {
			return worker.Fail("not_approved", "No one approved in time.", ""), nil
		}
		sig, ok := s.Signal(s.Awaited.Signal)
		if !ok {
			return worker.Report{}, errors.New("the awaited signal is missing")
		}
		var a approval
		if err := sig.Decode(&a); err != nil {
			return worker.Report{}, err
		}
		s.Signals[0].Name = "changed" // the step's own copy
		s.Awaited.Signal = "changed"
		if !a.Approved {
			return worker.Fail("rejected", "The change was rejected.", a.Comment), nil
		}
		return worker.Succeed(map[string]string{"approvedBy": sig.Sender}), nil
	}
	first := worker.Request{Step: 1, Input: json.RawMessage(`{}`)}
	rep, err := worker.Run(context.Background(), decide, first)
	if name, timeout, ok := rep.AwaitsSignal(); err != nil || !ok || name != "approval" || timeout != 72*time.Hour {
		t.Fatalf("step 1: %v %v %v %v", name, timeout, ok, err)
	}
	for _, tc := range []struct {
		name    string
		signals []worker.Signal
		awaited worker.Awaited
		want    string
	}{
		{"approved", []worker.Signal{{Name: "approval", Data: json.RawMessage(`{"approved":true}`), Sender: "alice", Via: worker.ViaAPI}},
			worker.Awaited{Signal: "approval"}, `{"status":"succeeded","result":{"approvedBy":"alice"}}`},
		{"rejected", []worker.Signal{{Name: "approval", Data: json.RawMessage(`{"approved":false,"comment":"not on a Friday"}`), Sender: "bob", Via: worker.ViaAPI}},
			worker.Awaited{Signal: "approval"}, `{"status":"failed","problem":{"code":"rejected","title":"The change was rejected.","detail":"not on a Friday"}}`},
		{"timed out", nil, worker.Awaited{Signal: "approval", TimedOut: true},
			`{"status":"failed","problem":{"code":"not_approved","title":"No one approved in time."}}`},
		{"data that does not decode", []worker.Signal{{Name: "approval", Data: json.RawMessage(`{"approved":"yes"}`)}},
			worker.Awaited{Signal: "approval"}, ""},
	} {
		awaited := tc.awaited
		req := worker.Request{Step: 2, Input: json.RawMessage(`{}`), Signals: tc.signals, Awaited: &awaited}
		rep, err := worker.Run(context.Background(), decide, req)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "decode the data of the signal approval") {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		out, _ := json.Marshal(rep)
		if err != nil || string(out) != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.name, out, err, tc.want)
		}
		if awaited.Signal != "approval" || len(tc.signals) > 0 && tc.signals[0].Name != "approval" {
			t.Errorf("%s: the step changed the request's signals: %+v %+v", tc.name, tc.signals, awaited)
		}
	}
}

// A report waiting for a signal survives JSON, both ways, and says what it waits for.
func TestAwaitSignalRoundTrips(t *testing.T) {
	rep := worker.Continue(map[string]int{"n": 1}).AwaitSignal("approval", 90*time.Minute+time.Millisecond)
	if name, timeout, ok := rep.AwaitsSignal(); !ok || name != "approval" || timeout != 90*time.Minute+time.Second {
		t.Fatalf("AwaitsSignal: %q %v %v", name, timeout, ok)
	}
	if _, ok := rep.Delay(); ok || rep.WaitsStepDelay() {
		t.Fatal("a wait for a signal is no wait for a time")
	}
	out, err := json.Marshal(rep)
	if err != nil || string(out) != `{"status":"continue","state":{"n":1},"await":{"signal":"approval","timeoutSeconds":5401}}` {
		t.Fatalf("%s %v", out, err)
	}
	var back worker.Report
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if name, timeout, ok := back.AwaitsSignal(); !ok || name != "approval" || timeout != 5401*time.Second {
		t.Fatalf("decoded: %q %v %v", name, timeout, ok)
	}
	if worker.MaxAwait != 2592000*time.Second {
		t.Fatalf("MaxAwait %v is not the protocol's 2592000 s", worker.MaxAwait)
	}
	if _, _, ok := worker.Continue(nil).Wait().AwaitsSignal(); ok {
		t.Fatal("a report that waits for a time awaits a signal")
	}
}

// A signal's data decodes into the team's type; data a test leaves out is the empty object.
func TestSignalDecode(t *testing.T) {
	var v struct {
		Amount int `json:"amount"`
	}
	if err := (worker.Signal{Name: "paid", Data: json.RawMessage(`{"amount":1200}`)}).Decode(&v); err != nil || v.Amount != 1200 {
		t.Fatalf("%+v %v", v, err)
	}
	var m map[string]any
	if err := (worker.Signal{Name: "paid"}).Decode(&m); err != nil || m == nil || len(m) != 0 {
		t.Fatalf("no data: %v %v", m, err)
	}
	if err := (worker.Signal{Name: "paid", Data: json.RawMessage(`{"amount":"1200"}`)}).Decode(&v); err == nil || !strings.Contains(err.Error(), "signal paid") {
		t.Fatalf("a bad amount: %v", err)
	}
}

// same reports whether a and b are the same JSON value, as the vectors compare them.
func same(t *testing.T, a, b []byte) bool {
	t.Helper()
	ok, err := sameValue(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

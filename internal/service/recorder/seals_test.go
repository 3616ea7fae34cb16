package recorder_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

func testSealer(t testing.TB) *seal.Sealer {
	t.Helper()
	s, err := seal.New([]byte(strings.Repeat("test-key/", 4)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve hands raw to the recorder as Lambda would.
func (f *fixture) serve(raw string) (recorder.Decision, error) {
	return f.rec.Serve(context.Background(), json.RawMessage(raw))
}

// unchanged fails unless operation id is still at version v.
func (f *fixture) unchanged(id string, v int) {
	f.t.Helper()
	if op := f.load(id); op.Version != v {
		f.t.Fatalf("the operation changed: version %d → %d, state %s", v, op.Version, op.State)
	}
}

// The attack found by the review: a hand-made call to the recorder that says a step of
// another tenant's operation succeeded. It records nothing and invokes no worker.
func TestAForgedStepEndIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	v := f.load(id).Version
	s := &script{clock: f.clock, answers: []any{`{"status":"succeeded"}`}}
	f.rec.Invoker, f.rec.Executions = s, &executions{}
	forged := strings.NewReplacer("ID", id).Replace(`{"worker":"` + worker + `","state":{"operationId":"ID",
		"gate":{"decision":{"next":"work","request":{"operationId":"ID","step":1}}},
		"task":{"report":{"status":"succeeded","result":{"forged":true}}}}}`)
	for name, call := range map[string]string{
		"unsealed":     forged,
		"bogus seal":   strings.Replace(forged, `"operationId":"`+id+`",`, `"operationId":"`+id+`","seal":"`+strings.Repeat("A", 43)+`",`, 1),
		"legacy state": strings.NewReplacer("ID", id).Replace(`{"operationId":"ID","gate":{"decision":{"next":"work","request":{"operationId":"ID","step":1}}},"task":{"report":{"status":"succeeded"}}}`),
	} {
		t.Run(name, func(t *testing.T) {
			if d, err := f.serve(call); !errors.Is(err, recorder.ErrForged) {
				t.Fatalf("Serve = %+v, %v; want ErrForged", d, err)
			}
			f.unchanged(id, v)
			if len(s.requests) != 0 {
				t.Fatalf("a worker was invoked: %+v", s.requests)
			}
		})
	}
}

// A continuation's input carries the worker's state to the next step: one the recorder
// sealed is taken however Step Functions re-serialises it, and a changed one is refused.
func TestAContinuationIsTakenOnlyAsSealed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	s := &script{clock: f.clock, answers: []any{`{"status":"continue","state":{"cursor":7},"delaySeconds":30}`, `{"status":"succeeded"}`}}
	ex := &executions{}
	f.rec.Executions = ex
	if d := f.run(s, recorder.Input{OperationID: id}); d.Next != recorder.NextWait || d.Seal == "" {
		t.Fatalf("first Run: %+v, want a sealed wait", d)
	}
	started := ex.last(t)
	if started.input.Seal == "" {
		t.Fatal("the next execution's input has no seal")
	}
	// As Step Functions may hand it back: parsed, its members reordered and re-spaced.
	var generic map[string]any
	if err := json.Unmarshal(started.raw, &generic); err != nil {
		t.Fatal(err)
	}
	respaced, _ := json.MarshalIndent(generic, "", "   ")
	call := func(state []byte) string {
		return `{"worker":"` + worker + `","state":` + string(state) + `}`
	}
	tampered := strings.Replace(string(respaced), `"cursor": 7`, `"cursor": 8`, 1)
	if tampered == string(respaced) {
		t.Fatalf("nothing to tamper with in %s", respaced)
	}
	v := f.load(id).Version
	if _, err := f.serve(call([]byte(tampered))); !errors.Is(err, recorder.ErrForged) {
		t.Fatalf("a changed state was taken: %v", err)
	}
	f.unchanged(id, v)
	f.clock.Add(31 * time.Second)
	if d, err := f.serve(call(respaced)); err != nil || d.Next != recorder.NextDone {
		t.Fatalf("the sealed continuation: %+v %v", d, err)
	}
	if got := string(s.requests[1].State); got != `{"cursor":7}` {
		t.Fatalf("step 2 got state %s", got)
	}
	if op := f.load(id); op.State != operation.Succeeded {
		t.Fatalf("state %s", op.State)
	}
}

// A delivery is taken only with the request the recorder sent, seal intact, and from the
// type's own worker.
func TestAForgedDeliveryIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := &script{answers: []any{`{"status":"continue","state":{"n":1}}`, `{"status":"succeeded"}`}}
	q, c := f.parked(s)
	f.rec.Workers = map[string]string{"test-poll": worker}
	id := f.newOp()
	if d := f.runWith("tok", recorder.Input{OperationID: id}); d.Next != recorder.NextParked {
		t.Fatalf("Run: %+v", d)
	}
	v := f.load(id).Version
	sent := q.sent[0]
	var req map[string]any
	if err := json.Unmarshal(sent, &req); err != nil || req["seal"] == nil {
		t.Fatalf("the step went out without a seal: %s", sent)
	}
	succeeded := &recorder.Task{Report: json.RawMessage(`{"status":"succeeded","result":{"forged":true}}`)}
	withStep := strings.Replace(string(sent), `"step":1`, `"step":2`, 1)
	noSeal, _ := json.Marshal(func() map[string]any { delete(req, "seal"); return req }())
	for name, d := range map[string]recorder.Delivery{
		"changed request": {Function: worker, Request: json.RawMessage(withStep), Task: succeeded},
		"no seal":         {Function: worker, Request: noSeal, Task: succeeded},
		"other function":  {Function: worker + "-evil", Request: sent, Task: succeeded},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := f.rec.Deliver(context.Background(), d); !errors.Is(err, recorder.ErrForged) {
				t.Fatalf("Deliver = %v, want ErrForged", err)
			}
			f.unchanged(id, v)
			if len(c.of("tok")) != 0 {
				t.Fatalf("the workflow was answered: %+v", c.of("tok"))
			}
		})
	}
	// The real one goes on (its next step is quick, so the delivery runs it itself).
	f.deliver(q.next(t, s))
	if op := f.load(id); op.State != operation.Succeeded {
		t.Fatalf("state %s after the real deliveries", op.State)
	}
}

// A Run that names a function other than the type's worker sends nothing and records nothing.
func TestARunForAnotherFunctionIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	v := f.load(id).Version
	s := &script{clock: f.clock, answers: []any{`{"status":"succeeded"}`}}
	f.rec.Invoker, f.rec.Executions = s, &executions{}
	f.rec.Workers = map[string]string{"test-poll": worker}
	_, err := f.rec.Run(context.Background(), recorder.Call{State: recorder.Input{OperationID: id}, Worker: worker + "-evil"})
	if !errors.Is(err, recorder.ErrForged) {
		t.Fatalf("Run = %v, want ErrForged", err)
	}
	f.unchanged(id, v)
	if len(s.requests) != 0 {
		t.Fatalf("the other function was invoked: %+v", s.requests)
	}
	// The type's own worker, qualified with a version as Lambda may name it, is taken.
	if _, err := f.rec.Run(context.Background(), recorder.Call{State: recorder.Input{OperationID: id}, Worker: worker + ":7"}); err != nil {
		t.Fatal(err)
	}
}

// The reconciler takes from an execution's output only what the recorder sealed; anything
// else reads as a Run caught on a fresh input, so the work is carried on from the facts.
func TestTrustedReadsOnlySealedOutputs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	ref := func(name string) string { return "arn:aws:states:us-east-1:123456789012:execution:m:" + name }
	s := &script{clock: f.clock, answers: []any{`{"status":"continue","state":{"n":1},"delaySeconds":30}`}}
	ex := &executions{}
	f.rec.Executions = ex
	answer := f.run(s, recorder.Input{OperationID: id})
	continuation := ex.last(t).input
	out := func(in recorder.Input) []byte {
		b, _ := json.Marshal(in)
		return b
	}
	tamperedAnswer := answer
	tamperedAnswer.Task = &recorder.Task{Report: json.RawMessage(`{"status":"succeeded"}`)}
	tamperedAnswer.Next = recorder.NextUnrecorded
	caughtContinuation := continuation
	caughtContinuation.RecordError = &recorder.TaskError{Error: "Lambda.Unknown"}
	var forgedContinuation recorder.Input // a deep copy, changed
	_ = json.Unmarshal(out(caughtContinuation), &forgedContinuation)
	forgedContinuation.Gate.Decision.Request.State = json.RawMessage(`{"n":2}`)
	cases := []struct {
		name, ref string
		output    []byte
		trusted   bool
	}{
		{"the Run's sealed answer", ref(id), out(recorder.Input{OperationID: id, Gate: &recorder.Gate{Decision: &answer}}), true},
		{"a changed answer", ref(id), out(recorder.Input{OperationID: id, Gate: &recorder.Gate{Decision: &tamperedAnswer}}), false},
		{"an unsealed answer", ref(id), out(recorder.Input{OperationID: id, Gate: &recorder.Gate{Decision: &recorder.Decision{Next: recorder.NextUnrecorded,
			Task: tamperedAnswer.Task}}}), false},
		{"a caught sealed continuation", ref(id + "-1"), out(caughtContinuation), true},
		{"a caught changed continuation", ref(id + "-1"), out(forgedContinuation), false},
		{"a continuation in an execution of another count", ref(id + "-2"), out(caughtContinuation), false},
		{"a caught fresh input", ref(id), out(recorder.Input{OperationID: id, RecordError: &recorder.TaskError{Error: "x"}}), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, ok := recorder.Trusted(f.rec.Seals, id, c.ref, c.output)
			if !ok {
				t.Fatal("not read at all")
			}
			if c.trusted {
				want := recorder.Input{}
				_ = json.Unmarshal(c.output, &want)
				if string(out(in)) != string(out(want)) {
					t.Fatalf("Trusted changed a trusted output:\n got %s\nwant %s", out(in), out(want))
				}
				return
			}
			if in.Gate != nil || in.Task != nil || in.Error != nil || in.RecordError == nil {
				t.Fatalf("an untrusted output was taken: %s", out(in))
			}
			if _, ok := recorder.Outcome(in); ok {
				t.Fatal("an untrusted output gives an outcome")
			}
			next, _, ok := recorder.Resumption(in)
			if !ok || next.Gate != nil || next.Task != nil || next.Continuation != in.Continuation+1 {
				t.Fatalf("an untrusted output is not carried on from the facts: %+v %v", next, ok)
			}
		})
	}
	if _, ok := recorder.Trusted(f.rec.Seals, id, ref(id), []byte(`{"operationId":"op_other"}`)); ok {
		t.Fatal("another operation's output was read")
	}
}

// A recorder that does not serve an operation's type (a newer function admitted it during a
// deployment, or the type was removed) decides nothing: it neither fails the work nor runs
// it, and hands a step's end it holds to the reconciler (issue #20, finding 9).
func TestATypeNotServedIsLeftToTheReconciler(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	v := f.load(id).Version
	served := f.rec.Registry
	older := optype.Builtin() // without the tests' types
	f.rec.Registry = older
	s := &script{clock: f.clock, answers: []any{`{"status":"continue","state":{"n":1}}`, `{"status":"succeeded"}`}}
	f.rec.Invoker, f.rec.Executions = s, &executions{}
	_, err := f.rec.Run(context.Background(), recorder.Call{State: recorder.Input{OperationID: id}, Worker: worker})
	if !errors.Is(err, recorder.ErrTypeNotServed) {
		t.Fatalf("Run = %v, want ErrTypeNotServed", err)
	}
	f.unchanged(id, v)
	if len(s.requests) != 0 {
		t.Fatal("a step ran")
	}
	// Served when the Run began, not when its step came back: the end goes to the reconciler.
	f.rec.Registry = served
	s.during = func(n int) {
		if n == 1 {
			f.rec.Registry = older
		}
	}
	d := f.run(s, recorder.Input{OperationID: id})
	if d.Next != recorder.NextUnrecorded || d.Task == nil || d.Seal == "" {
		t.Fatalf("decision %+v, want the step's end handed on, sealed", d)
	}
	if op := f.load(id); op.State != operation.Running {
		t.Fatalf("state %s, want running", op.State)
	}
	next, _, ok := recorder.Resumption(recorder.Input{OperationID: id, Gate: &recorder.Gate{Decision: &d}})
	if !ok || next.Task == nil || next.Continuation != 1 {
		t.Fatalf("the reconciler would not carry it on: %+v %v", next, ok)
	}
}

package recorder_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// unknownAtStep2 runs a new operation's step 1, which carries state {"s":1} on, and fails
// its step 2 after it may have acted: the outcome is unknown. It returns the operation and
// the decision that sent step 2 (whose late end the tests deliver).
func (f *fixture) unknownAtStep2() (string, recorder.Decision) {
	f.t.Helper()
	id := f.newOp()
	d2 := f.handle(after(f.handle(recorder.Input{OperationID: id}), `{"status":"continue","state":{"s":1}}`))
	if d2.Next != recorder.NextWork || d2.Request.Step != 2 {
		f.t.Fatalf("step 2: %+v", d2)
	}
	f.handle(recorder.Input{Gate: &recorder.Gate{Decision: &d2}, Error: &recorder.TaskError{Error: "Runtime.ExitError", Cause: "boom"}})
	if op := f.load(id); op.State != operation.OutcomeUnknown {
		f.t.Fatalf("after a worker error: %s", op.State)
	}
	return id, d2
}

// retry is an operator's retry of id at the version they saw.
func (f *fixture) retry(id string, seen int) (operation.Operation, error) {
	s := &intent.Service{Store: f.store, Now: f.clock.Now}
	return s.Resolve(context.Background(), id, "longrun/ops", intent.Resolution{Outcome: operation.KindRetried,
		Reason: "the downstream system has no trace of it", IfMatch: []int{seen}})
}

// woken is the input of the execution that runs op's retried step, as the dispatcher starts it.
func (f *fixture) woken(op operation.Operation) recorder.Input {
	f.t.Helper()
	next, raw, err := recorder.Wake(testSealer(f.t), op, "test-poll")
	if err != nil {
		f.t.Fatal(err)
	}
	if next.Name != op.ID+"-1" || next.Resume {
		f.t.Fatalf("the retry's execution: %+v", next)
	}
	var in recorder.Input
	if err := json.Unmarshal(raw, &in); err != nil {
		f.t.Fatal(err)
	}
	return in
}

// A retried step runs again as it ran the first time, with the same identity and state, as
// attempt 2, and its own end settles the work; the first attempt's end, arriving after the
// retry, is dropped.
func TestARetriedStepRunsAgainWithItsIdentity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id, d2 := f.unknownAtStep2()
	unknown := f.load(id)
	if r := unknown.Retryable; r == nil || r.Step != 2 || r.Attempt != 1 || string(r.State) != `{"s":1}` {
		t.Fatalf("the unknown outcome's retry point: %+v", r)
	}
	op, err := f.retry(id, unknown.Version)
	if err != nil {
		t.Fatal(err)
	}
	d := f.handle(f.woken(op))
	if d.Next != recorder.NextWork || d.Request.Step != 2 || d.Request.Attempt != 2 || string(d.Request.State) != `{"s":1}` || d.Request.OperationID != id {
		t.Fatalf("the retried step's request: %+v", d.Request)
	}
	// The first attempt's result comes in late: it is not recorded.
	v := f.load(id).Version
	if late := f.handle(after(d2, `{"status":"succeeded","result":{"attempt":1}}`)); late.Next != recorder.NextDone {
		t.Fatalf("the late end's decision: %+v", late)
	}
	if op := f.load(id); op.Version != v || op.State != operation.Running {
		t.Fatalf("the late end of attempt 1 changed the operation: version %d → %d, %s", v, op.Version, op.State)
	}
	f.handle(after(d, `{"status":"succeeded","result":{"attempt":2}}`))
	if op := f.load(id); op.State != operation.Succeeded || string(op.Result) != `{"attempt":2}` || op.Progress == nil || op.Progress.CompletedSteps != 2 {
		t.Fatalf("after the retried step: %s %s %+v", op.State, op.Result, op.Progress)
	}
	// The step after a retried one is its own first attempt.
	id, _ = f.unknownAtStep2()
	op, err = f.retry(id, f.load(id).Version)
	if err != nil {
		t.Fatal(err)
	}
	d = f.handle(f.woken(op))
	d3 := f.handle(after(d, `{"status":"continue","state":{"s":2}}`))
	if d3.Request == nil || d3.Request.Step != 3 || d3.Request.Attempt != 0 {
		t.Fatalf("the step after the retried one: %+v", d3.Request)
	}
}

// A retry racing the late end of the attempt it gives up on, on both stores: exactly one of
// them takes effect. Either the late end settles the work first and the retry is refused,
// or the retry is recorded and the late end is dropped; never both.
func TestARetryRacingALateResult(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		retried, late := 0, 0
		for trial := range 8 {
			id, d2 := f.unknownAtStep2()
			seen := f.load(id).Version
			var retryErr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _, retryErr = f.retry(id, seen) }()
			go func() {
				defer wg.Done()
				if _, err := f.rec.Handle(context.Background(), after(d2, `{"status":"succeeded","result":{"late":true}}`)); err != nil {
					t.Error(err)
				}
			}()
			wg.Wait()
			op := f.load(id)
			retriedAt := f.versionOf(id, func(fa operation.Fact) bool { return fa.Kind == operation.KindRetried })
			switch {
			case retryErr == nil && op.State == operation.Running && retriedAt == op.Version:
				retried++ // the late end, after the retry, changed nothing
			case retryErr != nil && op.State == operation.Succeeded && string(op.Result) == `{"late":true}` && retriedAt == 0 &&
				(problem.CodeOf(retryErr) == problem.AlreadyTerminal || problem.CodeOf(retryErr) == problem.VersionMismatch):
				late++
			default:
				t.Fatalf("trial %d: retry %v, then %s at version %d (retried fact %d), result %s", trial, retryErr, op.State, op.Version, retriedAt, op.Result)
			}
		}
		t.Logf("retry first %d times, late result first %d times", retried, late)
	})
}

// A retry racing a cancel, on both stores: a cancel of an unknown outcome is refused (an
// operator settles it), and one after the retry, before an execution took it up, ends the
// work at once. The execution started for the retry then runs nothing.
func TestARetryRacingACancel(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		canceled, ran := 0, 0
		for trial := range 8 {
			id, _ := f.unknownAtStep2()
			seen := f.load(id).Version
			var retryErr, cancelErr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _, retryErr = f.retry(id, seen) }()
			go func() {
				defer wg.Done()
				s := &intent.Service{Store: f.store, Now: f.clock.Now}
				_, _, cancelErr = s.Cancel(context.Background(), id, intent.Sender{Principal: "alice"}, func(operation.Operation) bool { return true }, nil)
			}()
			wg.Wait()
			if retryErr != nil {
				t.Fatalf("trial %d: the retry: %v", trial, retryErr)
			}
			op := f.load(id)
			switch {
			case cancelErr == nil && op.State == operation.Canceled:
				// The execution the dispatcher may already have started finds nothing to do.
				pending := op // as the dispatcher read it, before the cancel
				pending.State, pending.Retrying = operation.Running, &op.Retried.Retry
				in := f.woken(pending)
				if d := f.handle(in); d.Next != recorder.NextDone || f.load(id).Version != op.Version {
					t.Fatalf("trial %d: the retry's execution after the cancel: %+v", trial, d)
				}
				canceled++
			case problem.CodeOf(cancelErr) == problem.AlreadyTerminal && op.State == operation.Running:
				if d := f.handle(f.woken(op)); d.Next != recorder.NextWork || d.Request.Attempt != 2 {
					t.Fatalf("trial %d: the retried step: %+v", trial, d)
				}
				ran++
			default:
				t.Fatalf("trial %d: cancel %v, retry %v, then %s", trial, cancelErr, retryErr, op.State)
			}
		}
		t.Logf("canceled after the retry %d times, cancel refused and the step run %d times", canceled, ran)
	})
}

// A parked step's late delivery, from the attempt an operator had run again, reaches the
// parked Run of the new attempt: it is stale. Nothing is recorded, the new Run's token is
// not answered and its claims are not taken, so the new attempt's own delivery then ends
// the work as it should.
func TestALateParkedDeliveryDoesNotEndTheRetry(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		s := &script{answers: []any{`{"status":"continue","state":{"c":1}}`, `{"status":"succeeded","result":{"n":2}}`}, takes: time.Second}
		q, c := f.parked(s)
		f.runWith("tok-1", recorder.Input{OperationID: id})
		f.deliver(q.next(t, s)) // step 1's end sends step 2
		late := q.next(t, s)    // step 2, attempt 1: its end is held back, as by a stuck queue
		// The first execution gave up on it: the outcome is unknown, and its token is gone.
		op := f.load(id)
		if _, err := f.store.Append(context.Background(), op, operation.Fact{Kind: operation.KindOutcomeUnknown, At: f.clock.Now(),
			Source: operation.SourceExecutor, Problem: operation.NewProblem("step_timeout", "Step timed out", "it did not answer"),
			Retry: &operation.Retry{Step: 2, Attempt: 1, State: json.RawMessage(`{"c":1}`)}}); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		c.stopped = map[string]bool{"tok-1": true}
		c.mu.Unlock()
		op, err := f.retry(id, f.load(id).Version)
		if err != nil {
			t.Fatal(err)
		}
		in := f.woken(op)
		in.Seal = "" // the test's Run is called directly, as the workflow calls it
		if d := f.runWith("tok-2", in); d.Next != recorder.NextParked {
			t.Fatalf("the retry's Run: %+v", d)
		}
		fresh := q.next(t, s) // step 2, attempt 2
		v := f.load(id).Version
		f.deliver(late)
		if after := f.load(id); after.Version != v || after.State != operation.Running || len(c.of("tok-2")) != 0 {
			t.Fatalf("the late delivery of attempt 1: version %d → %d, %s, answers %+v", v, after.Version, after.State, c.of("tok-2"))
		}
		f.deliver(fresh)
		if done := f.load(id); done.State != operation.Succeeded || len(c.of("tok-2")) != 1 || c.of("tok-2")[0].Next != recorder.NextDone {
			t.Fatalf("the retried attempt's delivery: %s, answers %+v", done.State, c.of("tok-2"))
		}
		if last := s.requests[len(s.requests)-1]; last.Step != 2 || last.Attempt != 2 || string(last.State) != `{"c":1}` {
			t.Fatalf("the retried request: %+v", last)
		}
	})
}

package dispatch_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/service/recorder"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// awaitApproval dispatches id and records what the recorder records when step 1 asks to
// wait for approval.
func (f *fixture) awaitApproval(id string) operation.Operation {
	f.t.Helper()
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		f.t.Fatal(err)
	}
	now := time.Now()
	op, err := f.store.Append(context.Background(), f.load(id),
		operation.Fact{Kind: operation.KindStarted, Source: operation.SourceExecutor, At: now},
		operation.Fact{Kind: operation.KindProgress, Source: operation.SourceExecutor, At: now,
			Progress: &operation.Progress{CompletedSteps: 1},
			Awaiting: &operation.Awaiting{Signal: "approval", Since: now, Until: now.Add(time.Hour), Step: 1, State: json.RawMessage(`{"done":0}`)}})
	if err != nil {
		f.t.Fatal(err)
	}
	return op
}

func (f *fixture) approve(id string) {
	f.t.Helper()
	s := &intent.Service{Store: f.store, Now: time.Now}
	if _, _, err := s.Signal(context.Background(), optype.Builtin(), intent.SignalRequest{ID: id, Name: "approval",
		Data: json.RawMessage(`{"approved":true}`), Decoded: map[string]any{"approved": true}, Key: "k-" + id,
		Sender: intent.Sender{Tenant: "acme", Principal: "alice"}}); err != nil {
		f.t.Fatal(err)
	}
}

// The signal a wait is for wakes it: the signaled fact's stream record makes the dispatcher
// start the operation's next execution on the type's own state machine, with the input
// that ends the wait (recorder.Wake), once however often the record comes. A signal while
// nothing waits for it starts nothing: the next step is given it.
func TestTheAwaitedSignalWakesTheWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	waiting := f.accepted()
	f.awaitApproval(waiting)
	running := f.accepted()
	if err := f.d.Dispatch(context.Background(), running); err != nil {
		t.Fatal(err)
	}
	before := len(f.exec.Executions())
	f.approve(waiting)
	f.approve(running)
	for range 2 { // a record delivered twice
		resp, err := f.d.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
			dynamotest.FactRecord(waiting, string(operation.KindSignaled), "1"),
			dynamotest.FactRecord(running, string(operation.KindSignaled), "2"),
		}})
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("%+v %v", resp, err)
		}
	}
	if got := len(f.exec.Executions()); got != before+1 {
		t.Fatalf("%d executions started, want 1: %v", got-before, f.exec.Executions())
	}
	ex, ok := f.exec.Executions()[waiting+"-1"]
	if !ok {
		t.Fatalf("no execution %s-1: %v", waiting, f.exec.Executions())
	}
	var in recorder.Input
	if err := json.Unmarshal(ex.Input, &in); err != nil {
		t.Fatal(err)
	}
	d := in.Gate.Decision
	if in.Continuation != 1 || d.Next != recorder.NextAwait || d.Request.Step != 2 || string(d.Request.State) != `{"done":0}` ||
		!strings.Contains(ex.Ref, "longrun-demo-task:") {
		t.Fatalf("woken with %+v on %s", in, ex.Ref)
	}
	if op := f.load(waiting); !op.Awaits() || op.State != operation.Running {
		t.Fatalf("the dispatcher recorded something: %s %+v", op.State, op.Awaiting)
	}
}

// A retried fact's stream record makes the dispatcher start the execution that runs the
// step again, once however often the record comes, on the type's own state machine.
func TestARetryIsStartedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.accepted()
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	op, err := f.store.Append(context.Background(), f.load(id),
		operation.Fact{Kind: operation.KindStarted, Source: operation.SourceExecutor, At: now},
		operation.Fact{Kind: operation.KindOutcomeUnknown, Source: operation.SourceExecutor, At: now,
			Problem: operation.NewProblem("worker_error", "Worker failed", "boom"), Retry: &operation.Retry{Step: 1, Attempt: 1}})
	if err != nil {
		t.Fatal(err)
	}
	s := &intent.Service{Store: f.store, Now: time.Now}
	if _, err := s.Resolve(context.Background(), id, "longrun/ops", intent.Resolution{Outcome: operation.KindRetried, Reason: "r", IfMatch: []int{op.Version}}); err != nil {
		t.Fatal(err)
	}
	before := len(f.exec.Executions())
	for range 2 { // a record delivered twice
		resp, err := f.d.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
			dynamotest.FactRecord(id, string(operation.KindRetried), "1"),
		}})
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("%+v %v", resp, err)
		}
	}
	ex, ok := f.exec.Executions()[id+"-1"]
	if got := len(f.exec.Executions()); got != before+1 || !ok {
		t.Fatalf("%d executions started, want %s-1 only: %v", got-before, id, f.exec.Executions())
	}
	var in recorder.Input
	if err := json.Unmarshal(ex.Input, &in); err != nil {
		t.Fatal(err)
	}
	if d := in.Gate.Decision; in.Continuation != 1 || d.Next != recorder.NextRetry || d.Request.Step != 1 {
		t.Fatalf("started with %+v", in)
	}
}

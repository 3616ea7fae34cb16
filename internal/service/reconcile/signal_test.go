package reconcile_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// A wait for a signal that timed out is the reconciler's to end: no execution ran during
// it, so it starts the operation's next one, with the input that ends the wait. When that
// execution's Run was throttled before it named itself (the workflow caught it), the next
// look carries the work on after it, as after any such execution, rather than finding the
// execution ended and leaving the operation waiting for good.
func TestATimedOutWaitIsWokenAndCarriedOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	now := f.clock.Now()
	if _, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindProgress,
		Source: operation.SourceExecutor, At: now, Progress: &operation.Progress{CompletedSteps: 1},
		Awaiting: &operation.Awaiting{Signal: "approval", Since: now, Until: now.Add(time.Minute), Step: 1, State: json.RawMessage(`{"done":0}`)}}); err != nil {
		t.Fatal(err)
	}
	f.finish(id, reconcile.Succeeded, nil)
	f.run()
	if _, ok := f.executionInput(id + "-1"); ok {
		t.Fatal("woken before its timeout")
	}
	f.clock.Advance(2 * time.Minute)
	f.run()
	in, ok := f.executionInput(id + "-1")
	if !ok || in.Continuation != 1 || in.Gate.Decision.Next != recorder.NextAwait || in.Gate.Decision.Request.Step != 2 ||
		string(in.Gate.Decision.Request.State) != `{"done":0}` {
		t.Fatalf("woken with %+v (%v)", in, ok)
	}
	// Its Run throttled: the workflow's Catch ended it with its input and the error.
	caught := in
	caught.Seal, caught.RecordError = "", &recorder.TaskError{Error: "Lambda.TooManyRequestsException", Cause: "Rate exceeded"}
	out, _ := json.Marshal(caught)
	f.finish(id+"-1", reconcile.Succeeded, out)
	f.clock.Advance(leases.Check + time.Second)
	f.run()
	next, ok := f.executionInput(id + "-2")
	if !ok || next.Continuation != 2 || next.Gate.Decision.Next != recorder.NextAwait || next.Gate.Decision.Request.Step != 2 {
		t.Fatalf("not carried on after the throttled wake: %+v (%v)", next, ok)
	}
	if op := f.load(id); !op.Awaits() {
		t.Fatalf("the reconciler recorded something: %s", op.State)
	}
}

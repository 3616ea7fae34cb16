package reconcile_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// A retry that no execution took up (the dispatcher's start failed or was throttled) is the
// reconciler's to start: the execution before it ended with the unknown outcome, so there is
// nothing to look at, only the retried step's execution to start, with the same input the
// dispatcher would have given it. It records nothing itself.
func TestAnUntakenRetryIsStarted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	if _, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindOutcomeUnknown,
		Source: operation.SourceExecutor, At: f.clock.Now(), Problem: operation.NewProblem("worker_error", "Worker failed", "boom"),
		Retry: &operation.Retry{Step: 1, Attempt: 1, State: json.RawMessage(`{"page":1}`)}}); err != nil {
		t.Fatal(err)
	}
	f.finish(id, reconcile.Succeeded, nil)
	svc := &intent.Service{Store: f.store, Now: f.clock.Now, Leases: leases}
	op, err := svc.Resolve(context.Background(), id, "longrun/ops", intent.Resolution{Outcome: operation.KindRetried, Reason: "not applied", IfMatch: []int{f.load(id).Version}})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(leases.Check + 1)
	f.run()
	in, ok := f.executionInput(id + "-1")
	if !ok || in.Continuation != 1 || in.Gate.Decision.Next != recorder.NextRetry || in.Gate.Decision.Request.Step != 1 ||
		string(in.Gate.Decision.Request.State) != `{"page":1}` {
		t.Fatalf("the retry started with %+v (%v)", in, ok)
	}
	if after := f.load(id); after.Version != op.Version || after.State != operation.Running {
		t.Fatalf("the reconciler recorded something: %s at version %d", after.State, after.Version)
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	lrclient "github.com/longrun-dev/longrun/client"
)

// publicClient is the public client for alice, as another module would make it.
func publicClient(t *testing.T) *lrclient.Client {
	t.Helper()
	opts := &lrclient.ClientOptions{Auth: lrclient.BearerToken("alice-dev-token")}
	if stack.sigv4 != nil {
		opts.Auth = lrclient.SigV4(*stack.sigv4)
	}
	c, err := lrclient.New(stack.APIURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every representation the real API produces, decoded through the public client: accepted,
// running (with progress), cancelling, succeeded, failed, canceled and outcome_unknown, each
// with what its state carries. (dispatched lasts milliseconds on the stack: the client's own
// tests decode the contract's example of it.)
func TestEveryRepresentationThroughThePublicClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := publicClient(t)
	create := func(input string) *lrclient.Operation {
		t.Helper()
		op, err := c.Create(ctx, lrclient.CreateRequest{Type: "demo.task", Input: json.RawMessage(input)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if op.IdempotencyKey == "" || op.StatusURL == "" || op.State != lrclient.StateAccepted {
			t.Fatalf("created %+v", op)
		}
		return op
	}
	until := func(op *lrclient.Operation) *lrclient.Operation {
		t.Helper()
		p, err := c.NewPoller(op)
		if err != nil {
			t.Fatal(err)
		}
		done, err := p.PollUntilDone(ctx, &lrclient.PollOptions{MinDelay: 100 * time.Millisecond, MaxDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return done
	}

	// succeeded, with its result and progress; and a replay with the same key.
	ok := create(`{"target":"e2e-pc-ok","steps":2}`)
	done := until(ok)
	var result struct{ Steps int }
	if done.State != lrclient.StateSucceeded || !done.Terminal || done.DecodeResult(&result) != nil || result.Steps != 2 ||
		done.Progress == nil || done.Progress.CompletedSteps != 2 || done.Err() != nil {
		t.Fatalf("succeeded: %+v", done)
	}
	again, err := c.Create(ctx, lrclient.CreateRequest{Type: "demo.task", Input: json.RawMessage(`{"target":"e2e-pc-ok","steps":2}`), Key: ok.IdempotencyKey}, nil)
	if err != nil || !again.Replayed || again.OperationID != ok.OperationID {
		t.Fatalf("replay: %+v %v", again, err)
	}

	// failed and outcome_unknown, each with its typed problem.
	failed := until(create(`{"target":"e2e-pc-fail","outcome":"fail"}`))
	var opErr *lrclient.OperationError
	if failed.State != lrclient.StateFailed || failed.Problem == nil || failed.Problem.Code != "demo_failed" || !errors.As(failed.Err(), &opErr) {
		t.Fatalf("failed: %+v", failed)
	}
	unknown := until(create(`{"target":"e2e-pc-unknown","outcome":"unknown"}`))
	if unknown.State != lrclient.StateOutcomeUnknown || unknown.Terminal || unknown.Problem == nil || unknown.Problem.Code != "worker_error" {
		t.Fatalf("outcome_unknown: %+v", unknown)
	}

	// running with progress, then cancelling, then canceled.
	slow := create(`{"target":"e2e-pc-slow","steps":5,"sleepMs":700}`)
	var running *lrclient.Operation
	for running == nil || running.Progress == nil {
		if ctx.Err() != nil {
			t.Fatalf("never saw it running with progress: %+v", running)
		}
		got, err := c.Get(ctx, slow.OperationID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == lrclient.StateRunning {
			running = got
		}
		time.Sleep(100 * time.Millisecond)
	}
	if running.Progress.TotalSteps == nil || *running.Progress.TotalSteps != 5 || running.RetryAfter <= 0 || running.ETag == "" {
		t.Fatalf("running: %+v %+v", running, running.Progress)
	}
	v := running.Version
	cancelling, err := c.Cancel(ctx, slow.OperationID, &lrclient.CancelOptions{IfVersion: &v})
	if err != nil {
		var pe *lrclient.ProblemError
		if errors.As(err, &pe) && pe.Code == "version_mismatch" { // it moved on meanwhile: cancel what it is now
			cancelling, err = c.Cancel(ctx, slow.OperationID, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if cancelling.State != lrclient.StateCancelling || !cancelling.CancelRequested {
		t.Fatalf("cancelling: %+v", cancelling)
	}
	if canceled := until(cancelling); canceled.State != lrclient.StateCanceled || !canceled.Terminal {
		t.Fatalf("canceled: %+v", canceled)
	}

	// accepted: with the dispatcher held, the operation stays accepted.
	if stack.local == nil {
		return
	}
	var held *lrclient.Operation
	paused(t, func() {
		held = create(`{"target":"e2e-pc-accepted"}`)
		got, err := c.Get(ctx, held.OperationID)
		if err != nil || got.State != lrclient.StateAccepted || got.Terminal || got.ObservedAt != nil {
			t.Fatalf("accepted: %+v %v", got, err)
		}
	})
	if done := until(held); done.State != lrclient.StateSucceeded {
		t.Fatalf("after the dispatcher resumed: %+v", done)
	}
	// A problem from the API is typed: an unknown id is 404 not_found.
	if _, err := c.Get(ctx, "op_01ARYZ6S410000000000000000"); !lrclient.IsCode(err, "not_found") {
		t.Fatalf("%v", err)
	}
}

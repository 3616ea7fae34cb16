package intent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/testkit/memstore"
)

// unknownAtStep2 admits an operation whose step 2, given state, ended with an unknown
// outcome; retryable says whether the recorder knew the step (a reconciler that found the
// execution gone does not).
func unknownAtStep2(t *testing.T, s *memstore.Store, retryable bool) operation.Operation {
	t.Helper()
	id := s.Accept(t, "", t0)
	op, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	unknown := operation.Fact{Kind: operation.KindOutcomeUnknown, At: t0, Source: operation.SourceExecutor,
		Problem: operation.NewProblem("worker_error", "Worker failed", "it failed")}
	if retryable {
		unknown.Retry = &operation.Retry{Step: 2, Attempt: 1, State: json.RawMessage(`{"page":2}`)}
	}
	op, err = s.Append(context.Background(), op,
		operation.Fact{Kind: operation.KindDispatched, At: t0, Source: operation.SourceDispatcher, Execution: "arn:exec:" + id},
		operation.Fact{Kind: operation.KindStarted, At: t0, Source: operation.SourceExecutor},
		operation.Fact{Kind: operation.KindProgress, At: t0, Source: operation.SourceExecutor, Progress: &operation.Progress{CompletedSteps: 1}},
		unknown)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// A retry is the operator's word that the step did not take effect: it runs the same step
// again, as its next attempt, and is refused (changing nothing) wherever it could not run.
func TestRetry(t *testing.T) {
	retry := func(versions ...int) intent.Resolution {
		return intent.Resolution{Outcome: operation.KindRetried, Reason: "the bucket has no such object", IfMatch: versions}
	}
	for _, c := range []struct {
		name      string
		retryable bool
		after     time.Duration // since admission; the deadline is an hour
		r         func(op operation.Operation) intent.Resolution
		code      problem.Code
	}{
		{"the step runs again", true, time.Minute, func(op operation.Operation) intent.Resolution { return retry(op.Version) }, ""},
		{"If-Match: * takes any version", true, time.Minute, func(operation.Operation) intent.Resolution { return retry() }, ""},
		{"a version the operator did not see", true, time.Minute,
			func(op operation.Operation) intent.Resolution { return retry(op.Version - 1) }, problem.VersionMismatch},
		{"past the deadline", true, time.Hour, func(op operation.Operation) intent.Resolution { return retry(op.Version) }, problem.DeadlinePassed},
		{"no step recorded", false, time.Minute, func(op operation.Operation) intent.Resolution { return retry(op.Version) }, problem.NotRetryable},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := memstore.New()
			op := unknownAtStep2(t, s, c.retryable)
			svc := &intent.Service{Store: s, Now: func() time.Time { return t0.Add(c.after) }}
			got, err := svc.Resolve(context.Background(), op.ID, "longrun/ops", c.r(op))
			if problem.CodeOf(err) != c.code || (c.code == "") != (err == nil) {
				t.Fatalf("error %v; want %q", err, c.code)
			}
			if c.code != "" {
				if after := kinds(t, s, op.ID, op.Version); after != "[]" {
					t.Fatalf("a refused retry recorded %s", after)
				}
				return
			}
			facts, _ := s.Facts(context.Background(), op.ID)
			f := facts[len(facts)-1]
			switch {
			case got.State != operation.Running:
				t.Errorf("state %s, want running", got.State)
			case f.Kind != operation.KindRetried || f.Actor != "longrun/ops" || f.Reason != "the bucket has no such object" || f.Source != operation.SourceOperator:
				t.Errorf("fact %+v: want who retried it and why", f)
			case f.Retry == nil || f.Retry.Step != 2 || f.Retry.Attempt != 2 || string(f.Retry.State) != `{"page":2}`:
				t.Errorf("retry %+v: want step 2, attempt 2, with the state it was given", f.Retry)
			}
		})
	}
}

// The second retry of the same step is its third attempt; a cancel before the execution
// takes a retry up ends the work at once, as nothing is in flight.
func TestRetryAgainAndCancel(t *testing.T) {
	s := memstore.New()
	op := unknownAtStep2(t, s, true)
	now := t0.Add(time.Minute)
	svc := &intent.Service{Store: s, Now: func() time.Time { return now }}
	op, err := svc.Resolve(context.Background(), op.ID, "longrun/ops", intent.Resolution{Outcome: operation.KindRetried, Reason: "r", IfMatch: []int{op.Version}})
	if err != nil {
		t.Fatal(err)
	}
	// The retried attempt's own outcome is unknown again.
	op, err = s.Append(context.Background(), op,
		operation.Fact{Kind: operation.KindProgress, At: now, Source: operation.SourceExecutor, Execution: "arn:exec:" + op.ID + "-1"},
		operation.Fact{Kind: operation.KindOutcomeUnknown, At: now, Source: operation.SourceExecutor, Problem: operation.NewProblem("step_timeout", "t", "d"),
			Retry: &operation.Retry{Step: 2, Attempt: 2, State: json.RawMessage(`{"page":2}`)}})
	if err != nil {
		t.Fatal(err)
	}
	op, err = svc.Resolve(context.Background(), op.ID, "longrun/ops", intent.Resolution{Outcome: operation.KindRetried, Reason: "again", IfMatch: []int{op.Version}})
	if err != nil {
		t.Fatal(err)
	}
	if op.Retried == nil || op.Retried.Attempt != 3 || op.Attempt(2) != 3 {
		t.Fatalf("retried %+v: want attempt 3", op.Retried)
	}
	op, already, err := svc.Cancel(context.Background(), op.ID, intent.Sender{Principal: "alice"}, everyone, nil)
	if err != nil || already {
		t.Fatal(err, already)
	}
	if op.State != operation.Canceled {
		t.Fatalf("a cancel before the retry was taken up left it %s, want canceled", op.State)
	}
}

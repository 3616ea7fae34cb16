package intent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/testkit/memstore"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func everyone(operation.Operation) bool { return true }

// history is the facts after accepted that bring an operation to state, as the
// dispatcher, the recorder and a cancel write them.
func history(state operation.State) []operation.Kind {
	return map[operation.State][]operation.Kind{
		operation.Accepted:       nil,
		operation.Dispatched:     {operation.KindDispatched},
		operation.Running:        {operation.KindDispatched, operation.KindStarted},
		operation.Cancelling:     {operation.KindDispatched, operation.KindStarted, operation.KindCancelRequested},
		operation.Canceled:       {operation.KindDispatched, operation.KindStarted, operation.KindCancelRequested, operation.KindCanceled},
		operation.Succeeded:      {operation.KindDispatched, operation.KindStarted, operation.KindSucceeded},
		operation.Failed:         {operation.KindDispatched, operation.KindStarted, operation.KindFailed},
		operation.OutcomeUnknown: {operation.KindDispatched, operation.KindStarted, operation.KindOutcomeUnknown},
	}[state]
}

// at admits an operation and brings it to state.
func at(t *testing.T, s *memstore.Store, state operation.State) string {
	t.Helper()
	id := s.Accept(t, "", t0)
	op, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range history(state) {
		f := operation.Fact{Kind: k, At: t0, Source: operation.SourceExecutor}
		switch k {
		case operation.KindDispatched:
			f.Execution, f.Source = "arn:exec:"+id, operation.SourceDispatcher
		case operation.KindSucceeded:
			f.Result = json.RawMessage(`{}`)
		case operation.KindFailed, operation.KindOutcomeUnknown:
			f.Problem = operation.NewProblem("worker_error", "Worker failed", "it failed")
		}
		if op, err = s.Append(context.Background(), op, f); err != nil {
			t.Fatal(err)
		}
	}
	if op.State != state {
		t.Fatalf("history for %s ends %s", state, op.State)
	}
	return id
}

func kinds(t *testing.T, s *memstore.Store, id string, after int) string {
	t.Helper()
	history, err := s.Facts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []operation.Kind
	for _, f := range history[after:] {
		out = append(out, f.Kind)
	}
	return fmt.Sprint(out)
}

// A cancel stops remaining work and never undoes finished work: what it records, and what
// it answers, in every state.
func TestCancelInEveryState(t *testing.T) {
	for _, c := range []struct {
		from     operation.State
		recorded string // the facts it appends
		state    operation.State
		already  bool
		code     problem.Code
	}{
		{operation.Accepted, "[cancel_requested canceled]", operation.Canceled, false, ""},
		{operation.Dispatched, "[cancel_requested]", operation.Cancelling, false, ""},
		{operation.Running, "[cancel_requested]", operation.Cancelling, false, ""},
		{operation.Cancelling, "[]", operation.Cancelling, false, ""},
		{operation.Canceled, "[]", operation.Canceled, true, ""},
		{operation.Succeeded, "[]", operation.Succeeded, false, problem.AlreadyTerminal},
		{operation.Failed, "[]", operation.Failed, false, problem.AlreadyTerminal},
		{operation.OutcomeUnknown, "[]", operation.OutcomeUnknown, false, problem.AlreadyTerminal},
	} {
		t.Run(string(c.from), func(t *testing.T) {
			s := memstore.New()
			id := at(t, s, c.from)
			before := len(history(c.from)) + 1
			svc := &intent.Service{Store: s, Now: func() time.Time { return t0.Add(time.Minute) }}
			op, already, err := svc.Cancel(context.Background(), id, intent.Sender{Principal: "alice"}, everyone, nil)
			if problem.CodeOf(err) != c.code || (c.code == "") != (err == nil) {
				t.Fatalf("error %v; want %q", err, c.code)
			}
			if got := kinds(t, s, id, before); got != c.recorded || already != c.already {
				t.Fatalf("recorded %s, already %v; want %s, %v", got, already, c.recorded, c.already)
			}
			if err == nil && op.State != c.state {
				t.Fatalf("state %s; want %s", op.State, c.state)
			}
		})
	}
}

// The caller's view decides first: an operation they cannot see is not found, and one at
// another version than their If-Match is version_mismatch; neither records anything.
func TestCancelChecksVisibilityAndVersionFirst(t *testing.T) {
	for _, c := range []struct {
		name    string
		visible intent.Visible
		ifMatch []int
		code    problem.Code
	}{
		{"invisible", func(operation.Operation) bool { return false }, nil, problem.NotFound},
		{"another version", everyone, []int{1, 3}, problem.VersionMismatch},
		{"the version seen", everyone, []int{1, 2}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := memstore.New()
			id := at(t, s, operation.Dispatched)
			svc := &intent.Service{Store: s, Now: func() time.Time { return t0 }}
			_, _, err := svc.Cancel(context.Background(), id, intent.Sender{Principal: "alice"}, c.visible, c.ifMatch)
			if problem.CodeOf(err) != c.code || (c.code == "") != (err == nil) {
				t.Fatalf("error %v; want %q", err, c.code)
			}
			want := "[]"
			if c.code == "" {
				want = "[cancel_requested]"
			}
			if got := kinds(t, s, id, 2); got != want {
				t.Fatalf("recorded %s; want %s", got, want)
			}
		})
	}
}

// A cancel decided on an accepted operation that the worker starts before the cancel is
// written is decided again: the work may have begun, so it asks to stop and records no
// canceled.
func TestACancelThatLosesToAStartDecidesAgain(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	id := at(t, s, operation.Accepted)
	s.BeforeNextAppend(func(op operation.Operation) {
		if _, err := s.Append(ctx, op, operation.Fact{Kind: operation.KindStarted, At: t0, Source: operation.SourceExecutor}); err != nil {
			t.Errorf("the worker's start: %v", err)
		}
	})
	svc := &intent.Service{Store: s, Now: func() time.Time { return t0 }}
	op, already, err := svc.Cancel(ctx, id, intent.Sender{Principal: "alice"}, everyone, nil)
	if err != nil || already || op.State != operation.Cancelling || s.Conflicts() != 1 {
		t.Fatalf("%s, already %v, %d conflicts, %v; want cancelling after one lost race", op.State, already, s.Conflicts(), err)
	}
	if got := kinds(t, s, id, 1); got != "[started cancel_requested]" {
		t.Fatalf("history %s", got)
	}
}

// Only an unknown outcome takes an operator's resolution; a failure resolved without a
// problem gets one that says an operator resolved it.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name  string
		from  operation.State
		r     intent.Resolution
		state operation.State
		code  problem.Code
		check func(t *testing.T, op operation.Operation)
	}{
		{"succeeded with its result", operation.OutcomeUnknown,
			intent.Resolution{Outcome: operation.KindSucceeded, Reason: "checked the bucket", Result: json.RawMessage(`{"rows":3}`)},
			operation.Succeeded, "", func(t *testing.T, op operation.Operation) {
				if string(op.Result) != `{"rows":3}` {
					t.Fatalf("result %s", op.Result)
				}
			}},
		{"failed without a problem", operation.OutcomeUnknown,
			intent.Resolution{Outcome: operation.KindFailed, Reason: "nothing was written"},
			operation.Failed, "", func(t *testing.T, op operation.Operation) {
				if op.Problem == nil || op.Problem.Code != "resolved_failed" || op.Problem.Detail != "nothing was written" {
					t.Fatalf("problem %+v", op.Problem)
				}
			}},
		{"failed with a problem", operation.OutcomeUnknown,
			intent.Resolution{Outcome: operation.KindFailed, Problem: operation.NewProblem("quota", "Quota", "the account's")},
			operation.Failed, "", func(t *testing.T, op operation.Operation) {
				if op.Problem == nil || op.Problem.Code != "quota" {
					t.Fatalf("problem %+v", op.Problem)
				}
			}},
		{"running is not the operator's", operation.Running,
			intent.Resolution{Outcome: operation.KindSucceeded}, operation.Running, problem.AlreadyTerminal, nil},
		{"succeeded is settled", operation.Succeeded,
			intent.Resolution{Outcome: operation.KindFailed}, operation.Succeeded, problem.AlreadyTerminal, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := memstore.New()
			id := at(t, s, c.from)
			svc := &intent.Service{Store: s, Now: func() time.Time { return t0.Add(time.Hour) }}
			op, err := svc.Resolve(context.Background(), id, "ops@acme", c.r)
			if problem.CodeOf(err) != c.code || (c.code == "") != (err == nil) {
				t.Fatalf("error %v; want %q", err, c.code)
			}
			stored, lerr := s.Load(context.Background(), id)
			if lerr != nil || stored.State != c.state {
				t.Fatalf("stored %s, %v; want %s", stored.State, lerr, c.state)
			}
			if c.check != nil {
				c.check(t, op)
			}
		})
	}
}

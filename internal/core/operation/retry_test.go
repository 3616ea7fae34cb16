package operation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// unknownAt is a history that ended outcome_unknown at step 2, whose worker was given state.
func unknownAt(t *testing.T) []Fact {
	t.Helper()
	facts := history(KindAccepted, KindDispatched, KindStarted, KindOutcomeUnknown)
	facts[3].Retry = &Retry{Step: 2, Attempt: 1, State: json.RawMessage(`{"cursor":7}`)}
	return facts
}

func TestARetryRunsTheUnknownStepAgain(t *testing.T) {
	facts := unknownAt(t)
	op, err := Fold("op_1", facts)
	if err != nil {
		t.Fatal(err)
	}
	if op.Retryable == nil || op.Retryable.Step != 2 || string(op.Retryable.State) != `{"cursor":7}` {
		t.Fatalf("retryable = %+v, want step 2 with its state", op.Retryable)
	}
	if op.Attempt(2) != 1 {
		t.Fatalf("attempt before any retry = %d, want 1", op.Attempt(2))
	}
	retried := Fact{Version: 5, Kind: KindRetried, At: t0.Add(time.Minute), Source: SourceOperator, Actor: "longrun/ops", Reason: "checked: not applied",
		Retry: &Retry{Step: 2, Attempt: 2, State: op.Retryable.State}}
	op, err = op.Apply(retried)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case op.State != Running:
		t.Errorf("state after a retry = %s, want running", op.State)
	case op.Problem != nil:
		t.Errorf("a running operation keeps the unknown outcome's problem: %+v", op.Problem)
	case op.Retrying == nil || op.Retried == nil || op.Retryable != nil:
		t.Errorf("retrying %+v, retried %+v, retryable %+v: want the retry pending and nothing left to retry", op.Retrying, op.Retried, op.Retryable)
	case op.Attempt(2) != 2 || op.Attempt(3) != 1:
		t.Errorf("attempts: step 2 %d, step 3 %d; want 2 and 1", op.Attempt(2), op.Attempt(3))
	}
	rep := op.Represent("/v1/operations/op_1")
	if rep.Problem != nil || rep.Terminal || rep.Retried == nil ||
		*rep.Retried != (RetriedView{Step: 2, Attempt: 2, At: FormatTime(retried.At), Reason: "checked: not applied"}) {
		t.Errorf("representation after a retry: %+v retried %+v", rep, rep.Retried)
	}
	if b, _ := json.Marshal(rep); strings.Contains(string(b), "cursor") || strings.Contains(string(b), "longrun/ops") {
		t.Errorf("the representation shows the worker's state or the operator: %s", b)
	}
	// The execution that runs it takes it up with a fact of its own.
	op, err = op.Apply(Fact{Version: 6, Kind: KindProgress, At: t0.Add(2 * time.Minute), Source: SourceExecutor, Execution: "op_1-1"})
	if err != nil {
		t.Fatal(err)
	}
	if op.Retrying != nil || op.Retried == nil {
		t.Errorf("after an executor fact: retrying %+v (want nil), retried %+v (kept)", op.Retrying, op.Retried)
	}
}

func TestAStaleAttemptIsSuperseded(t *testing.T) {
	op := Operation{Retried: &Retried{Retry: Retry{Step: 3, Attempt: 2}}}
	for _, c := range []struct {
		step, attempt int
		stale         bool
	}{
		{2, 1, true}, {2, 5, true}, // an earlier step
		{3, 0, true}, {3, 1, true}, // the attempt given up on (0: counted before attempts were)
		{3, 2, false}, {3, 3, false}, // the retry itself, and a later one
		{4, 1, false}, // a step after it
	} {
		if got := op.Superseded(c.step, c.attempt); got != c.stale {
			t.Errorf("Superseded(%d, %d) = %v, want %v", c.step, c.attempt, got, c.stale)
		}
	}
	if (Operation{}).Superseded(1, 1) {
		t.Error("nothing is superseded without a retry")
	}
}

func TestARetryWithoutAStepIsMalformed(t *testing.T) {
	facts := append(unknownAt(t), Fact{Version: 5, Kind: KindRetried, At: t0, Source: SourceOperator})
	if _, err := Fold("op_1", facts); !errors.Is(err, ErrMalformedHistory) {
		t.Fatalf("fold = %v, want ErrMalformedHistory", err)
	}
	facts[4].Retry = &Retry{Step: 2, Attempt: 1} // attempt 1 is the first run, never a retry
	if _, err := Fold("op_1", facts); !errors.Is(err, ErrMalformedHistory) {
		t.Fatalf("fold = %v, want ErrMalformedHistory", err)
	}
}

package operation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var allKinds = []Kind{KindAccepted, KindDispatched, KindStarted, KindCancelRequested, KindProgress, KindSucceeded, KindFailed, KindCanceled, KindOutcomeUnknown, KindSignaled, KindRetried}

// legal is the contract's state machine written out by hand, independently of the
// implementation's table: "from + fact = to". Everything not listed must be rejected.
var legal = []string{
	" + accepted = accepted",
	"accepted + dispatched = dispatched",
	"accepted + started = running",
	"accepted + cancel_requested = cancelling",
	"accepted + canceled = canceled",
	"accepted + failed = failed",
	"accepted + signaled = accepted", // kept for the first step
	"dispatched + started = running",
	"dispatched + cancel_requested = cancelling",
	"dispatched + succeeded = succeeded",
	"dispatched + failed = failed",
	"dispatched + canceled = canceled",
	"dispatched + outcome_unknown = outcome_unknown",
	"dispatched + signaled = dispatched",
	"running + progress = running",
	"running + cancel_requested = cancelling",
	"running + succeeded = succeeded",
	"running + failed = failed",
	"running + canceled = canceled",
	"running + outcome_unknown = outcome_unknown",
	"running + signaled = running",
	"cancelling + progress = cancelling",
	"cancelling + canceled = canceled",
	"cancelling + succeeded = succeeded",
	"cancelling + failed = failed",
	"cancelling + outcome_unknown = outcome_unknown",
	"outcome_unknown + succeeded = succeeded",
	"outcome_unknown + failed = failed",
	"outcome_unknown + retried = running", // an operator had the step run again
}

func TestNextEveryPair(t *testing.T) {
	want := map[string]State{}
	for _, l := range legal {
		lhs, to, _ := strings.Cut(l, " = ")
		from, kind, _ := strings.Cut(lhs, " + ")
		want[strings.TrimSpace(from)+"|"+kind] = State(to)
	}
	for _, from := range append([]State{""}, States()...) {
		for _, k := range allKinds {
			got, err := Next(from, k)
			exp, ok := want[string(from)+"|"+string(k)]
			switch {
			case ok && err != nil:
				t.Errorf("%q + %s: unexpected error %v", from, k, err)
			case ok && got != exp:
				t.Errorf("%q + %s = %s, want %s", from, k, got, exp)
			case !ok && !errors.Is(err, ErrIllegalTransition):
				t.Errorf("%q + %s = %q, want ErrIllegalTransition", from, k, got)
			}
		}
	}
}

func TestTerminalStatesAcceptNothing(t *testing.T) {
	for _, s := range []State{Succeeded, Failed, Canceled} {
		if !s.Terminal() {
			t.Errorf("%s should be terminal", s)
		}
		for _, k := range allKinds {
			if _, err := Next(s, k); err == nil {
				t.Errorf("%s accepted %s", s, k)
			}
		}
	}
	for _, s := range []State{Accepted, Dispatched, Running, Cancelling, OutcomeUnknown} {
		if s.Terminal() {
			t.Errorf("%s should not be terminal", s)
		}
	}
}

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func history(kinds ...Kind) []Fact {
	facts := make([]Fact, len(kinds))
	for i, k := range kinds {
		f := Fact{Version: i + 1, Kind: k, At: t0.Add(time.Duration(i) * time.Second), Source: SourceDispatcher}
		switch k {
		case KindAccepted:
			f.Source = SourceAdmission
			f.Admission = &Admission{Type: "demo.task", TypeVersion: 1, Target: "demo:x", Tenant: "acme", Principal: "alice", Input: json.RawMessage(`{"target":"x"}`)}
		case KindStarted, KindSucceeded, KindFailed, KindOutcomeUnknown:
			f.Source = SourceExecutor
		case KindCancelRequested:
			f.Source = SourceClient
			f.Actor = "alice"
		}
		switch k {
		case KindSucceeded:
			f.Result = json.RawMessage(`{"rowCount":3}`)
		case KindFailed:
			f.Problem = NewProblem("demo_failed", "Demo failed", "asked to fail")
		case KindOutcomeUnknown:
			f.Problem = NewProblem("outcome_unknown", "Outcome unknown", "worker lost")
		}
		facts[i] = f
	}
	return facts
}

func TestFoldHistories(t *testing.T) {
	tests := []struct {
		name            string
		kinds           []Kind
		state           State
		observed        bool
		cancelRequested bool
		result, problem bool
	}{
		{"accepted only", []Kind{KindAccepted}, Accepted, false, false, false, false},
		{"dispatched is not observed", []Kind{KindAccepted, KindDispatched}, Dispatched, false, false, false, false},
		{"running", []Kind{KindAccepted, KindDispatched, KindStarted}, Running, true, false, false, false},
		{"succeeded", []Kind{KindAccepted, KindDispatched, KindStarted, KindSucceeded}, Succeeded, true, false, true, false},
		{"failed", []Kind{KindAccepted, KindDispatched, KindStarted, KindFailed}, Failed, true, false, false, true},
		{"cancel before dispatch", []Kind{KindAccepted, KindCancelRequested, KindCanceled}, Canceled, false, true, false, false},
		{"cancel while running", []Kind{KindAccepted, KindDispatched, KindStarted, KindCancelRequested}, Cancelling, true, true, false, false},
		{"success races cancel", []Kind{KindAccepted, KindDispatched, KindStarted, KindCancelRequested, KindSucceeded}, Succeeded, true, true, true, false},
		{"unknown", []Kind{KindAccepted, KindDispatched, KindStarted, KindOutcomeUnknown}, OutcomeUnknown, true, false, false, true},
		{"unknown resolved", []Kind{KindAccepted, KindDispatched, KindStarted, KindOutcomeUnknown, KindSucceeded}, Succeeded, true, false, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			facts := history(tc.kinds...)
			op, err := Fold("op_1", facts)
			if err != nil {
				t.Fatal(err)
			}
			if op.State != tc.state || op.Version != len(facts) {
				t.Fatalf("state %s v%d, want %s v%d", op.State, op.Version, tc.state, len(facts))
			}
			r := op.Represent("/v1/operations/op_1")
			if r.Terminal != tc.state.Terminal() || r.CancelRequested != tc.cancelRequested {
				t.Errorf("terminal=%v cancelRequested=%v", r.Terminal, r.CancelRequested)
			}
			if (r.ObservedAt != nil) != tc.observed {
				t.Errorf("observedAt = %v, want set=%v", r.ObservedAt, tc.observed)
			}
			if (r.Result != nil) != tc.result || (r.Problem != nil) != tc.problem {
				t.Errorf("result=%s problem=%v", r.Result, r.Problem)
			}
			if r.CreatedAt != "2026-11-30T10:00:00.000Z" || r.UpdatedAt != FormatTime(facts[len(facts)-1].At) {
				t.Errorf("createdAt %s updatedAt %s", r.CreatedAt, r.UpdatedAt)
			}
			if r.Type != "demo.task" || r.Target != "demo:x" {
				t.Errorf("type/target %s %s", r.Type, r.Target)
			}
		})
	}
}

func TestFoldRejectsBadHistories(t *testing.T) {
	tests := []struct {
		name  string
		facts []Fact
		want  error
	}{
		{"empty", nil, ErrMalformedHistory},
		{"not accepted first", history(KindDispatched), ErrIllegalTransition},
		{"gap", func() []Fact { f := history(KindAccepted, KindDispatched); f[1].Version = 3; return f }(), ErrMalformedHistory},
		{"duplicate version", func() []Fact { f := history(KindAccepted, KindDispatched); f[1].Version = 1; return f }(), ErrMalformedHistory},
		{"accepted twice", history(KindAccepted, KindAccepted), ErrIllegalTransition},
		{"late worker after cancel", history(KindAccepted, KindDispatched, KindCancelRequested, KindCanceled, KindSucceeded), ErrIllegalTransition},
		{"stale started after cancel intent", history(KindAccepted, KindDispatched, KindCancelRequested, KindStarted), ErrIllegalTransition},
		{"success overwritten", history(KindAccepted, KindDispatched, KindSucceeded, KindFailed), ErrIllegalTransition},
		{"accepted without admission", []Fact{{Version: 1, Kind: KindAccepted, At: t0}}, ErrMalformedHistory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Fold("op_1", tc.facts); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestApplyDoesNotMutateReceiver(t *testing.T) {
	op, err := Fold("op_1", history(KindAccepted))
	if err != nil {
		t.Fatal(err)
	}
	next, err := op.Apply(Fact{Version: 2, Kind: KindDispatched, At: t0, Source: SourceDispatcher, Execution: "internal"})
	if err != nil {
		t.Fatal(err)
	}
	if op.State != Accepted || op.Version != 1 || next.State != Dispatched || next.Execution != "internal" {
		t.Fatalf("op %s v%d, next %s", op.State, op.Version, next.State)
	}
}

func TestRepresentationHidesExecution(t *testing.T) {
	facts := history(KindAccepted)
	facts = append(facts, Fact{Version: 2, Kind: KindDispatched, At: t0, Source: SourceDispatcher, Execution: "arn:aws:states:eu-west-1:123456789012:execution:sm:op_1"})
	op, err := Fold("op_1", facts)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(op.Represent("/v1/operations/op_1"))
	if strings.Contains(string(body), "arn:") || strings.Contains(string(body), "123456789012") {
		t.Fatalf("representation leaks the execution: %s", body)
	}
	if !strings.Contains(string(body), `"observedAt":null`) {
		t.Fatalf("observedAt must be null before an executor reports: %s", body)
	}
}

func TestFormatTimeIsUTC(t *testing.T) {
	zone := time.FixedZone("UTC+14", 14*3600)
	if got := FormatTime(time.Date(2026, 12, 1, 0, 30, 0, 0, zone)); got != "2026-11-30T10:30:00.000Z" {
		t.Fatalf("got %s", got)
	}
}

// Progress is folded from facts: the last fact that carries it wins, and the representation
// shows it (and nothing before a step has completed).
func TestProgressIsFoldedFromFacts(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pct := 40.0
	facts := []Fact{
		{Version: 1, Kind: KindAccepted, At: t0, Source: SourceAdmission, Admission: &Admission{Type: "demo.task", Deadline: t0.Add(time.Hour)}},
		{Version: 2, Kind: KindStarted, At: t0, Source: SourceExecutor},
	}
	op, err := Fold("op_1", facts)
	if err != nil || op.Represent("/x").Progress != nil {
		t.Fatalf("progress before any step completed: %+v %v", op.Progress, err)
	}
	facts = append(facts,
		Fact{Version: 3, Kind: KindProgress, At: t0, Source: SourceExecutor, Progress: &Progress{CompletedSteps: 1, TotalSteps: 5}},
		Fact{Version: 4, Kind: KindProgress, At: t0, Source: SourceExecutor, Progress: &Progress{CompletedSteps: 2, TotalSteps: 5, Percent: &pct, Message: "m"}})
	if op, err = Fold("op_1", facts); err != nil {
		t.Fatal(err)
	}
	r := op.Represent("/x")
	if op.State != Running || r.Progress == nil || r.Progress.CompletedSteps != 2 || r.Progress.TotalSteps != 5 || *r.Progress.Percent != 40 || r.Progress.Message != "m" {
		t.Fatalf("representation %+v state %s", r.Progress, op.State)
	}
	body, _ := json.Marshal(r)
	if !strings.Contains(string(body), `"progress":{"completedSteps":2,"totalSteps":5,"percent":40,"message":"m"}`) {
		t.Fatalf("progress in JSON: %s", body)
	}
	if !op.DeadlineAt(DefaultLeases()).Equal(t0.Add(time.Hour)) || op.PastDeadline(DefaultLeases(), t0.Add(59*time.Minute)) || !op.PastDeadline(DefaultLeases(), t0.Add(61*time.Minute)) {
		t.Fatalf("the admission's deadline must rule: %v", op.DeadlineAt(DefaultLeases()))
	}
	op.Deadline = time.Time{}
	if !op.DeadlineAt(Leases{Deadline: time.Minute}).Equal(t0.Add(time.Minute)) {
		t.Fatal("without an admission deadline the lease applies")
	}
}

// The end of the work keeps what the worker last said about its progress: a failure, a stop
// or a step's end recorded by longrun alone carries only the count of completed steps, and
// the totalSteps, percent and message reported before survive it; a report that says
// anything replaces them all.
func TestTheLastReportedProgressSurvivesTheEnd(t *testing.T) {
	pct := 33.0
	said := Progress{CompletedSteps: 1, TotalSteps: 3, Percent: &pct, Message: "step 1 of 3 done"}
	running := []Fact{
		{Version: 1, Kind: KindAccepted, At: t0, Source: SourceAdmission, Admission: &Admission{Type: "demo.task"}},
		{Version: 2, Kind: KindStarted, At: t0, Source: SourceExecutor},
		{Version: 3, Kind: KindProgress, At: t0, Source: SourceExecutor, Progress: &said},
	}
	cases := []struct {
		name string
		end  Fact
		want string
	}{
		{"a failure with the count alone", Fact{Kind: KindFailed, Problem: NewProblem("demo_failed", "Failed", "asked"), Progress: &Progress{CompletedSteps: 2}},
			`{"completedSteps":2,"totalSteps":3,"percent":33,"message":"step 1 of 3 done"}`},
		{"a cancel with the count alone", Fact{Kind: KindCanceled, Progress: &Progress{CompletedSteps: 2}},
			`{"completedSteps":2,"totalSteps":3,"percent":33,"message":"step 1 of 3 done"}`},
		{"a progress fact with the count alone", Fact{Kind: KindProgress, Progress: &Progress{CompletedSteps: 1}},
			`{"completedSteps":1,"totalSteps":3,"percent":33,"message":"step 1 of 3 done"}`},
		{"an end without progress", Fact{Kind: KindOutcomeUnknown, Problem: NewProblem("result_lost", "Lost", "lost")},
			`{"completedSteps":1,"totalSteps":3,"percent":33,"message":"step 1 of 3 done"}`},
		{"a success that reports", Fact{Kind: KindSucceeded, Progress: &Progress{CompletedSteps: 3, TotalSteps: 3}},
			`{"completedSteps":3,"totalSteps":3}`},
		{"a success that reports a message only", Fact{Kind: KindSucceeded, Progress: &Progress{CompletedSteps: 3, Message: "done"}},
			`{"completedSteps":3,"message":"done"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			end := tc.end
			end.Version, end.At, end.Source = 4, t0.Add(time.Second), SourceExecutor
			op, err := Fold("op_1", append(append([]Fact(nil), running...), end))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(op.Represent("/x").Progress)
			if string(got) != tc.want {
				t.Fatalf("progress %s, want %s", got, tc.want)
			}
		})
	}
	if said.CompletedSteps != 1 || said.Message != "step 1 of 3 done" {
		t.Fatalf("the fold changed a fact's progress: %+v", said)
	}
}

// A lease marks a step in flight until it runs out, is released by the next executor fact,
// or is voided by the work moving to another execution; a client's fact (a cancel) leaves
// it, since the step is still in flight.
func TestALeaseMarksAStepInFlight(t *testing.T) {
	facts := history(KindAccepted, KindStarted)
	facts[1].Lease = &Lease{Run: "r1", Execution: "op_1", Until: t0.Add(time.Minute)}
	op, err := Fold("op_1", facts)
	if err != nil {
		t.Fatal(err)
	}
	if l := op.InFlight(t0.Add(30 * time.Second)); l == nil || l.Run != "r1" || !op.Leased {
		t.Fatalf("in flight: %+v", l)
	}
	if op.InFlight(t0.Add(time.Minute)) != nil {
		t.Fatal("a lease that ran out still holds")
	}
	cancel, _ := op.Apply(Fact{Version: 3, Kind: KindCancelRequested, At: t0, Source: SourceClient})
	if cancel.InFlight(t0) == nil {
		t.Fatal("a cancel released the step in flight")
	}
	released, _ := op.Apply(Fact{Version: 3, Kind: KindProgress, At: t0, Source: SourceExecutor})
	if released.InFlight(t0) != nil || !released.Leased {
		t.Fatal("an executor fact without a lease did not release it")
	}
	handed, _ := op.Apply(Fact{Version: 3, Kind: KindProgress, At: t0, Source: SourceExecutor, Lease: op.Lease,
		Execution: "arn:aws:states:us-east-1:123456789012:execution:longrun-w:op_1-1"})
	if handed.InFlight(t0) != nil {
		t.Fatal("a lease of an execution the work left still holds")
	}
}

// A wait costs nothing while it lasts: the operation is not due for a look before it ends,
// however long, and a cancel during it is due at once (nothing is in flight to wait for).
func TestAWaitIsNotLookedAtUntilItEnds(t *testing.T) {
	l := DefaultLeases()
	until := t0.Add(6 * time.Hour)
	facts := history(KindAccepted, KindStarted, KindProgress)
	facts[2].Source, facts[2].WaitingUntil = SourceExecutor, &until
	op, err := Fold("op_1", facts)
	if err != nil {
		t.Fatal(err)
	}
	if due, ok := op.DueAt(l); !ok || !due.Equal(until.Add(l.Check)) || !op.Waiting(t0) {
		t.Fatalf("due %v %v; want the wait's end and a check lease", due, ok)
	}
	cancel, _ := op.Apply(Fact{Version: 4, Kind: KindCancelRequested, At: t0.Add(time.Hour), Source: SourceClient})
	if due, ok := cancel.DueAt(l); !ok || !due.Equal(t0.Add(time.Hour)) {
		t.Fatalf("a cancel during the wait is due %v, want at once", due)
	}
	resumed, _ := op.Apply(Fact{Version: 4, Kind: KindProgress, At: until, Source: SourceExecutor,
		Lease: &Lease{Run: "r2", Execution: "op_1", Until: until.Add(time.Minute)}})
	if due, _ := resumed.DueAt(l); !due.Equal(until.Add(l.Check)) || resumed.Waiting(until) {
		t.Fatalf("after the wait: due %v, waiting %v", due, resumed.Waiting(until))
	}
}

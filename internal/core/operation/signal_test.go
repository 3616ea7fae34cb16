package operation

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// signaled is a signaled fact of signal name, sent by actor through source.
func signaled(v int, at time.Time, name string, source Source, actor string) Fact {
	return Fact{Version: v, Kind: KindSignaled, At: at, Source: source, Actor: actor,
		Signal: &Signal{Name: name, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, v)), Key: fmt.Sprintf("k%d", v), Fingerprint: "fp-" + name}}
}

// running is an operation whose first step is in flight: accepted, then started with a
// lease and the delivery of the signals it is given (none yet).
func running(t *testing.T) Operation {
	t.Helper()
	op, err := Fold("op_1", []Fact{
		{Version: 1, Kind: KindAccepted, At: t0, Source: SourceAdmission, Admission: &Admission{Type: "t.sig", Tenant: "acme", Principal: "alice", Deadline: t0.Add(24 * time.Hour)}},
		{Version: 2, Kind: KindStarted, At: t0.Add(time.Second), Source: SourceExecutor,
			Lease: &Lease{Run: "r1", Execution: "op_1", Until: t0.Add(time.Minute)}, Delivery: &Delivery{Step: 1, From: 0, Through: 0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// apply applies each fact in turn, numbering them after op's version.
func apply(t *testing.T, op Operation, facts ...Fact) Operation {
	t.Helper()
	for _, f := range facts {
		f.Version = op.Version + 1
		var err error
		if op, err = op.Apply(f); err != nil {
			t.Fatalf("%s after v%d (%s): %v", f.Kind, op.Version, op.State, err)
		}
	}
	return op
}

// awaitingFact is the recorder's fact for a step that asked to wait for signal until until:
// it releases the lease and keeps the state for the step after it.
func awaitingFact(at time.Time, step int, signal string, until time.Time) Fact {
	return Fact{Kind: KindProgress, At: at, Source: SourceExecutor, Progress: &Progress{CompletedSteps: step},
		Awaiting: &Awaiting{Signal: signal, Since: at, Until: until, Step: step, State: json.RawMessage(`{"secret-state":1}`)}}
}

// Signals fold in the order their facts come, each with its fact's version, time, source
// and actor, whatever the state it came in; a signal changes neither the state nor what
// the executor last said. A fold that sorted, deduplicated by name, dropped the source or
// took the actor from the admission would break here.
func TestSignalsFoldInOrder(t *testing.T) {
	admitted := Fact{Version: 1, Kind: KindAccepted, At: t0, Source: SourceAdmission, Admission: &Admission{Type: "t.sig", Tenant: "acme", Principal: "alice"}}
	facts := []Fact{
		admitted,
		signaled(2, t0.Add(1*time.Second), "approval", SourceClient, "alice"),
		{Version: 3, Kind: KindDispatched, At: t0.Add(2 * time.Second), Source: SourceDispatcher, Execution: "arn:x:op_1"},
		signaled(4, t0.Add(3*time.Second), "contract-signed", SourceCallback, ""),
		{Version: 5, Kind: KindStarted, At: t0.Add(4 * time.Second), Source: SourceExecutor},
		signaled(6, t0.Add(5*time.Second), "approval", SourceOperator, "ops/bob"),
	}
	op, err := Fold("op_1", facts)
	if err != nil {
		t.Fatal(err)
	}
	if op.State != Running || op.Version != 6 || !op.UpdatedAt.Equal(t0.Add(5*time.Second)) || !op.ObservedAt.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("state %s v%d updated %v observed %v", op.State, op.Version, op.UpdatedAt, op.ObservedAt)
	}
	want := []Received{
		{Signal: *facts[1].Signal, Version: 2, At: t0.Add(1 * time.Second), Source: SourceClient, Actor: "alice"},
		{Signal: *facts[3].Signal, Version: 4, At: t0.Add(3 * time.Second), Source: SourceCallback, Actor: ""},
		{Signal: *facts[5].Signal, Version: 6, At: t0.Add(5 * time.Second), Source: SourceOperator, Actor: "ops/bob"},
	}
	if !reflect.DeepEqual(op.Signals, want) {
		t.Fatalf("signals\n%+v\nwant\n%+v", op.Signals, want)
	}
	if got, ok := op.SignalKeyed("k4"); !ok || got.Version != 4 {
		t.Fatalf("SignalKeyed(k4) = %+v, %v", got, ok)
	}
	if _, ok := op.SignalKeyed("k9"); ok {
		t.Fatal("SignalKeyed found a key never sent")
	}
	// A signal before any step stays an accepted operation's: it waits for the first step.
	early, err := Fold("op_1", facts[:2])
	if err != nil || early.State != Accepted || len(early.Signals) != 1 || early.ObservedAt != (time.Time{}) {
		t.Fatalf("signal before dispatch: %s %d signals observed %v, %v", early.State, len(early.Signals), early.ObservedAt, err)
	}
}

// Apply never changes the operation it was called on, so two facts applied to one read
// each see only their own signal. An append into the shared array (no clip) would let the
// second overwrite the first's.
func TestApplyingASignalDoesNotAliasTheReceiver(t *testing.T) {
	op := apply(t, running(t), signaled(0, t0, "approval", SourceClient, "alice"), signaled(0, t0, "note", SourceClient, "alice"))
	op.Signals = op.Signals[:1:2] // room after the first: an unclipped append writes into it
	a, err := op.Apply(signaled(op.Version+1, t0, "left", SourceClient, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := op.Apply(signaled(op.Version+1, t0, "right", SourceClient, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if len(op.Signals) != 1 || a.Signals[1].Name != "left" || b.Signals[1].Name != "right" {
		t.Fatalf("receiver %d signals; a %s, b %s", len(op.Signals), a.Signals[1].Name, b.Signals[1].Name)
	}
}

// A signal is heard while the work may still use it: accepted (kept for the first step),
// dispatched and running. Once a cancel was asked, the outcome is unknown, or the work
// ended, a signaled fact is refused: a store that appended one would record a signal no
// step will ever be given.
func TestSignaledFollowsOnlyStatesThatHearIt(t *testing.T) {
	for _, c := range []struct {
		kinds []Kind
		legal bool
	}{
		{[]Kind{KindAccepted}, true},
		{[]Kind{KindAccepted, KindDispatched}, true},
		{[]Kind{KindAccepted, KindDispatched, KindStarted}, true},
		{[]Kind{KindAccepted, KindDispatched, KindStarted, KindProgress}, true},
		{[]Kind{KindAccepted, KindDispatched, KindStarted, KindCancelRequested}, false},
		{[]Kind{KindAccepted, KindDispatched, KindStarted, KindOutcomeUnknown}, false},
		{[]Kind{KindAccepted, KindDispatched, KindStarted, KindSucceeded}, false},
		{[]Kind{KindAccepted, KindDispatched, KindStarted, KindFailed}, false},
		{[]Kind{KindAccepted, KindCancelRequested, KindCanceled}, false},
	} {
		op, err := Fold("op_1", history(c.kinds...))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(string(op.State), func(t *testing.T) {
			next, err := op.Apply(signaled(op.Version+1, t0.Add(time.Hour), "approval", SourceClient, "alice"))
			switch {
			case c.legal && err != nil:
				t.Fatalf("refused: %v", err)
			case c.legal && (next.State != op.State || len(next.Signals) != 1 || next.Version != op.Version+1):
				t.Fatalf("%s -> %s with %d signals at v%d", op.State, next.State, len(next.Signals), next.Version)
			case !c.legal && !errors.Is(err, ErrIllegalTransition):
				t.Fatalf("err = %v, want ErrIllegalTransition", err)
			case !c.legal && (len(next.Signals) != 0 || next.Version != op.Version):
				t.Fatalf("a refused signal changed the operation: %d signals v%d", len(next.Signals), next.Version)
			}
		})
	}
	if _, err := Fold("op_1", []Fact{signaled(1, t0, "approval", SourceClient, "alice")}); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("a signal with no history: %v", err)
	}
}

// A signaled fact must carry its signal: one without is a broken history, not a signal of
// no name. A fold that skipped it would deliver a phantom, or panic later.
func TestASignaledFactWithoutASignalIsMalformed(t *testing.T) {
	f := signaled(3, t0, "approval", SourceClient, "alice")
	f.Signal = nil
	_, err := Fold("op_1", append(history(KindAccepted, KindDispatched), f))
	if !errors.Is(err, ErrMalformedHistory) {
		t.Fatalf("err = %v, want ErrMalformedHistory", err)
	}
}

// A wait for a signal is set by the executor's fact that asks for it and lasts until the
// next executor fact, whatever comes between: the awaited signal itself, another signal, a
// cancel or a reconciler's end do not clear it (the recorder reads it to give the next
// step its awaited and state). Awaits holds only while the work could still go on. A fold
// that cleared it on any fact, or never, would break here.
func TestAwaitingLastsUntilTheNextExecutorFact(t *testing.T) {
	until := t0.Add(48 * time.Hour)
	waiting := apply(t, running(t), awaitingFact(t0.Add(time.Minute), 1, "approval", until))
	if !waiting.Awaits() || waiting.Awaiting.Signal != "approval" || waiting.Awaiting.Step != 1 || waiting.Lease != nil {
		t.Fatalf("awaiting %+v awaits %v lease %+v", waiting.Awaiting, waiting.Awaits(), waiting.Lease)
	}
	for _, c := range []struct {
		name   string
		facts  []Fact
		kept   bool // op.Awaiting still set
		awaits bool
	}{
		{"the awaited signal", []Fact{signaled(0, t0.Add(2*time.Minute), "approval", SourceClient, "alice")}, true, true},
		{"a signal through a callback", []Fact{signaled(0, t0.Add(2*time.Minute), "approval", SourceCallback, "")}, true, true},
		{"an operator's signal", []Fact{signaled(0, t0.Add(2*time.Minute), "approval", SourceOperator, "ops/bob")}, true, true},
		{"another signal", []Fact{signaled(0, t0.Add(2*time.Minute), "note", SourceClient, "alice")}, true, true},
		{"a cancel", []Fact{{Kind: KindCancelRequested, At: t0.Add(2 * time.Minute), Source: SourceClient, Actor: "alice"}}, true, false},
		{"the reconciler's deadline", []Fact{{Kind: KindFailed, At: until, Source: SourceReconciler, Problem: NewProblem("deadline_exceeded", "Deadline", "d")}}, true, false},
		{"the next step's lease", []Fact{signaled(0, t0.Add(2*time.Minute), "approval", SourceClient, "alice"),
			{Kind: KindProgress, At: t0.Add(3 * time.Minute), Source: SourceExecutor, Lease: &Lease{Run: "r2", Execution: "op_1-1", Until: t0.Add(4 * time.Minute)},
				Delivery: &Delivery{Step: 2, From: 0, Through: 1, Awaited: "approval"}}}, false, false},
		{"the executor's end", []Fact{{Kind: KindSucceeded, At: t0.Add(3 * time.Minute), Source: SourceExecutor, Result: json.RawMessage(`{}`)}}, false, false},
		{"a cancel, then the executor's stop", []Fact{{Kind: KindCancelRequested, At: t0.Add(2 * time.Minute), Source: SourceClient, Actor: "alice"},
			{Kind: KindCanceled, At: t0.Add(3 * time.Minute), Source: SourceExecutor}}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := apply(t, waiting, c.facts...)
			if (op.Awaiting != nil) != c.kept || op.Awaits() != c.awaits {
				t.Fatalf("awaiting %+v awaits %v; want kept %v awaits %v", op.Awaiting, op.Awaits(), c.kept, c.awaits)
			}
			if c.kept && !reflect.DeepEqual(op.Awaiting, waiting.Awaiting) {
				t.Fatalf("awaiting changed: %+v", op.Awaiting)
			}
			if got := op.Represent("/x").Awaiting; (got != nil) != c.awaits {
				t.Fatalf("representation's awaiting %+v; want shown %v", got, c.awaits)
			}
		})
	}
}

// Awaits is the state's and the wait's together: a wait is only one while the work is
// dispatched or running. One that said so in any state would have a cancel end cancelling
// work at once, or a reconciler wake terminal work.
func TestAwaitsOnlyWhileTheWorkCanGoOn(t *testing.T) {
	for _, s := range States() {
		op := Operation{State: s, Awaiting: &Awaiting{Signal: "approval", Until: t0.Add(time.Hour), Step: 1}}
		want := s == Dispatched || s == Running
		if op.Awaits() != want {
			t.Errorf("%s awaits %v, want %v", s, op.Awaits(), want)
		}
		op.Awaiting = nil
		if op.Awaits() {
			t.Errorf("%s without a wait awaits", s)
		}
	}
}

// A delivery says which signals the latest step was given; it stays until an executor fact
// brings another, so a fact that brings none (the step's end, a signal, a cancel) must not
// forget what was given.
func TestDeliveryIsKeptUntilReplaced(t *testing.T) {
	op := running(t)
	first := *op.Delivery
	op = apply(t, op,
		signaled(0, t0.Add(2*time.Second), "approval", SourceClient, "alice"),
		Fact{Kind: KindProgress, At: t0.Add(3 * time.Second), Source: SourceExecutor, Progress: &Progress{CompletedSteps: 1}})
	if op.Delivery == nil || *op.Delivery != first {
		t.Fatalf("delivery %+v, want %+v kept", op.Delivery, first)
	}
	second := Delivery{Step: 2, From: 0, Through: 1}
	op = apply(t, op, Fact{Kind: KindProgress, At: t0.Add(4 * time.Second), Source: SourceExecutor,
		Lease: &Lease{Run: "r1", Execution: "op_1", Until: t0.Add(time.Minute)}, Delivery: &second})
	if op.Delivery == nil || *op.Delivery != second {
		t.Fatalf("delivery %+v, want %+v", op.Delivery, second)
	}
	op = apply(t, op, Fact{Kind: KindCancelRequested, At: t0.Add(5 * time.Second), Source: SourceClient, Actor: "alice"})
	if op.Delivery == nil || *op.Delivery != second {
		t.Fatalf("a cancel changed the delivery: %+v", op.Delivery)
	}
}

// Which signals a step is given: those since the previous step's, the same again for a
// step run again, and a wait is answered only by a signal of its name that no step was
// given yet. Off by one here, a step misses a signal or is given one twice, or a wait
// never ends or ends on a signal already spent.
func TestWhichSignalsAStepIsGiven(t *testing.T) {
	received := func(names ...string) []Received {
		var out []Received
		for i, n := range names {
			out = append(out, Received{Signal: Signal{Name: n}, Version: i + 3})
		}
		return out
	}
	for _, c := range []struct {
		name        string
		signals     []Received
		delivery    *Delivery
		step        int // the step asked about
		undelivered int
		arrived     map[string]bool
	}{
		{"no delivery yet: everything", received("approval"), nil, 1, 0, map[string]bool{"approval": true, "note": false}},
		{"no delivery and no signal", nil, nil, 1, 0, map[string]bool{"approval": false}},
		{"the step run again starts where it did", received("approval", "note", "approval"), &Delivery{Step: 2, From: 1, Through: 2}, 2, 1,
			map[string]bool{"approval": true, "note": true}},
		{"the step run again, only its own signals", received("approval", "note"), &Delivery{Step: 2, From: 1, Through: 2}, 2, 1,
			map[string]bool{"approval": false, "note": true}},
		{"the next step starts after the last one's", received("approval", "note", "approval"), &Delivery{Step: 2, From: 1, Through: 2}, 3, 2,
			map[string]bool{"approval": true, "note": false}},
		{"the next step, nothing new", received("approval", "note"), &Delivery{Step: 2, From: 1, Through: 2}, 3, 2,
			map[string]bool{"approval": false, "note": false}},
		{"an earlier step is a step run again", received("approval", "note"), &Delivery{Step: 2, From: 1, Through: 2}, 1, 1,
			map[string]bool{"approval": false, "note": true}},
		{"a delivery beyond the signals held", received("approval"), &Delivery{Step: 2, From: 3, Through: 5}, 2, 1,
			map[string]bool{"approval": false}},
		{"a delivery beyond the signals held, next step", received("approval"), &Delivery{Step: 2, From: 3, Through: 5}, 3, 1,
			map[string]bool{"approval": false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := Operation{State: Running, Signals: c.signals, Delivery: c.delivery}
			if got := op.Undelivered(c.step); got != c.undelivered {
				t.Fatalf("Undelivered(%d) = %d, want %d", c.step, got, c.undelivered)
			}
			for name, want := range c.arrived {
				if got := op.Arrived(name, c.step); got != want {
					t.Errorf("Arrived(%s, %d) = %v, want %v", name, c.step, got, want)
				}
			}
		})
	}
}

// A wait is answered by a signal of its name that the step after the wait has not been
// given before: one given to the step that asked, or one of another name, does not answer
// it; one that came while that step ran (before anyone waited) does. And only while it
// waits: a cancelled or ended operation's old wait is answered by nothing.
func TestAwaitAnswered(t *testing.T) {
	asked := Delivery{Step: 1, From: 0, Through: 1} // step 1 was given signal 0
	for _, c := range []struct {
		name    string
		state   State
		signals []string
		want    bool
	}{
		{"no signal", Running, nil, false},
		{"the one the asking step was given", Running, []string{"approval"}, false},
		{"another name", Running, []string{"approval", "note"}, false},
		{"the awaited signal after the ask", Running, []string{"approval", "note", "approval"}, true},
		{"the awaited signal, dispatched", Dispatched, []string{"approval", "approval"}, true},
		{"cancelling", Cancelling, []string{"approval", "approval"}, false},
		{"ended", Failed, []string{"approval", "approval"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := Operation{State: c.state, Delivery: &asked, Awaiting: &Awaiting{Signal: "approval", Until: t0.Add(time.Hour), Step: 1}}
			for i, n := range c.signals {
				op.Signals = append(op.Signals, Received{Signal: Signal{Name: n}, Version: i + 3})
			}
			if got := op.AwaitAnswered(); got != c.want {
				t.Fatalf("AwaitAnswered = %v, want %v", got, c.want)
			}
		})
	}
}

// The representation shows the wait while the work waits, in the contract's time format
// (UTC, milliseconds), and nothing of what only the recorder needs (the waiting step, its
// state) nor any signal's data. Showing a wait after a cancel or the end would tell a
// client to send a signal nobody will hear.
func TestRepresentShowsTheWait(t *testing.T) {
	zone := time.FixedZone("UTC+2", 2*3600)
	since := time.Date(2026, 11, 30, 12, 1, 2, 345678901, zone)
	until := since.Add(72 * time.Hour)
	op := apply(t, running(t), signaled(0, t0.Add(2*time.Second), "note", SourceClient, "alice"),
		awaitingFact(since, 1, "approval", until))
	r := op.Represent("/v1/operations/op_1")
	want := AwaitingView{Signal: "approval", Since: "2026-11-30T10:01:02.345Z", Until: "2026-12-03T10:01:02.345Z"}
	if r.Awaiting == nil || *r.Awaiting != want {
		t.Fatalf("awaiting %+v, want %+v", r.Awaiting, want)
	}
	body, _ := json.Marshal(r)
	if !strings.Contains(string(body), `"awaiting":{"signal":"approval","since":"2026-11-30T10:01:02.345Z","until":"2026-12-03T10:01:02.345Z"}`) {
		t.Fatalf("awaiting in JSON: %s", body)
	}
	for _, secret := range []string{"secret-state", `"step"`, `"n":`, "signals"} {
		if strings.Contains(string(body), secret) {
			t.Fatalf("representation leaks %s: %s", secret, body)
		}
	}
	for name, later := range map[string]Operation{
		"cancelling": apply(t, op, Fact{Kind: KindCancelRequested, At: until, Source: SourceClient, Actor: "alice"}),
		"failed":     apply(t, op, Fact{Kind: KindFailed, At: until, Source: SourceReconciler, Problem: NewProblem("deadline_exceeded", "D", "d")}),
		"resumed":    apply(t, op, Fact{Kind: KindProgress, At: until, Source: SourceExecutor, Lease: &Lease{Run: "r2", Execution: "op_1", Until: until.Add(time.Minute)}}),
	} {
		body, _ := json.Marshal(later.Represent("/v1/operations/op_1"))
		if strings.Contains(string(body), "awaiting") {
			t.Errorf("%s shows a wait: %s", name, body)
		}
	}
	body, _ = json.Marshal(running(t).Represent("/x"))
	if strings.Contains(string(body), "awaiting") {
		t.Fatalf("running work that waits for nothing shows a wait: %s", body)
	}
}

// A wait is looked at when it times out, however long that is, and at once (a dispatch
// lease after the signal) once the awaited signal came, so that the work goes on if the
// dispatcher's wake is lost. A signal of another name changes nothing; a cancel ends the
// wait's schedule. A DueAt that kept the check lease would wake waits every two minutes;
// one that ignored the signal would leave answered work until its timeout.
func TestDueAtWhileAwaiting(t *testing.T) {
	l := DefaultLeases()
	until := t0.Add(14 * 24 * time.Hour)
	asked := t0.Add(time.Minute)
	waiting := apply(t, running(t), awaitingFact(asked, 1, "approval", until))
	for _, c := range []struct {
		name  string
		facts []Fact
		due   time.Time
	}{
		{"waiting", nil, until},
		{"another signal", []Fact{signaled(0, t0.Add(time.Hour), "note", SourceClient, "alice")}, until},
		{"the awaited signal", []Fact{signaled(0, t0.Add(time.Hour), "approval", SourceClient, "alice")}, t0.Add(time.Hour).Add(l.Dispatch)},
		{"the awaited signal through a callback, then another", []Fact{
			signaled(0, t0.Add(time.Hour), "approval", SourceCallback, ""),
			signaled(0, t0.Add(2*time.Hour), "note", SourceClient, "alice")}, t0.Add(2 * time.Hour).Add(l.Dispatch)},
		{"a cancel", []Fact{{Kind: KindCancelRequested, At: t0.Add(time.Hour), Source: SourceClient, Actor: "alice"}}, t0.Add(time.Hour).Add(l.Cancel)},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := apply(t, waiting, c.facts...)
			if due, ok := op.DueAt(l); !ok || !due.Equal(c.due) {
				t.Fatalf("due %v %v, want %v", due, ok, c.due)
			}
		})
	}
	// A signal that came while the asking step ran, before the wait was recorded, answers it
	// at once: the wait is due a dispatch lease after it was recorded.
	early := apply(t, running(t), signaled(0, t0.Add(10*time.Second), "approval", SourceClient, "alice"),
		awaitingFact(asked, 1, "approval", until))
	if !early.AwaitAnswered() {
		t.Fatal("a signal before the wait does not answer it")
	}
	if due, ok := early.DueAt(l); !ok || !due.Equal(asked.Add(l.Dispatch)) {
		t.Fatalf("due %v %v, want %v", due, ok, asked.Add(l.Dispatch))
	}
}

// Stores keep facts as JSON: a signal, a wait and a delivery come back from it whole, and
// fold as they did. A missing or misspelled tag would lose them across a store.
func TestSignalFactsSurviveJSON(t *testing.T) {
	facts := []Fact{
		{Version: 1, Kind: KindAccepted, At: t0, Source: SourceAdmission, Admission: &Admission{Type: "t.sig", Tenant: "acme", Principal: "alice"}},
		{Version: 2, Kind: KindStarted, At: t0, Source: SourceExecutor, Lease: &Lease{Run: "r1", Execution: "op_1", Until: t0.Add(time.Minute)},
			Delivery: &Delivery{Step: 1, From: 0, Through: 0}},
		signaled(3, t0.Add(time.Second), "approval", SourceOperator, "ops/bob"),
		awaitingFact(t0.Add(2*time.Second), 1, "approval", t0.Add(time.Hour)),
		{Version: 5, Kind: KindProgress, At: t0.Add(3 * time.Second), Source: SourceExecutor, Lease: &Lease{Run: "r2", Execution: "op_1", Until: t0.Add(time.Minute)},
			Delivery: &Delivery{Step: 2, From: 0, Through: 1, Awaited: "approval", TimedOut: true}},
	}
	facts[3].Version = 4
	raw, err := json.Marshal(facts)
	if err != nil {
		t.Fatal(err)
	}
	var back []Fact
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{4, 5} {
		want, err := Fold("op_1", facts[:n])
		if err != nil {
			t.Fatal(err)
		}
		got, err := Fold("op_1", back[:n])
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Signals, want.Signals) || !reflect.DeepEqual(got.Delivery, want.Delivery) ||
			(got.Awaiting == nil) != (want.Awaiting == nil) || got.Awaiting != nil && (got.Awaiting.Signal != want.Awaiting.Signal ||
			!got.Awaiting.Until.Equal(want.Awaiting.Until) || got.Awaiting.Step != want.Awaiting.Step || string(got.Awaiting.State) != string(want.Awaiting.State)) {
			t.Fatalf("after %d facts through JSON:\n%+v %+v %+v\nwant\n%+v %+v %+v", n, got.Signals, got.Delivery, got.Awaiting, want.Signals, want.Delivery, want.Awaiting)
		}
	}
}

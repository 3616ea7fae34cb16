package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/callback"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/core/step"
	"github.com/longrun-dev/longrun/internal/testkit/memstore"
)

// The gate before every step, without a store: a cancel, a passed deadline, a type no
// longer defined and a worker asking for more than maxSteps each stop the work with one
// fact; otherwise the next step's request goes out, now or after the wait asked for.
func TestDecidesTheGate(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	r := &Recorder{Registry: optype.Builtin(), Leases: operation.DefaultLeases()}
	running := func(change func(*operation.Operation)) operation.Operation {
		op := operation.Operation{ID: "op_1", State: operation.Running, CreatedAt: t0, Version: 3, Started: true}
		op.Type, op.Deadline, op.Input = "demo.task", t0.Add(time.Hour), json.RawMessage(`{"target":"a"}`)
		if change != nil {
			change(&op)
		}
		return op
	}
	cancel := func(op *operation.Operation) { op.CancelRequested, op.State = true, operation.Cancelling }
	delay := func(s int) *step.Report { return &step.Report{Status: step.Continue, DelaySeconds: &s} }
	for _, c := range []struct {
		name   string
		op     operation.Operation
		done   int          // steps completed
		rep    *step.Report // the report of the step that asked to continue
		now    time.Time
		stop   operation.Kind // the fact that stops the work ("" none)
		code   string         // its problem
		next   string
		waitS  int
		stepNo int
	}{
		{"the first step", running(nil), 0, nil, t0, "", "", NextWork, 0, 1},
		{"the step after one that went on", running(nil), 4, &step.Report{Status: step.Continue}, t0, "", "", NextWork, 0, 5},
		{"a cancel stops before the next step", running(cancel), 2, nil, t0, operation.KindCanceled, "", NextDone, 0, 0},
		{"a cancel comes before a passed deadline", running(cancel), 2, nil, t0.Add(2 * time.Hour), operation.KindCanceled, "", NextDone, 0, 0},
		{"the deadline passed", running(nil), 2, nil, t0.Add(time.Hour), operation.KindFailed, "deadline_exceeded", NextDone, 0, 0},
		{"maxSteps done and the worker asks for more", running(nil), 21, &step.Report{Status: step.Continue}, t0, operation.KindFailed, "max_steps_exceeded", NextDone, 0, 0},
		{"a wait asked for", running(nil), 1, delay(30), t0, "", "", NextWait, 30, 2},
		{"a long wait is taken in pauses", running(nil), 1, delay(1800), t0, "", "", NextWait, int(step.MaxPause / time.Second), 2},
		{"a wait past the deadline fails now", running(nil), 1, delay(7200), t0, operation.KindFailed, "deadline_exceeded", NextDone, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, d := r.gate(c.op, step.Request{OperationID: "op_1", Step: c.done}, c.rep, time.Time{}, c.now, false)
			switch {
			case c.stop == "" && f != nil:
				t.Fatalf("stopped with %s (%+v); want step %d", f.Kind, f.Problem, c.stepNo)
			case c.stop != "" && (f == nil || f.Kind != c.stop):
				t.Fatalf("fact %+v; want %s", f, c.stop)
			case c.code != "" && (f.Problem == nil || f.Problem.Code != c.code):
				t.Fatalf("problem %+v; want %s", f.Problem, c.code)
			case d.Next != c.next || d.WaitSeconds != c.waitS:
				t.Fatalf("decision %s wait %ds; want %s wait %ds", d.Next, d.WaitSeconds, c.next, c.waitS)
			}
			if c.stepNo > 0 && (d.Request == nil || d.Request.Step != c.stepNo || d.Request.MaxSteps != 21 || d.StepTimeoutSeconds != 60) {
				t.Fatalf("request %+v; want step %d of at most 21, 60 s each", d.Request, c.stepNo)
			}
		})
	}
}

// A wait for a signal, decided without a store: the work waits until the timeout, cut to the
// deadline, unless the signal already came and was given to no step; the step after the
// wait is given the signals since the step before, and hears whether the wait timed out; a
// step run again is given the same signals.
func TestDecidesAWaitForASignal(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	key, err := seal.New([]byte(strings.Repeat("decide-key/", 3)))
	if err != nil {
		t.Fatal(err)
	}
	r := &Recorder{Registry: optype.Builtin(), Leases: operation.DefaultLeases(), Seals: key, CallbackBase: "https://api.example/prod/"}
	approval := func(v int, by string) operation.Received {
		return operation.Received{Signal: operation.Signal{Name: "approval", Data: json.RawMessage(`{"approved":true,"by":"` + by + `"}`)},
			Version: v, At: t0, Source: operation.SourceClient, Actor: by}
	}
	op := func(change func(*operation.Operation)) operation.Operation {
		o := operation.Operation{ID: "op_1", State: operation.Running, CreatedAt: t0, Version: 5, Started: true}
		o.Type, o.Deadline, o.Input = "demo.task", t0.Add(time.Hour), json.RawMessage(`{"target":"a"}`)
		if change != nil {
			change(&o)
		}
		return o
	}
	await := func(secs int) *step.Report {
		return &step.Report{Status: step.Continue, Await: &step.Await{Signal: "approval", TimeoutSeconds: secs}}
	}
	awaiting := func(o *operation.Operation) {
		o.Awaiting = &operation.Awaiting{Signal: "approval", Since: t0, Until: t0.Add(time.Minute), Step: 1}
	}
	// A wait for a signal the type does not declare could never end but by its timeout.
	undeclared := &step.Report{Status: step.Continue, Await: &step.Await{Signal: "launch", TimeoutSeconds: 60}}
	if f, d := r.gate(op(nil), step.Request{OperationID: "op_1", Step: 1}, undeclared, time.Time{}, t0, false); f == nil ||
		f.Kind != operation.KindFailed || f.Problem.Code != "undeclared_signal" || d.Next != NextDone {
		t.Fatalf("a wait for an undeclared signal: %+v %+v", f, d)
	}
	for _, c := range []struct {
		name     string
		op       operation.Operation
		rep      *step.Report
		next     string
		resumeAt time.Time
		signals  []string // the senders of the signals the request carries
		awaited  *step.Awaited
	}{
		{"nothing came: wait until the timeout", op(nil), await(60), NextAwait, t0.Add(time.Minute), nil, nil},
		{"a timeout past the deadline waits until the deadline", op(nil), await(7200), NextAwait, t0.Add(time.Hour), nil, nil},
		{"it came before the wait: no wait", op(func(o *operation.Operation) { o.Signals = []operation.Received{approval(4, "alice")} }),
			await(60), NextWork, time.Time{}, []string{"alice"}, nil},
		{"one given to the step that asked does not end the wait", op(func(o *operation.Operation) {
			o.Signals = []operation.Received{approval(4, "alice")}
			o.Delivery = &operation.Delivery{Step: 1, From: 0, Through: 1}
		}), await(60), NextAwait, t0.Add(time.Minute), nil, nil},
		{"woken after the timeout", op(awaiting), nil, NextWork, time.Time{}, nil, &step.Awaited{Signal: "approval", TimedOut: true}},
		{"woken by the signal", op(func(o *operation.Operation) {
			awaiting(o)
			o.Signals = []operation.Received{approval(6, "ops")}
		}), nil, NextWork, time.Time{}, []string{"ops"}, &step.Awaited{Signal: "approval"}},
		{"the step run again is given the same", op(func(o *operation.Operation) {
			o.Signals = []operation.Received{approval(4, "a"), approval(6, "b"), approval(8, "c")}
			o.Delivery = &operation.Delivery{Step: 2, From: 1, Through: 2, Awaited: "approval"}
		}), nil, NextWork, time.Time{}, []string{"b", "c"}, &step.Awaited{Signal: "approval"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, d := r.gate(c.op, step.Request{OperationID: "op_1", Step: 1}, c.rep, time.Time{}, t0, false)
			if f != nil {
				t.Fatalf("stopped with %+v", f)
			}
			if d.Next != c.next {
				t.Fatalf("decision %s; want %s", d.Next, c.next)
			}
			if c.next == NextAwait {
				if d.ResumeAt != operation.FormatTime(c.resumeAt) {
					t.Fatalf("waits until %s; want %s", d.ResumeAt, operation.FormatTime(c.resumeAt))
				}
				return
			}
			var senders []string
			for _, s := range d.Request.Signals {
				senders = append(senders, s.Sender)
			}
			if fmt.Sprint(senders) != fmt.Sprint(c.signals) {
				t.Fatalf("signals from %v; want %v", senders, c.signals)
			}
			if (d.Request.Awaited == nil) != (c.awaited == nil) || c.awaited != nil && *d.Request.Awaited != *c.awaited {
				t.Fatalf("awaited %+v; want %+v", d.Request.Awaited, c.awaited)
			}
			// demo.task's approval is callable: every step is handed its URL, whose token
			// names this operation and that signal.
			url := d.Request.Callbacks["approval"]
			token, ok := strings.CutPrefix(url, "https://api.example/prod/v1/callbacks/")
			if id, name, err := callback.Parse(key, token); !ok || err != nil || id != "op_1" || name != "approval" || len(d.Request.Callbacks) != 1 {
				t.Fatalf("callbacks %v: %q %q %v", d.Request.Callbacks, id, name, err)
			}
			if slim := d.slim(); slim.Request.Signals != nil || slim.Request.Awaited != nil || slim.Request.Callbacks != nil {
				t.Fatalf("the decision handed to Step Functions keeps the signals or callbacks: %+v", slim.Request)
			}
		})
	}
}

// How a step ended, read from the workflow's state without a store: what the worker
// reported, or, when its answer is lost or unreadable, an unknown outcome; a step Lambda
// refused to invoke never ran and is offered again.
func TestDecidesAStepsEnd(t *testing.T) {
	t.Parallel()
	req := &step.Request{OperationID: "op_1", Step: 3, StepTimeoutSeconds: 60}
	task := func(report string) Input { return Input{Task: &Task{Report: json.RawMessage(report)}} }
	caught := func(err, cause string) Input { return Input{Error: &TaskError{Error: err, Cause: cause}} }
	for _, c := range []struct {
		name    string
		in      Input
		kind    operation.Kind // "" none
		code    string
		goesOn  bool
		refused string
	}{
		{"succeeded", task(`{"status":"succeeded","result":{"rows":3}}`), operation.KindSucceeded, "", false, ""},
		{"failed, as the worker said", task(`{"status":"failed","problem":{"code":"bad_input","title":"Bad input"}}`), operation.KindFailed, "bad_input", false, ""},
		{"went on", task(`{"status":"continue","state":{"page":4}}`), "", "", true, ""},
		{"the worker lost its result", task(`{"status":"outcome_unknown"}`), operation.KindOutcomeUnknown, "result_lost", false, ""},
		{"an answer that is no report", task(`{"rows":3}`), operation.KindOutcomeUnknown, "invalid_report", false, ""},
		{"the function's error, as an emulator returns it", task(`{"errorType":"Runtime.ExitError","errorMessage":"exit 2"}`), operation.KindOutcomeUnknown, "worker_error", false, ""},
		{"the function's error, caught", caught("Runtime.ExitError", "exit 2"), operation.KindOutcomeUnknown, "worker_error", false, ""},
		{"past the step timeout", caught("States.Timeout", ""), operation.KindOutcomeUnknown, "step_timeout", false, ""},
		{"Lambda refused to invoke it", caught(step.ErrNotInvoked, "Rate exceeded"), "", "", false, "Rate exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := stepEnd(c.in, req)
			switch {
			case c.kind == "" && e.fact != nil:
				t.Fatalf("recorded %s; want none", e.fact.Kind)
			case c.kind != "" && (e.fact == nil || e.fact.Kind != c.kind):
				t.Fatalf("end %+v; want %s", e, c.kind)
			case c.code != "" && (e.fact.Problem == nil || e.fact.Problem.Code != c.code):
				t.Fatalf("problem %+v; want %s", e.fact.Problem, c.code)
			case (e.cont != nil) != c.goesOn || e.refused != c.refused:
				t.Fatalf("went on %v, refused %q; want %v, %q", e.cont != nil, e.refused, c.goesOn, c.refused)
			}
			if c.kind == operation.KindSucceeded {
				if p := e.fact.Progress; p == nil || p.CompletedSteps != 3 || string(e.fact.Result) != `{"rows":3}` {
					t.Fatalf("succeeded with progress %+v, result %s; want 3 steps completed and the result", p, e.fact.Result)
				}
			}
		})
	}
}

// A step's end that loses a race is decided again from the step's end as it came, not as
// the lost attempt left it: the attempt that lost added the progress of the steps before
// (nobody had recorded it), the winner recorded that progress with the worker's percent and
// message, and the end recorded after it must not overwrite them with a bare count.
func TestDecidesAStepsEndAgainAfterALostRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	s := memstore.New()
	id := s.Accept(t, "", t0)
	op, err := s.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = s.Append(ctx, op, operation.Fact{Kind: operation.KindDispatched, At: t0, Source: operation.SourceDispatcher, Execution: "arn:exec:" + id},
		operation.Fact{Kind: operation.KindStarted, At: t0, Source: operation.SourceExecutor}); err != nil {
		t.Fatal(err)
	}
	twoThirds := 66.0
	held := &operation.Progress{CompletedSteps: 2, TotalSteps: 3, Percent: &twoThirds, Message: "two of three"}
	s.BeforeNextAppend(func(op operation.Operation) {
		// A parked Run's goesOn releasing its lease with the progress it held back.
		if _, err := s.Append(ctx, op, operation.Fact{Kind: operation.KindProgress, At: t0, Source: operation.SourceExecutor, Progress: held}); err != nil {
			t.Errorf("the racing progress: %v", err)
		}
	})
	r := &Recorder{Store: s, Registry: optype.Builtin(), Leases: operation.DefaultLeases(), Now: func() time.Time { return t0.Add(time.Minute) },
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	in := Input{OperationID: id, Gate: &Gate{Decision: &Decision{Next: NextWork, Request: &step.Request{OperationID: id, Step: 3}}},
		Task: &Task{Report: json.RawMessage(`{"status":"failed","problem":{"code":"bad_row","title":"Bad row"}}`)}}
	d, err := r.Handle(ctx, in)
	if err != nil || d.Next != NextDone {
		t.Fatalf("decision %+v, %v; want done", d, err)
	}
	if s.Conflicts() != 1 {
		t.Fatalf("%d lost races; the test needs one", s.Conflicts())
	}
	got, err := s.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != operation.Failed || got.Progress == nil || got.Progress.Message != "two of three" || got.Progress.Percent == nil {
		t.Fatalf("ended %s with progress %+v; want failed, keeping the worker's progress %+v", got.State, got.Progress, *held)
	}
}

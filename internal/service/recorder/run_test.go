package recorder_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/step"
	"github.com/longrun-dev/longrun/internal/service/recorder"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// script is a worker for Run's tests: step n answers answers[n-1] (a report, or an error)
// after taking `takes` on the test's clock, and every request is kept.
type script struct {
	mu       sync.Mutex
	answers  []any // string report, or error
	takes    time.Duration
	clock    *clock
	requests []step.Request
	during   func(n int) // runs while step n is in flight
	function string
	timeouts []time.Duration
	slow     map[int]bool // steps that take a second whatever takes says
}

func (s *script) Invoke(_ context.Context, function string, payload []byte, timeout time.Duration) ([]byte, error) {
	var req step.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.function = function
	s.timeouts = append(s.timeouts, timeout)
	s.mu.Unlock()
	if s.during != nil {
		s.during(req.Step)
	}
	took := s.takes
	if s.slow[req.Step] {
		took = time.Second
	}
	s.clock.Add(took)
	if req.Step > len(s.answers) {
		return nil, fmt.Errorf("step %d was not scripted", req.Step)
	}
	switch a := s.answers[req.Step-1].(type) {
	case error:
		return nil, a
	default:
		return []byte(a.(string)), nil
	}
}

// executions is the recorder's Executions for Run's tests: it keeps every start.
type executions struct {
	mu      sync.Mutex
	started []started
	stopped map[string]bool // refs that are no longer running
	// onStart runs before each start (outside the lock); an error it returns is the
	// start's, as Step Functions refusing it.
	onStart func(name string) error
}

type started struct {
	workflow string
	resume   bool
	name     string
	input    recorder.Input
	raw      []byte
}

func (e *executions) Ref(next recorder.NextExecution) (string, error) {
	workflow, resume, name := next.Workflow, next.Resume, next.Name
	m := "longrun-" + workflow
	if resume {
		m += "-resume"
	}
	return "arn:aws:states:us-east-1:123456789012:execution:" + m + ":" + name, nil
}

func (e *executions) Start(_ context.Context, next recorder.NextExecution, input []byte) (string, error) {
	workflow, resume, name := next.Workflow, next.Resume, next.Name
	var in recorder.Input
	if err := json.Unmarshal(input, &in); err != nil {
		return "", err
	}
	if e.onStart != nil {
		if err := e.onStart(name); err != nil {
			return "", err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.started = append(e.started, started{workflow, resume, name, in, input})
	return e.Ref(next)
}

func (e *executions) Running(_ context.Context, ref string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.stopped[ref], nil
}

func (e *executions) last(t *testing.T) started {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.started) == 0 {
		t.Fatal("no execution started")
	}
	return e.started[len(e.started)-1]
}

func (f *fixture) run(s *script, state recorder.Input) recorder.Decision {
	f.t.Helper()
	s.clock = f.clock
	f.rec.Invoker = s
	if f.rec.Executions == nil {
		f.rec.Executions = &executions{}
	}
	d, err := f.rec.Run(context.Background(), recorder.Call{State: state, Worker: "arn:aws:lambda:us-east-1:123456789012:function:worker-test-poll"})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// One Run runs every step: the workflow is called once, whatever the steps, and the
// carried state goes from each step to the next in the recorder's hands.
func TestRunRunsTheStepsInOneInvocation(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		s := &script{answers: []any{
			`{"status":"continue","state":{"cursor":1},"progress":{"totalSteps":3}}`,
			`{"status":"continue","state":{"cursor":2}}`,
			`{"status":"succeeded","result":{"rows":3},"progress":{"totalSteps":3}}`,
		}}
		d := f.run(s, recorder.Input{OperationID: id})
		op := f.load(id)
		if d.Next != recorder.NextDone || op.State != operation.Succeeded || string(op.Result) != `{"rows":3}` {
			t.Fatalf("decision %+v, %s %s", d, op.State, op.Result)
		}
		if len(s.requests) != 3 || string(s.requests[1].State) != `{"cursor":1}` || string(s.requests[2].State) != `{"cursor":2}` ||
			s.requests[2].Step != 3 || s.function != "arn:aws:lambda:us-east-1:123456789012:function:worker-test-poll" {
			t.Fatalf("requests %+v to %s", s.requests, s.function)
		}
		if s.timeouts[0] != 30*time.Second {
			t.Fatalf("the worker is waited for its stepTimeout, not %v", s.timeouts[0])
		}
		// Fast steps write no progress of their own: accepted, started, succeeded.
		if op.Version != 3 || op.Progress == nil || op.Progress.CompletedSteps != 3 {
			t.Fatalf("facts %d, progress %+v; want 3 facts and 3 completed steps", op.Version, op.Progress)
		}
	})
}

// Steps slower than ProgressEvery record their progress as they complete.
func TestRunRecordsTheProgressOfSlowSteps(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		var seen []int
		s := &script{takes: 2 * recorder.ProgressEvery, answers: []any{
			`{"status":"continue","progress":{"totalSteps":3,"message":"one"}}`,
			`{"status":"continue","progress":{"totalSteps":3,"message":"two"}}`,
			`{"status":"succeeded"}`,
		}}
		s.during = func(n int) {
			if op := f.load(id); op.Progress != nil {
				seen = append(seen, op.Progress.CompletedSteps)
			} else {
				seen = append(seen, 0)
			}
		}
		if d := f.run(s, recorder.Input{OperationID: id}); d.Next != recorder.NextDone {
			t.Fatalf("decision %+v", d)
		}
		if fmt.Sprint(seen) != "[0 1 2]" || f.load(id).Version != 5 {
			t.Fatalf("progress seen during the steps %v, facts %d; want [0 1 2] and 5", seen, f.load(id).Version)
		}
	})
}

// Intent is checked before every step a Run runs: a cancel during step 2 stops the work
// before step 3, and a failing step records no more steps.
func TestRunGatesEveryStep(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		s := &script{answers: []any{`{"status":"continue"}`, `{"status":"continue"}`, `{"status":"succeeded"}`}}
		s.during = func(n int) {
			if n == 2 {
				dynamotest.Cancel(t, f.store, id)
			}
		}
		if d := f.run(s, recorder.Input{OperationID: id}); d.Next != recorder.NextDone {
			t.Fatalf("decision %+v", d)
		}
		if op := f.load(id); op.State != operation.Canceled || len(s.requests) != 2 || op.Progress == nil || op.Progress.CompletedSteps != 2 {
			t.Fatalf("%s after %d steps, progress %+v; want canceled after 2 with 2 completed", op.State, len(s.requests), op.Progress)
		}

		id2 := f.newOp()
		s2 := &script{answers: []any{`{"status":"continue"}`, `{"status":"failed","problem":{"code":"no_rows","title":"No rows"}}`}}
		f.run(s2, recorder.Input{OperationID: id2})
		if op := f.load(id2); op.State != operation.Failed || op.Problem.Code != "no_rows" || op.Progress == nil || op.Progress.CompletedSteps != 1 {
			t.Fatalf("%s %+v %+v", op.State, op.Problem, op.Progress)
		}
	})
}

// A Run hands the work on when the worker asks to wait (to the resume state machine, which
// waits first) and when its invocation has no room for another step (to the type's own):
// the next execution is recorded, then started, named after the operation and a count, and
// goes on from the state the Run handed it.
func TestRunHandsTheWorkOn(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		ex := &executions{}
		f.rec.Executions = ex
		id := f.newOp()
		s := &script{answers: []any{`{"status":"continue","state":{"n":1},"wait":true}`, `{"status":"continue","state":{"n":2}}`, `{"status":"succeeded"}`}}
		w := f.run(s, recorder.Input{OperationID: id, CorrelationID: "corr-1"})
		st := ex.last(t)
		ref, _ := ex.Ref(recorder.NextExecution{Workflow: "test-poll", Resume: true, Name: id + "-1"})
		if w.Next != recorder.NextWait || w.WaitSeconds != 20 || w.ContinuedIn != id+"-1" || len(s.requests) != 1 ||
			st.workflow != "test-poll" || !st.resume || st.name != id+"-1" || st.input.Continuation != 1 || st.input.CorrelationID != "corr-1" {
			t.Fatalf("a wait goes on in the resume state machine: %+v, started %+v after %d steps", w, st, len(s.requests))
		}
		if op := f.load(id); op.Execution != ref {
			t.Fatalf("the next execution is recorded: %q, want %q", op.Execution, ref)
		}
		// The workflow's state reaches the next execution's Run as it was handed over.
		if d := st.input.Gate.Decision; d.Next != recorder.NextWait || d.Request.Step != 2 || string(d.Request.State) != `{"n":1}` || d.WaitSeconds != 20 {
			t.Fatalf("handed over: %+v", d)
		}
		f.clock.Add(20 * time.Second)
		// An invocation with 45 s left: step 2 runs (the first of a Run always does), step 3
		// (30 s and the time to record it) does not fit.
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		c, err := f.rec.Run(ctx, recorder.Call{State: st.input, Worker: "w"})
		st2 := ex.last(t)
		if err != nil || c.Next != recorder.NextContinue || st2.resume || st2.name != id+"-2" || st2.input.Continuation != 2 ||
			st2.input.Gate.Decision.Request.Step != 3 || string(st2.input.Gate.Decision.Request.State) != `{"n":2}` || len(s.requests) != 2 {
			t.Fatalf("continue: %+v %v, started %+v after %d steps", c, err, st2, len(s.requests))
		}
		if op := f.load(id); op.Progress == nil || op.Progress.CompletedSteps != 2 {
			t.Fatalf("progress is recorded before the work goes on: %+v", op.Progress)
		}
		if d := f.run(s, st2.input); d.Next != recorder.NextDone || f.load(id).State != operation.Succeeded {
			t.Fatalf("the next Run ends it: %+v %s", d, f.load(id).State)
		}
		if string(s.requests[2].State) != `{"n":2}` || s.requests[2].Step != 3 || len(ex.started) != 2 {
			t.Fatalf("step 3 got %+v; %d executions started", s.requests[2], len(ex.started))
		}
		// A retried Run that handed over before starts nothing new: the name is the same.
		before := f.load(id).Version
		id2 := f.newOp()
		s2 := &script{answers: []any{`{"status":"continue","wait":true}`, `{"status":"continue","wait":true}`}}
		f.run(s2, recorder.Input{OperationID: id2})
		v := f.load(id2).Version
		f.run(&script{answers: []any{`{"status":"continue","wait":true}`}}, recorder.Input{OperationID: id2})
		if f.load(id2).Version != v || ex.last(t).name != id2+"-1" || f.load(id).Version != before {
			t.Fatalf("a retried Run recorded again: v%d → v%d, last start %s", v, f.load(id2).Version, ex.last(t).name)
		}
		// RunBudget bounds a Run as the invocation's deadline does.
		f.rec.RunBudget = time.Second
		defer func() { f.rec.RunBudget = 0 }()
		id3 := f.newOp()
		s3 := &script{takes: 2 * time.Second, answers: []any{`{"status":"continue"}`, `{"status":"succeeded"}`}}
		if d := f.run(s3, recorder.Input{OperationID: id3}); d.Next != recorder.NextContinue || len(s3.requests) != 1 {
			t.Fatalf("run budget: %+v after %d steps", d, len(s3.requests))
		}
	})
}

// An execution stopped behind the recorder's back goes no further: the Run starts no next
// execution, and the reconciler, finding the execution stopped, says what that means.
// Also when the dispatcher's fact lost the race to the first step's, and so never named the
// execution: it is the first, named after the operation.
func TestRunGoesNoFurtherInAStoppedExecution(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		for _, dispatched := range []bool{true, false} {
			ex := &executions{stopped: map[string]bool{}}
			f.rec.Executions = ex
			id := f.newOp()
			first, _ := ex.Ref(recorder.NextExecution{Workflow: "test-poll", Name: id})
			recorded := ""
			if dispatched {
				if _, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindDispatched,
					Source: operation.SourceDispatcher, At: f.clock.Now(), Execution: first}); err != nil {
					t.Fatal(err)
				}
				recorded = first
			}
			ex.stopped[first] = true
			d := f.run(&script{answers: []any{`{"status":"continue","wait":true}`}}, recorder.Input{OperationID: id})
			if d.Next != recorder.NextDone || len(ex.started) != 0 || f.load(id).Execution != recorded {
				t.Fatalf("dispatched %v: %+v, %d started, execution %q", dispatched, d, len(ex.started), f.load(id).Execution)
			}
		}
	})
}

// How an invocation failed decides the outcome, as the workflow's Catch did before Run.
func TestRunReadsInvocationFailures(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		err   error
		state operation.State
		code  string
	}{
		{&step.InvokeError{Name: step.ErrTimeout}, operation.OutcomeUnknown, "step_timeout"},
		{&step.InvokeError{Name: "errorString", Cause: "boom"}, operation.OutcomeUnknown, "worker_error"},
		{errors.New("connection reset"), operation.OutcomeUnknown, "worker_error"},
	} {
		id := f.newOp()
		f.run(&script{answers: []any{tc.err}}, recorder.Input{OperationID: id})
		if op := f.load(id); op.State != tc.state || op.Problem == nil || op.Problem.Code != tc.code {
			t.Errorf("%v: %s %+v; want %s %s", tc.err, op.State, op.Problem, tc.state, tc.code)
		}
	}
}

// failingStore fails every Append after the first `ok` ones, as a table that went away.
type failingStore struct {
	recorderStore
	mu sync.Mutex
	ok int
}

type recorderStore interface {
	Load(ctx context.Context, id string) (operation.Operation, error)
	Append(ctx context.Context, op operation.Operation, facts ...operation.Fact) (operation.Operation, error)
}

func (s *failingStore) Append(ctx context.Context, op operation.Operation, facts ...operation.Fact) (operation.Operation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ok == 0 {
		return operation.Operation{}, errors.New("table unavailable")
	}
	s.ok--
	return s.recorderStore.Append(ctx, op, facts...)
}

// A step's end that cannot be recorded is handed to the workflow (unrecorded), and the
// reconciler records from it what the recorder would have.
func TestRunHandsOverAnEndItCannotRecord(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		f.rec.Store = &failingStore{recorderStore: f.store, ok: 1} // started, then nothing
		defer func() { f.rec.Store = f.store }()
		d := f.run(&script{answers: []any{`{"status":"succeeded","result":{"ok":true}}`}}, recorder.Input{OperationID: id})
		if d.Next != recorder.NextUnrecorded || d.Request == nil || d.Request.Step != 1 || d.Task == nil {
			t.Fatalf("decision %+v", d)
		}
		// The workflow's output as the reconciler reads it.
		out, _ := json.Marshal(recorder.Input{OperationID: id, Gate: &recorder.Gate{Decision: &d}})
		var in recorder.Input
		if err := json.Unmarshal(out, &in); err != nil {
			t.Fatal(err)
		}
		fact, ok := recorder.Unrecorded(in, false)
		if !ok || fact.Kind != operation.KindSucceeded || string(fact.Result) != `{"ok":true}` {
			t.Fatalf("unrecorded: %+v %v", fact, ok)
		}
		if op := f.load(id); op.State != operation.Running {
			t.Fatalf("nothing more was recorded: %s", op.State)
		}
	})
}

// Serve answers a Run call of the workflow, and no longer the workflow before Run (the
// state alone, which said how a step ended with nothing to tell it from a forgery).
func TestServeAnswersOnlyRunCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	legacy, _ := json.Marshal(recorder.Input{OperationID: id})
	if d, err := f.rec.Serve(context.Background(), legacy); !errors.Is(err, recorder.ErrForged) {
		t.Fatalf("legacy: %+v %v, want ErrForged", d, err)
	}
	s := &script{clock: f.clock, answers: []any{`{"status":"succeeded"}`}}
	f.rec.Invoker, f.rec.Executions = s, &executions{}
	call, _ := json.Marshal(recorder.Call{State: recorder.Input{OperationID: id}, Worker: "w"})
	if d, err := f.rec.Serve(context.Background(), call); err != nil || d.Next != recorder.NextDone || len(s.requests) != 1 {
		t.Fatalf("run: %+v %v", d, err)
	}
}

// Two Runs of one execution at once (a retry while the first still runs) hand the work on
// once: one fact names the next execution, and both name the same one.
func TestRacingHandBacksRecordOnce(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		ex := &executions{}
		f.rec.Executions = ex
		for trial := range 5 {
			id := f.newOp()
			s := &script{clock: f.clock, answers: []any{`{"status":"continue","state":{"n":1},"wait":true}`}}
			f.rec.Invoker = s
			var wg sync.WaitGroup
			decisions := make([]recorder.Decision, 2)
			errs := make([]error, 2)
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					decisions[i], errs[i] = f.rec.Run(context.Background(), recorder.Call{State: recorder.Input{OperationID: id}, Worker: "w"})
				}()
			}
			wg.Wait()
			ref, _ := ex.Ref(recorder.NextExecution{Workflow: "test-poll", Resume: true, Name: id + "-1"})
			op := f.load(id)
			// One runs the step and hands on; the other found the step in flight (the
			// workflow tries it again) or, coming after, the work handed on (it does
			// nothing). accepted, started (with the lease), step 1's progress, the next
			// execution.
			handed, other := 0, 0
			for i := range 2 {
				switch {
				case errs[i] == nil && decisions[i].ContinuedIn == id+"-1":
					handed++
				case errors.Is(errs[i], recorder.ErrStepInFlight), errs[i] == nil && decisions[i].Next == recorder.NextDone:
					other++
				}
			}
			if handed != 1 || other != 1 || len(s.requests) != 1 || op.Execution != ref || op.Version != 4 {
				t.Fatalf("trial %d: %v %v, %+v %+v, %d steps run, execution %s, %d facts", trial, errs[0], errs[1],
					decisions[0], decisions[1], len(s.requests), op.Execution, op.Version)
			}
		}
	})
}

// refusing is a worker function that Lambda refuses to invoke the first `refuse` times
// (throttled, or a 502 before the handler), then answers answer; every step number
// offered is kept.
type refusing struct {
	mu     sync.Mutex
	refuse int
	answer string
	offers []int
}

func (r *refusing) Invoke(_ context.Context, _ string, payload []byte, _ time.Duration) ([]byte, error) {
	var req step.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.offers = append(r.offers, req.Step)
	if len(r.offers) <= r.refuse {
		return nil, &step.InvokeError{Name: step.ErrNotInvoked, Cause: "TooManyRequestsException: Rate Exceeded."}
	}
	return []byte(r.answer), nil
}

// Throttling only delays: a step Lambda refused to invoke never ran, so nothing is recorded
// for it; the Run hands the work on to wait (2 s, then 4 s, …) and the same step is offered
// again, until it runs. A quota never fails accepted work before its deadline.
func TestThrottlingOnlyDelays(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		ex := &executions{}
		f.rec.Executions = ex
		w := &refusing{refuse: 3, answer: `{"status":"succeeded","result":{"ok":true}}`}
		f.rec.Invoker = w
		id := f.newOp()
		in := recorder.Input{OperationID: id}
		var waits []int
		for range 4 {
			d, err := f.rec.Run(context.Background(), recorder.Call{State: in, Worker: "w"})
			if err != nil {
				t.Fatal(err)
			}
			if d.Next == recorder.NextDone {
				break
			}
			if d.Next != recorder.NextWait || d.Request == nil || d.Request.Step != 1 {
				t.Fatalf("a refused step waits and is offered again: %+v", d)
			}
			if op := f.load(id); op.State != operation.Running {
				t.Fatalf("a refusal records no outcome: %s %+v", op.State, op.Problem)
			}
			waits = append(waits, d.WaitSeconds)
			in = ex.last(t).input
			f.clock.Add(time.Duration(d.WaitSeconds) * time.Second)
		}
		op := f.load(id)
		if op.State != operation.Succeeded || fmt.Sprint(w.offers) != "[1 1 1 1]" || fmt.Sprint(waits) != "[2 4 8]" {
			t.Fatalf("%s after offers %v and waits %v; want succeeded after [1 1 1 1] and [2 4 8]", op.State, w.offers, waits)
		}
	})
}

// Work that Lambda keeps refusing ends only at its deadline, failed with a code that says
// why, and the steps before it are counted as completed.
func TestRefusedUntilTheDeadlineIsWorkerUnavailable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ex := &executions{}
	f.rec.Executions = ex
	w := &refusing{refuse: 1 << 20}
	f.rec.Invoker = w
	id := f.newOp()
	in := recorder.Input{OperationID: id}
	for i := 0; ; i++ {
		if i > 40 {
			t.Fatal("the deadline never ended the refusals")
		}
		d, err := f.rec.Run(context.Background(), recorder.Call{State: in, Worker: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Next == recorder.NextDone {
			break
		}
		if d.WaitSeconds > int(step.MaxPause/time.Second) {
			t.Fatalf("a refusal waits at most a pause: %d s", d.WaitSeconds)
		}
		in = ex.last(t).input
		f.clock.Add(time.Duration(d.WaitSeconds) * time.Second)
	}
	op := f.load(id)
	if op.State != operation.Failed || op.Problem == nil || op.Problem.Code != "worker_unavailable" ||
		!strings.Contains(op.Problem.Detail, "TooManyRequestsException") {
		t.Fatalf("%s %+v; want failed worker_unavailable naming the refusal", op.State, op.Problem)
	}
	if f.clock.Now().Before(op.CreatedAt.Add(10 * time.Minute)) {
		t.Fatalf("failed at %s, before the 10-minute deadline from %s", f.clock.Now(), op.CreatedAt)
	}
}

// A hand-back stays far under Step Functions' 256 KiB limit on an execution's input and a
// task's output, whatever the operation's input: it leaves the input out (the gate rebuilds
// it from the operation) and writes JSON without HTML escaping (an & would take 6 bytes).
func TestAHandBackFitsStepFunctionsLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ex := &executions{}
	f.rec.Executions = ex
	big := strings.Repeat("&", 60000)
	out, err := f.admit.Admit(context.Background(), admission.Request{Scope: admission.Scope{Tenant: "acme", Principal: "alice"},
		Key: "big", MediaType: "application/json", Body: []byte(`{"type":"test.poll","input":{"name":"big","mode":"` + big + `"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	id := out.Record.OperationID
	state := `{"note":"` + strings.Repeat("<&>", 10000) + `"}`
	s := &script{answers: []any{`{"status":"continue","wait":true,"state":` + state + `}`, `{"status":"succeeded"}`}}
	d := f.run(s, recorder.Input{OperationID: id})
	st := ex.last(t)
	absent := func(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }
	if d.Request == nil || !absent(d.Request.Input) || !absent(st.input.Gate.Decision.Request.Input) {
		t.Fatalf("the input was handed on (%d bytes)", len(st.input.Gate.Decision.Request.Input))
	}
	if len(st.raw) > 40000 || !strings.Contains(string(st.raw), "<&>") {
		t.Fatalf("the next execution's input is %d bytes (escaped: %v); want the state unescaped, under 40,000", len(st.raw), !strings.Contains(string(st.raw), "<&>"))
	}
	// The next Run gives the worker the operation's whole input all the same.
	f.clock.Add(time.Duration(d.WaitSeconds) * time.Second)
	f.run(s, st.input)
	var in struct{ Mode string }
	if err := json.Unmarshal(s.requests[1].Input, &in); err != nil || in.Mode != big || string(s.requests[1].State) != state {
		t.Fatalf("step 2 got an input of %d bytes (%v) and state %d bytes", len(in.Mode), err, len(s.requests[1].State))
	}
}

// The next execution exists before any fact names it: the Run starts it, then records it,
// so a reconciler that reads the operation in between never finds a named execution
// missing and calls a healthy operation's outcome unknown.
func TestTheNextExecutionExistsBeforeAFactNamesIt(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		ex := &executions{}
		f.rec.Executions = ex
		id := f.newOp()
		ref, _ := ex.Ref(recorder.NextExecution{Workflow: "test-poll", Resume: true, Name: id + "-1"})
		namedAtStart := ""
		ex.onStart = func(string) error { namedAtStart = f.load(id).Execution; return nil }
		d := f.run(&script{answers: []any{`{"status":"continue","wait":true}`}}, recorder.Input{OperationID: id})
		if d.ContinuedIn != id+"-1" || namedAtStart == ref || f.load(id).Execution != ref {
			t.Fatalf("%+v: named %q when it was started, %q after; want it named only after", d, namedAtStart, f.load(id).Execution)
		}
	})
}

// A Run that died between starting the next execution and naming it leaves the naming to
// that execution: its first step names it the operation's latest, and the work goes on.
func TestAContinuationNamesItself(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		ex := &executions{}
		f.rec.Executions = ex
		id3 := f.newOp()
		// The dispatcher's first execution ran step 1 and died after starting <id3>-1.
		f.handle(recorder.Input{OperationID: id3})
		before := f.load(id3)
		wait := recorder.Decision{Next: recorder.NextWait, WaitSeconds: 20, Request: &step.Request{OperationID: id3, Step: 2}}
		s := &script{answers: []any{`{"status":"continue"}`, `{"status":"succeeded"}`}}
		f.clock.Add(time.Minute)
		d := f.run(s, recorder.Input{OperationID: id3, Continuation: 1, Gate: &recorder.Gate{Decision: &wait}})
		own, _ := ex.Ref(recorder.NextExecution{Workflow: "test-poll", Resume: true, Name: id3 + "-1"})
		op := f.load(id3)
		if before.Execution == own || d.Next != recorder.NextDone || op.State != operation.Succeeded || len(s.requests) != 1 || s.requests[0].Step != 2 {
			t.Fatalf("%+v: %s after %d steps, named %q (before %q)", d, op.State, len(s.requests), op.Execution, before.Execution)
		}
		if op.Execution != own {
			t.Fatalf("the continuation did not name itself: %q, want %q", op.Execution, own)
		}
	})
}

// Two Runs of one execution that race to hand on, one to wait and one to go on at once,
// can start executions of the same name on different state machines: only the one named
// first goes on. A retried Run of an execution whose work was handed on does nothing, and
// the other continuation finds one of its count already named and does nothing either:
// two continuations never run the same operation.
func TestTwoHandBacksOnDifferentMachinesContinueOnce(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		ex := &executions{}
		f.rec.Executions = ex
		id := f.newOp()
		// Run A handed a wait on: <id>-1 on the resume state machine is named.
		f.run(&script{answers: []any{`{"status":"continue","wait":true}`}}, recorder.Input{OperationID: id})
		resumeRef, _ := ex.Ref(recorder.NextExecution{Workflow: "test-poll", Resume: true, Name: id + "-1"})
		if f.load(id).Execution != resumeRef {
			t.Fatal("Run A's continuation is not named")
		}
		v := f.load(id).Version
		// Run B, the workflow's retry of A, comes after: it runs nothing and starts nothing.
		s := &script{answers: []any{`{"status":"continue"}`}}
		if d := f.run(s, recorder.Input{OperationID: id}); d.Next != recorder.NextDone || len(s.requests) != 0 || len(ex.started) != 1 {
			t.Fatalf("Run B: %+v after %d steps, %d started", d, len(s.requests), len(ex.started))
		}
		// Had B run step 1 again before A named its continuation, B would have handed on
		// to <id>-1 on the type's own state machine: that execution does nothing.
		cont := recorder.Decision{Next: recorder.NextContinue, StepTimeoutSeconds: 30, Request: &step.Request{OperationID: id, Step: 2}}
		s2 := &script{answers: []any{`{"status":"continue"}`, `{"status":"succeeded"}`}}
		if d := f.run(s2, recorder.Input{OperationID: id, Continuation: 1, Gate: &recorder.Gate{Decision: &cont}}); d.Next != recorder.NextDone || len(s2.requests) != 0 {
			t.Fatalf("B's continuation ran %d steps: %+v", len(s2.requests), d)
		}
		if op := f.load(id); op.Execution != resumeRef || op.State != operation.Running || op.Version != v {
			t.Fatalf("latest %q, %s v%d (was v%d); want A's continuation, running, nothing new recorded", op.Execution, op.State, op.Version, v)
		}
	})
}

// When Step Functions will not start the next execution (throttled past the client's
// retries), no fact names it and the Run does not fail (which would run its steps again):
// its execution ends with the next one's input, for the reconciler to start.
func TestAnUnstartedContinuationIsHandedToTheReconciler(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		ex := &executions{onStart: func(string) error { return errors.New("ThrottlingException: Rate exceeded") }}
		f.rec.Executions = ex
		id := f.newOp()
		before := f.load(id).Execution
		d := f.run(&script{answers: []any{`{"status":"continue","state":{"n":1},"wait":true}`}}, recorder.Input{OperationID: id})
		if d.Next != recorder.NextWait || d.ContinuedIn != "" || d.Pending == nil || d.Pending.Continuation != 1 ||
			d.Pending.Gate.Decision.Request.Step != 2 || string(d.Pending.Gate.Decision.Request.State) != `{"n":1}` {
			t.Fatalf("%+v; want the next execution's input pending", d)
		}
		if op := f.load(id); op.Execution != before || op.Progress == nil || op.Progress.CompletedSteps != 1 {
			t.Fatalf("named %q, progress %+v; want nothing named and step 1 recorded", op.Execution, op.Progress)
		}
	})
}

// A step in flight is leased: while one Run's step may still act, another Run of the same
// execution (the workflow retried it while the first still runs) records nothing, neither
// a cancel nor the deadline, and runs nothing; it is told to come back later. The Run that
// holds the lease records the stop once its step's end is recorded. A lease that runs out
// (its Run died) lets the next Run take over.
func TestNoStopIsRecordedWhileAStepIsInFlight(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		for _, stop := range []string{"cancel", "deadline"} {
			id := f.newOp()
			var second error
			var during recorder.Decision
			s := &script{answers: []any{`{"status":"continue"}`, `{"status":"succeeded"}`}}
			s.during = func(n int) {
				if n != 1 {
					return
				}
				if stop == "cancel" {
					dynamotest.Cancel(t, f.store, id)
				} else {
					f.clock.Add(20 * time.Second) // past the deadline, within the step's lease
				}
				other := &script{clock: f.clock, answers: []any{`{"status":"succeeded"}`}}
				r2 := *f.rec
				r2.Invoker = other
				during, second = r2.Run(context.Background(), recorder.Call{State: recorder.Input{OperationID: id}, Worker: "w"})
				if len(other.requests) != 0 {
					t.Errorf("%s: the second Run ran a step while the first's was in flight", stop)
				}
			}
			if stop == "deadline" {
				f.clock.Add(9*time.Minute + 50*time.Second) // the deadline is 10 minutes after admission
			}
			f.run(s, recorder.Input{OperationID: id})
			if !errors.Is(second, recorder.ErrStepInFlight) {
				t.Fatalf("%s: the second Run answered %+v, %v; want ErrStepInFlight", stop, during, second)
			}
			op := f.load(id)
			want := operation.Canceled
			if stop == "deadline" {
				want = operation.Failed
			}
			if op.State != want || op.Progress == nil || op.Progress.CompletedSteps != 1 || len(s.requests) != 1 {
				t.Fatalf("%s: %s %+v after %d steps; want %s after step 1, recorded by the Run that ran it", stop, op.State, op.Progress, len(s.requests), want)
			}
		}

		// The lease runs out: its Run died while the step ran.
		id := f.newOp()
		dead := &script{answers: []any{`{"status":"continue"}`}}
		dead.during = func(int) { panic("the Run died") }
		func() {
			defer func() { _ = recover() }()
			f.run(dead, recorder.Input{OperationID: id})
		}()
		next := &script{answers: []any{`{"status":"succeeded"}`}}
		r2 := *f.rec
		r2.Invoker, next.clock = next, f.clock
		if _, err := r2.Run(context.Background(), recorder.Call{State: recorder.Input{OperationID: id}, Worker: "w"}); !errors.Is(err, recorder.ErrStepInFlight) {
			t.Fatalf("before the lease ran out: %v", err)
		}
		f.clock.Add(51 * time.Second) // the step's 30 s and the 20 s to record it
		if d, err := r2.Run(context.Background(), recorder.Call{State: recorder.Input{OperationID: id}, Worker: "w"}); err != nil || d.Next != recorder.NextDone {
			t.Fatalf("after: %+v %v", d, err)
		}
		if op := f.load(id); op.State != operation.Succeeded || len(next.requests) != 1 {
			t.Fatalf("%s after %d steps", op.State, len(next.requests))
		}
	})
}

// A wait costs the same whatever its length: one hand-back (one fact, one execution, its
// pause and one Run), however long the worker asked to wait, and nobody looks at the
// operation before the wait ends. Six hours are one pause, not 72.
func TestAWaitCostsTheSameWhateverItsLength(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ex := &executions{}
	f.rec.Executions = ex
	for _, delay := range []int{20, 6 * 3600} {
		out, err := f.admit.Admit(context.Background(), admission.Request{Scope: admission.Scope{Tenant: "acme", Principal: "alice"},
			Key: fmt.Sprint("long-", delay), MediaType: "application/json", Body: []byte(`{"type":"test.long","input":{"name":"w` + fmt.Sprint(delay) + `"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		id := out.Record.OperationID
		starts := len(ex.started)
		s := &script{answers: []any{fmt.Sprintf(`{"status":"continue","delaySeconds":%d}`, delay), `{"status":"succeeded"}`}}
		d := f.run(s, recorder.Input{OperationID: id})
		v := f.load(id).Version
		until := f.clock.Now().Add(time.Duration(delay) * time.Second)
		if d.Next != recorder.NextWait || d.ResumeAt != operation.FormatTime(until) {
			t.Fatalf("%d s: %+v; want a wait until %s", delay, d, operation.FormatTime(until))
		}
		if op := f.load(id); !op.WaitingUntil.Equal(until) {
			t.Fatalf("%d s: waiting until %v", delay, op.WaitingUntil)
		}
		f.clock.Add(time.Duration(delay) * time.Second) // the resume state machine's pause ends at resumeAt
		if d := f.run(s, ex.last(t).input); d.Next != recorder.NextDone || f.load(id).State != operation.Succeeded {
			t.Fatalf("%d s: after the pause %+v %s", delay, d, f.load(id).State)
		}
		// accepted, started, step 1's progress, the hand-back; then the lease, the outcome.
		if len(ex.started)-starts != 1 || v != 4 || f.load(id).Version != 6 {
			t.Fatalf("%d s: %d executions, v%d then v%d; want 1, v4, v6", delay, len(ex.started)-starts, v, f.load(id).Version)
		}
	}
}

// A continuation whose predecessor never ran a step (its Run was throttled, and the
// reconciler carried the work on) starts the work and names itself in one append: started
// first, since nothing but started may follow dispatched.
func TestAContinuationOfWorkNotStartedStartsIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ex := &executions{}
	f.rec.Executions = ex
	id := f.newOp()
	first, _ := ex.Ref(recorder.NextExecution{Workflow: "test-poll", Name: id})
	if _, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindDispatched,
		Source: operation.SourceDispatcher, At: f.clock.Now(), Execution: first}); err != nil {
		t.Fatal(err)
	}
	s := &script{answers: []any{`{"status":"succeeded"}`}}
	d := f.run(s, recorder.Input{OperationID: id, Continuation: 1})
	own, _ := ex.Ref(recorder.NextExecution{Workflow: "test-poll", Name: id + "-1"})
	if op := f.load(id); d.Next != recorder.NextDone || op.State != operation.Succeeded || op.Execution != own || len(s.requests) != 1 {
		t.Fatalf("%+v: %s, latest %q after %d steps", d, op.State, op.Execution, len(s.requests))
	}
}

// A failed operation keeps the progress its fast steps reported (issue #21): step 1's 33 %
// was held back (a quiet step), and step 2's failure records it with the end; a failed
// report's own progress is kept too.
func TestTheEndKeepsTheProgressOfFastSteps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, second string
		want         operation.Progress
	}{
		{"held back", `{"status":"failed","problem":{"code":"bad","title":"Bad"}}`,
			operation.Progress{CompletedSteps: 1, Percent: ptr(33), Message: "one of three"}},
		{"in the failed report", `{"status":"failed","problem":{"code":"bad","title":"Bad"},"progress":{"percent":50,"message":"half"}}`,
			operation.Progress{CompletedSteps: 1, Percent: ptr(50), Message: "half"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.newOp()
			s := &script{answers: []any{`{"status":"continue","progress":{"percent":33,"message":"one of three"}}`, c.second}}
			if d := f.run(s, recorder.Input{OperationID: id}); d.Next != recorder.NextDone {
				t.Fatalf("decision %+v", d)
			}
			op := f.load(id)
			if op.State != operation.Failed || op.Progress == nil {
				t.Fatalf("%s %+v", op.State, op.Progress)
			}
			got := *op.Progress
			if got.CompletedSteps != c.want.CompletedSteps || got.Message != c.want.Message || got.Percent == nil || *got.Percent != *c.want.Percent {
				t.Fatalf("progress %+v (percent %v), want %+v", got, got.Percent, c.want)
			}
		})
	}
}

func ptr(v float64) *float64 { return &v }

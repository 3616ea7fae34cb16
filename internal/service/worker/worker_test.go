package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/recorder"
	"github.com/longrun-dev/longrun/internal/service/worker"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

type fixture struct {
	t     *testing.T
	store *dynamo.Store
	admit *dynamotest.Admitter
}

func newFixture(t *testing.T) *fixture {
	client, _ := dynamotest.NewClient(t)
	store := dynamo.New(client, dynamotest.NewTable(t, client))
	return &fixture{t: t, store: store, admit: dynamotest.NewAdmitter(store, time.Now)}
}

func (f *fixture) accepted(body string) string { return f.admit.Admit(f.t, body) }

func (f *fixture) state(id string) operation.Operation { return dynamotest.Load(f.t, f.store, id) }

func TestDemoTaskRunsItsStepsThenRecords(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.accepted(`{"type":"demo.task","input":{"target":"w","steps":3}}`)
	r := &worker.Runner{Store: f.store, Work: worker.DemoTask{}, Now: time.Now}
	var rep worker.Report
	var err error
	for step := 0; ; step = rep.Step {
		if rep, err = r.Handle(ctx, worker.Task{OperationID: id, Step: step}); err != nil {
			t.Fatal(err)
		}
		if f.state(id).State != operation.Running {
			t.Fatalf("step %d: state %s", step, f.state(id).State)
		}
		if rep.Done {
			break
		}
	}
	if rep.Step != 3 || rep.Outcome != operation.KindSucceeded || string(rep.Result) != `{"steps":3,"target":"w"}` {
		t.Fatalf("report %+v", rep)
	}
	rec := &recorder.Recorder{Store: f.store, Now: time.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	if err := rec.Handle(ctx, recorder.Input{OperationID: id, Task: &recorder.Task{Report: &rep}}); err != nil {
		t.Fatal(err)
	}
	if op := f.state(id); op.State != operation.Succeeded || op.Version != 3 || op.ObservedAt.IsZero() {
		t.Fatalf("op %s v%d", op.State, op.Version)
	}
	// The recorder may be invoked again (a retried task): nothing changes.
	if err := rec.Handle(ctx, recorder.Input{OperationID: id, Task: &recorder.Task{Report: &rep}}); err != nil || f.state(id).Version != 3 {
		t.Fatalf("second record: %v v%d", err, f.state(id).Version)
	}
}

func TestIntentIsCheckedBeforeEveryStep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.accepted(`{"type":"demo.task","input":{"target":"c","steps":5}}`)
	r := &worker.Runner{Store: f.store, Work: worker.DemoTask{}, Now: time.Now}
	if _, err := r.Handle(ctx, worker.Task{OperationID: id, Step: 0}); err != nil {
		t.Fatal(err)
	}
	if op := dynamotest.Cancel(t, f.store, id); op.State != operation.Cancelling {
		t.Fatalf("cancel while running: %s", op.State)
	}
	rep, err := r.Handle(ctx, worker.Task{OperationID: id, Step: 1})
	if err != nil || !rep.Done || rep.Outcome != operation.KindCanceled {
		t.Fatalf("after cancel: %+v %v", rep, err)
	}
	rec := &recorder.Recorder{Store: f.store, Now: time.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	if err := rec.Handle(ctx, recorder.Input{OperationID: id, Task: &recorder.Task{Report: &rep}}); err != nil {
		t.Fatal(err)
	}
	// A late success from a step that was already in flight cannot overwrite the decision.
	late := worker.Report{Done: true, Outcome: operation.KindSucceeded, Result: json.RawMessage(`{}`)}
	if err := rec.Handle(ctx, recorder.Input{OperationID: id, Task: &recorder.Task{Report: &late}}); err != nil {
		t.Fatal(err)
	}
	if op := f.state(id); op.State != operation.Canceled {
		t.Fatalf("state %s", op.State)
	}
	// And a canceled operation is never worked on again.
	if rep, err := r.Handle(ctx, worker.Task{OperationID: id, Step: 2}); err != nil || !rep.Done || rep.Outcome != "" {
		t.Fatalf("after terminal: %+v %v", rep, err)
	}
}

func TestExportOrdersIsDeterministic(t *testing.T) {
	a, rows, err := worker.OrdersCSV("2026-09-01", "2026-09-23")
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := worker.OrdersCSV("2026-09-01", "2026-09-23")
	if string(a) != string(b) || rows < 23 || rows > 23*7 {
		t.Fatalf("rows %d", rows)
	}
	f := newFixture(t)
	id := f.accepted(`{"type":"export.orders","input":{"from":"2026-09-01","to":"2026-09-23"}}`)
	r := &worker.Runner{Store: f.store, Work: worker.ExportOrders{}, Now: time.Now}
	rep, err := r.Handle(context.Background(), worker.Task{OperationID: id})
	if err != nil || !rep.Done || rep.Outcome != operation.KindSucceeded {
		t.Fatalf("%+v %v", rep, err)
	}
	var res struct {
		RowCount int    `json:"rowCount"`
		SHA256   string `json:"sha256"`
	}
	if err := json.Unmarshal(rep.Result, &res); err != nil || res.RowCount != rows || len(res.SHA256) != 64 {
		t.Fatalf("result %s", rep.Result)
	}
}

// demo.task's "unknown" acts and then loses its result: the last step fails after the effect.
func TestDemoUnknownLosesTheResultAfterTheEffect(t *testing.T) {
	f := newFixture(t)
	id := f.accepted(`{"type":"demo.task","input":{"target":"u","steps":2,"outcome":"unknown"}}`)
	r := &worker.Runner{Store: f.store, Work: worker.DemoTask{}, Now: time.Now}
	if rep, err := r.Handle(context.Background(), worker.Task{OperationID: id, Step: 0}); err != nil || rep.Done {
		t.Fatalf("first step: %+v %v", rep, err)
	}
	if _, err := r.Handle(context.Background(), worker.Task{OperationID: id, Step: 1}); !errors.Is(err, worker.ErrResultLost) {
		t.Fatalf("last step: %v", err)
	}
}

// throttled is the store with its reads or its appends failing as DynamoDB's throttling
// does: nothing is read or written, and the caller gets an error.
type throttled struct {
	*dynamo.Store
	load, append bool
}

var errThrottled = problem.Wrap(problem.Unavailable, errors.New("ThrottlingException: rate exceeded"), "A dependency is unavailable.")

func (s throttled) Load(ctx context.Context, id string) (operation.Operation, error) {
	if s.load {
		return operation.Operation{}, errThrottled
	}
	return s.Store.Load(ctx, id)
}

func (s throttled) Append(ctx context.Context, op operation.Operation, fs ...operation.Fact) (operation.Operation, error) {
	if s.append {
		return op, errThrottled
	}
	return s.Store.Append(ctx, op, fs...)
}

// lambdaErrorType is the errorType the Lambda Go runtime reports for a handler's error
// (aws-lambda-go lambda/errors.go, lambdaErrorResponse): the name of the error's dynamic
// type, pointer stripped. The workflow's Catch names the error the same way (Error), and an
// emulator that ignores function errors hands it over as the report's errorType.
func lambdaErrorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// bothPaths is how the recorder receives a worker invocation's error: through the
// workflow's Catch (Step Functions on AWS) and as the error payload in the task result.
func bothPaths(id string, step int, err error) (viaCatch, viaPayload recorder.Input) {
	typ := lambdaErrorType(err)
	cause, _ := json.Marshal(map[string]string{"errorType": typ, "errorMessage": err.Error()})
	viaCatch = recorder.Input{OperationID: id, Step: step, Error: &recorder.TaskError{Error: typ, Cause: string(cause)}}
	viaPayload = recorder.Input{OperationID: id, Step: step, Task: &recorder.Task{Report: &worker.Report{ErrorType: typ, ErrorMessage: err.Error()}}}
	return viaCatch, viaPayload
}

// Issue #12, lifecycle defect 5: work that never ran goes to an operator. A worker that
// fails before its step begins (its read of the operation, or its started append, throttled)
// did nothing: its failure is provably no effect, so it is recorded failed
// (worker_unavailable), the same on both paths, not outcome_unknown. A failure after the
// step began stays outcome_unknown (worker_error), exactly as before.
func TestAFailureBeforeTheStepBeganIsRecordedFailed(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, tc := range []struct {
		name       string
		dispatched bool // the dispatcher's fact landed before the worker ran
		before     int  // steps that ran normally first
		store      func(*dynamo.Store) facts.Store
		kind       operation.Kind
		code       string
	}{
		{"the first read is throttled", true, 0, func(s *dynamo.Store) facts.Store { return throttled{Store: s, load: true} }, operation.KindFailed, "worker_unavailable"},
		{"the first read is throttled, before the dispatcher's fact", false, 0, func(s *dynamo.Store) facts.Store { return throttled{Store: s, load: true} }, operation.KindFailed, "worker_unavailable"},
		{"the started append is throttled", true, 0, func(s *dynamo.Store) facts.Store { return throttled{Store: s, append: true} }, operation.KindFailed, "worker_unavailable"},
		{"the read before a later step is throttled", true, 1, func(s *dynamo.Store) facts.Store { return throttled{Store: s, load: true} }, operation.KindFailed, "worker_unavailable"},
		{"the step fails after it may have acted", true, 1, func(s *dynamo.Store) facts.Store { return s }, operation.KindOutcomeUnknown, "worker_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.accepted(`{"type":"demo.task","input":{"target":"n","steps":2,"outcome":"unknown"}}`)
			if tc.dispatched {
				if _, err := f.store.Append(ctx, f.state(id), operation.Fact{Kind: operation.KindDispatched, At: time.Now(), Source: operation.SourceDispatcher, Execution: "exec"}); err != nil {
					t.Fatal(err)
				}
			}
			healthy := &worker.Runner{Store: f.store, Work: worker.DemoTask{}, Now: time.Now}
			for step := range tc.before {
				if _, err := healthy.Handle(ctx, worker.Task{OperationID: id, Step: step}); err != nil {
					t.Fatal(err)
				}
			}
			r := &worker.Runner{Store: tc.store(f.store), Work: worker.DemoTask{}, Now: time.Now}
			_, err := r.Handle(ctx, worker.Task{OperationID: id, Step: tc.before})
			if err == nil {
				t.Fatal("the invocation was to fail")
			}
			var notStarted *worker.NotStartedError
			if before := errors.As(err, &notStarted); before != (tc.kind == operation.KindFailed) || before && lambdaErrorType(err) != worker.NotStartedErrorType {
				t.Fatalf("%T (errorType %s): a failure before the step must be a *NotStartedError reported as %s, and no other", err, lambdaErrorType(err), worker.NotStartedErrorType)
			}
			viaCatch, viaPayload := bothPaths(id, tc.before, err)
			a, okA := recorder.Outcome(viaCatch)
			b, okB := recorder.Outcome(viaPayload)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !okA || !okB || string(ja) != string(jb) {
				t.Fatalf("the paths differ:\n%s\n%s", ja, jb)
			}
			rec := &recorder.Recorder{Store: f.store, Now: time.Now, Log: log}
			if err := rec.Handle(ctx, viaPayload); err != nil {
				t.Fatal(err)
			}
			op := f.state(id)
			if op.State != operation.State(tc.kind) || op.Problem == nil || op.Problem.Code != tc.code {
				t.Fatalf("errorType %s: recorded %s %+v, want %s (%s)", lambdaErrorType(err), op.State, op.Problem, tc.kind, tc.code)
			}
		})
	}
}

package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/operation"
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
	if _, err := f.store.Append(ctx, f.state(id), operation.Fact{Kind: operation.KindCancelRequested, At: time.Now(), Source: operation.SourceClient}); err != nil {
		t.Fatal(err)
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

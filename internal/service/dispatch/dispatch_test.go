package dispatch_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
	"github.com/longrun-dev/longrun/internal/testkit/fakeexecutor"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

type fixture struct {
	t     *testing.T
	store *dynamo.Store
	exec  *fakeexecutor.Executor
	dlq   *letters
	d     *dispatch.Dispatcher
	admit *dynamotest.Admitter
}

type letters struct {
	mu  sync.Mutex
	got []dispatch.DeadLetter
}

func (l *letters) Send(_ context.Context, letter dispatch.DeadLetter) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, letter)
	return nil
}

func newFixture(t *testing.T) *fixture {
	client, _ := dynamotest.NewClient(t)
	store := dynamo.New(client, dynamotest.NewTable(t, client))
	f := &fixture{t: t, store: store, exec: &fakeexecutor.Executor{}, dlq: &letters{}, admit: dynamotest.NewAdmitter(store, time.Now)}
	d, err := dispatch.New(dispatch.Dispatcher{Store: store, Executor: f.exec, Registry: optype.Builtin(), DeadLetters: f.dlq,
		Now: time.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Accepted: dynamo.AcceptedOperation})
	if err != nil {
		t.Fatal(err)
	}
	f.d = d
	return f
}

// accepted admits a demo operation and returns its id.
func (f *fixture) accepted() string { return f.admit.Admit(f.t, "") }

func (f *fixture) load(id string) operation.Operation { return dynamotest.Load(f.t, f.store, id) }

func (f *fixture) cancel(id string) {
	f.t.Helper()
	op := f.load(id)
	if _, err := f.store.Append(context.Background(), op, operation.Fact{Kind: operation.KindCancelRequested, At: time.Now(), Source: operation.SourceClient}); err != nil {
		f.t.Fatal(err)
	}
}

func TestDispatchStartsOneExecutionNamedAfterTheOperation(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	for range 3 { // redelivery is harmless
		if err := f.d.Dispatch(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	ex := f.exec.Executions()
	if len(ex) != 1 || ex[id].Workflow != "demo-task" || string(ex[id].Input) != `{"operationId":"`+id+`","step":0}` {
		t.Fatalf("executions %+v", ex)
	}
	op := f.load(id)
	if op.State != operation.Dispatched || op.Version != 2 || op.Execution != fakeexecutor.Ref("demo-task", id) {
		t.Fatalf("op %+v", op)
	}
}

// The dispatcher dies before StartExecution: the redelivered record starts the work once.
func TestCrashBeforeStart(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	f.exec.BeforeStart = func(string) error { return errors.New("process died") }
	if err := f.d.Dispatch(context.Background(), id); err == nil {
		t.Fatal("expected the crash to surface")
	}
	if len(f.exec.Executions()) != 0 || f.load(id).State != operation.Accepted {
		t.Fatal("nothing may have started")
	}
	f.exec.BeforeStart = nil
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if len(f.exec.Executions()) != 1 || f.load(id).State != operation.Dispatched {
		t.Fatal("redelivery must start the work exactly once")
	}
}

// The dispatcher dies after StartExecution, before the dispatched fact: redelivery finds the
// execution by name and records it; there is never a second execution.
func TestCrashAfterStartBeforeFact(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	f.exec.AfterStart = func(string) error { return errors.New("response lost") }
	if err := f.d.Dispatch(context.Background(), id); err == nil {
		t.Fatal("expected the crash to surface")
	}
	if f.load(id).State != operation.Accepted {
		t.Fatal("no fact may have been written")
	}
	f.exec.AfterStart = nil
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	op := f.load(id)
	if len(f.exec.Executions()) != 1 || f.exec.Starts() != 2 || op.State != operation.Dispatched || op.Execution == "" {
		t.Fatalf("executions %d starts %d op %+v", len(f.exec.Executions()), f.exec.Starts(), op)
	}
}

func TestCancelBeforeDispatchStartsNothing(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	f.cancel(id)
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if len(f.exec.Executions()) != 0 || f.load(id).State != operation.Canceled {
		t.Fatalf("state %s, executions %d", f.load(id).State, len(f.exec.Executions()))
	}
}

// Cancellation lands between StartExecution and the dispatched fact: the dispatcher loses
// the append, re-reads, records canceled and stops the execution it started.
func TestCancelRacingDispatch(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	f.exec.AfterStart = func(string) error { f.cancel(id); return nil }
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	ex := f.exec.Executions()[id]
	if op := f.load(id); op.State != operation.Canceled || !ex.Stopped {
		t.Fatalf("state %s stopped %v", op.State, ex.Stopped)
	}
}

// The worker may report before the dispatcher's fact commits; dispatch then has nothing to add.
func TestWorkerStartedFirst(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	f.exec.AfterStart = func(string) error {
		_, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindStarted, At: time.Now(), Source: operation.SourceExecutor})
		return err
	}
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if op := f.load(id); op.State != operation.Running || op.Version != 2 {
		t.Fatalf("op %s v%d", op.State, op.Version)
	}
}

func TestHandleStreamReportsOnlyFailedRecords(t *testing.T) {
	f := newFixture(t)
	ok, flaky := f.accepted(), f.accepted()
	f.exec.BeforeStart = func(name string) error {
		if name == flaky {
			return errors.New("throttled")
		}
		return nil
	}
	f.exec.AfterStart = nil
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		dynamotest.FactRecord(ok, "accepted", "100"),
		dynamotest.FactRecord("op_01ARYZ6S410000000000000000", "accepted", "200"), // poison: no such operation
		dynamotest.FactRecord(flaky, "accepted", "300"),
		dynamotest.FactRecord(ok, "dispatched", "400"), // not an accepted fact: ignored
		{EventName: "REMOVE"},
	}}
	resp, err := f.d.HandleStream(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "300" {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	if len(f.dlq.got) != 1 || f.dlq.got[0].OperationID != "op_01ARYZ6S410000000000000000" {
		t.Fatalf("dead letters %+v", f.dlq.got)
	}
	if f.load(ok).State != operation.Dispatched || f.load(flaky).State != operation.Accepted {
		t.Fatal("states")
	}
	// The same batch delivered again: still one execution each.
	f.exec.BeforeStart = nil
	if _, err := f.d.HandleStream(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if n := len(f.exec.Executions()); n != 2 || f.load(flaky).State != operation.Dispatched {
		t.Fatalf("executions %d", n)
	}
}

func TestUnknownTypeFailsTheOperation(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	f.d.Registry = optype.NewRegistry(optype.ExportOrders()) // demo.task was unregistered since admission
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	op := f.load(id)
	if op.State != operation.Failed || op.Problem == nil || op.Problem.Code != "unsupported_operation_type" || len(f.exec.Executions()) != 0 {
		t.Fatalf("op %+v", op)
	}
}

// A dispatcher missing a dependency is refused at construction, naming what is missing,
// instead of failing on its first record.
func TestNewRequiresEveryDependency(t *testing.T) {
	_, err := dispatch.New(dispatch.Dispatcher{Registry: optype.Builtin(), Now: time.Now})
	if err == nil {
		t.Fatal("a dispatcher without store, executor, dead letters, log or decoder was accepted")
	}
	for _, name := range []string{"Store", "Executor", "DeadLetters", "Log", "Accepted"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q does not name %s", err, name)
		}
	}
	for _, name := range []string{"Registry", "Now"} {
		if strings.Contains(err.Error(), name) {
			t.Errorf("%q names %s, which is set", err, name)
		}
	}
}

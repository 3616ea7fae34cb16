package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/service/recorder"
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
	raw   *dynamodb.Client // the table's client, for writing items the store would refuse
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
	return newFixtureOn(t, client)
}

// eachStore runs test with this package's fixture on each store (dynamotest.EachStore).
func eachStore(t *testing.T, test func(t *testing.T, f *fixture)) {
	dynamotest.EachStore(t, func(t *testing.T, client *dynamodb.Client) { test(t, newFixtureOn(t, client)) })
}

func newFixtureOn(t *testing.T, client *dynamodb.Client) *fixture {
	store := dynamo.New(client, dynamotest.NewTable(t, client))
	f := &fixture{t: t, store: store, exec: &fakeexecutor.Executor{}, dlq: &letters{}, admit: dynamotest.NewAdmitter(store, time.Now), raw: client}
	d, err := dispatch.New(dispatch.Dispatcher{Store: store, Executor: f.exec, Registry: optype.Builtin(), DeadLetters: f.dlq,
		Now: time.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Accepted: dynamo.OutboxOperation})
	if err != nil {
		t.Fatal(err)
	}
	f.d = d
	return f
}

// accepted admits a demo operation and returns its id.
func (f *fixture) accepted() string { return f.admit.Admit(f.t, "") }

func (f *fixture) load(id string) operation.Operation { return dynamotest.Load(f.t, f.store, id) }

// cancel cancels id as the API does (the real intent service): canceled at once while it is
// accepted, cancelling once it was dispatched or started.
func (f *fixture) cancel(id string) operation.Operation { return dynamotest.Cancel(f.t, f.store, id) }

// dispatcherOn is a second dispatcher, like f.d but on store.
func (f *fixture) dispatcherOn(store facts.Store) *dispatch.Dispatcher {
	f.t.Helper()
	d, err := dispatch.New(dispatch.Dispatcher{Store: store, Executor: f.exec, Registry: optype.Builtin(), DeadLetters: f.dlq,
		Now: time.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Accepted: dynamo.OutboxOperation})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// history lists id's facts as kind/source, for failure messages.
func (f *fixture) history(id string) string {
	f.t.Helper()
	fs, err := f.store.Facts(context.Background(), id)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, x := range fs {
		out = append(out, string(x.Kind)+"/"+string(x.Source))
	}
	return strings.Join(out, " ")
}

// redeliver hands the dispatcher the stream record of id's accepted fact again.
func (f *fixture) redeliver(id, sequence string) events.DynamoDBEventResponse {
	f.t.Helper()
	resp, err := f.d.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{dynamotest.FactRecord(id, "accepted", sequence)}})
	if err != nil {
		f.t.Fatal(err)
	}
	return resp
}

// record hands in to the recorder as the workflow does, and returns its decision.
func (f *fixture) record(in recorder.Input) recorder.Decision {
	f.t.Helper()
	rec := &recorder.Recorder{Store: f.store, Registry: optype.Builtin(), Now: time.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	d, err := rec.Handle(context.Background(), in)
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// runStep is the workflow's first step of id: the recorder records started and sends the
// step, during runs while the step is in flight, and the recorder records report, the
// worker's answer ("" for a crash after it may have acted).
func (f *fixture) runStep(id string, during func(), report string) {
	f.t.Helper()
	d := f.record(recorder.Input{OperationID: id})
	if d.Next != recorder.NextWork {
		f.t.Fatalf("the first step was not sent: %+v", d)
	}
	during()
	in := recorder.Input{Gate: &recorder.Gate{Decision: &d}, Task: &recorder.Task{Report: json.RawMessage(report)}}
	if report == "" {
		in = recorder.Input{Gate: &recorder.Gate{Decision: &d}, Error: &recorder.TaskError{Error: "Runtime.ExitError", Cause: `{"errorMessage":"exit status 2"}`}}
	}
	f.record(in)
}

// failingAppend is a store whose next n appends of a fact of kind fail as a throttled or
// timed-out write does: nothing is written and the writer gets an error.
type failingAppend struct {
	*dynamo.Store
	kind operation.Kind
	mu   sync.Mutex
	n    int
}

func (s *failingAppend) Append(ctx context.Context, op operation.Operation, fs ...operation.Fact) (operation.Operation, error) {
	s.mu.Lock()
	fail := s.n > 0 && slices.ContainsFunc(fs, func(x operation.Fact) bool { return x.Kind == s.kind })
	if fail {
		s.n--
	}
	s.mu.Unlock()
	if fail {
		return op, problem.Wrap(problem.Unavailable, errors.New("ThrottlingException: rate exceeded"), "A dependency is unavailable.")
	}
	return s.Store.Append(ctx, op, fs...)
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

// Cancellation before dispatch, through the API: canceled at once; the record then starts
// nothing.
func TestCancelBeforeDispatchStartsNothing(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	if op := f.cancel(id); op.State != operation.Canceled {
		t.Fatalf("the API cancels an accepted operation at once, not %s", op.State)
	}
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if len(f.exec.Executions()) != 0 || f.load(id).State != operation.Canceled {
		t.Fatalf("state %s, executions %d", f.load(id).State, len(f.exec.Executions()))
	}
}

// Cancellation lands between StartExecution and the dispatched fact, before the worker
// started: the API cancels at once, the dispatcher loses the append, re-reads, finds canceled
// and stops the execution it started (whose worker would find canceled and do nothing).
func TestCancelRacingDispatch(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.accepted()
		f.exec.AfterStart = func(string) error { f.cancel(id); return nil }
		if err := f.d.Dispatch(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		ex := f.exec.Executions()[id]
		if op := f.load(id); op.State != operation.Canceled || !ex.Stopped {
			t.Fatalf("state %s stopped %v", op.State, ex.Stopped)
		}
	})
}

// A cancel_requested fact straight after accepted, with nothing started, is a history the API
// never writes (it writes canceled with it) but another writer may have: the record then
// records canceled and starts nothing.
func TestBareCancelIntentBeforeDispatchCancels(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	if _, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindCancelRequested, At: time.Now(), Source: operation.SourceClient}); err != nil {
		t.Fatal(err)
	}
	if resp := f.redeliver(id, "100"); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	if op := f.load(id); op.State != operation.Canceled || len(f.exec.Executions()) != 0 {
		t.Fatalf("%s, %d executions: %s", op.State, len(f.exec.Executions()), f.history(id))
	}
}

// Issue #12, lifecycle defect 1: a redelivered stream record cancels work that is already
// running. The dispatcher starts the execution, then its dispatched append fails (throttled);
// the worker's first step appends started, so the operation is running with no execution
// recorded; the client cancels (cancelling); the record is redelivered while the step is in
// flight. The dispatcher must leave started work alone: no canceled fact (it would free the
// target lock and the quota slot mid-step and refuse the step's result), no StopExecution, no
// failed record. The step's success is recorded as what happened.
func TestRedeliveryAfterAFailedDispatchedAppendLeavesRunningWorkAlone(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		id := f.accepted()
		if err := f.dispatcherOn(&failingAppend{Store: f.store, kind: operation.KindDispatched, n: 1}).Dispatch(ctx, id); err == nil {
			t.Fatal("the dispatched append was to fail")
		}
		if op := f.load(id); len(f.exec.Executions()) != 1 || op.State != operation.Accepted {
			t.Fatalf("after the failed append: %d executions, %s", len(f.exec.Executions()), op.State)
		}
		var redelivered events.DynamoDBEventResponse
		f.runStep(id, func() {
			if op := f.cancel(id); op.State != operation.Cancelling {
				t.Errorf("cancel during the first step: %s", op.State)
			}
			redelivered = f.redeliver(id, "100")
		}, `{"status":"succeeded","result":{"done":true}}`)
		if len(redelivered.BatchItemFailures) != 0 || len(f.dlq.got) != 0 {
			t.Errorf("the redelivered record failed: %+v, dead letters %+v", redelivered.BatchItemFailures, f.dlq.got)
		}
		if f.exec.Executions()[id].Stopped {
			t.Error("the dispatcher stopped the execution while its step was in flight")
		}
		if op := f.load(id); op.State != operation.Succeeded {
			t.Fatalf("the step succeeded, but the operation is %s: %s", op.State, f.history(id))
		}
	})
}

// Issue #12, lifecycle defect 1, on the first delivery: StartExecution succeeds, the worker's
// first step starts and the client cancels before the dispatched append, which then loses to
// them. The dispatcher's re-read finds the work started and cancelling: it records nothing and
// stops nothing (before the fix it recorded canceled and called StopExecution mid-step).
func TestCancelAfterTheWorkerStartedDuringDispatchStopsNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		id := f.accepted()
		began, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var first recorder.Decision
		f.exec.AfterStart = func(string) error {
			go func() {
				defer close(done)
				first = f.record(recorder.Input{OperationID: id}) // started: the step is in flight
				close(began)
				<-release
			}()
			<-began
			if op := f.cancel(id); op.State != operation.Cancelling {
				t.Errorf("cancel during the first step: %s", op.State)
			}
			return nil
		}
		err := f.d.Dispatch(ctx, id)
		close(release)
		<-done
		if err != nil || first.Next != recorder.NextWork {
			t.Fatalf("dispatch: %v, first step: %+v", err, first)
		}
		if f.exec.Executions()[id].Stopped {
			t.Error("the dispatcher stopped the execution while its step was in flight")
		}
		if op := f.load(id); op.State != operation.Cancelling {
			t.Errorf("while the step runs the operation must stay cancelling, not %s: %s", op.State, f.history(id))
		}
		f.record(recorder.Input{Gate: &recorder.Gate{Decision: &first}, Task: &recorder.Task{Report: json.RawMessage(`{"status":"succeeded"}`)}})
		if op := f.load(id); op.State != operation.Succeeded {
			t.Fatalf("the step succeeded, but the operation is %s: %s", op.State, f.history(id))
		}
	})
}

// Issue #12, lifecycle defect 1, from outcome_unknown: as above, but the step fails after its
// effect (the worker process dies), so the recorder records outcome_unknown. The record,
// redelivered after that, has nothing to do; before the fix it tried to append canceled, got
// an illegal transition, and was retried as transient until it reached the dead-letter queue,
// holding up its shard.
func TestRedeliveryAfterAnUnknownOutcomeIsDoneWith(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		id := f.accepted()
		if err := f.dispatcherOn(&failingAppend{Store: f.store, kind: operation.KindDispatched, n: 1}).Dispatch(ctx, id); err == nil {
			t.Fatal("the dispatched append was to fail")
		}
		f.runStep(id, func() { f.cancel(id) }, "") // the process died after acting
		before := f.load(id)
		if before.State != operation.OutcomeUnknown {
			t.Fatalf("setup: %s: %s", before.State, f.history(id))
		}
		if resp := f.redeliver(id, "100"); len(resp.BatchItemFailures) != 0 || len(f.dlq.got) != 0 {
			t.Fatalf("the redelivered record failed: %+v, dead letters %+v", resp.BatchItemFailures, f.dlq.got)
		}
		if op := f.load(id); op.State != operation.OutcomeUnknown || op.Version != before.Version || f.exec.Executions()[id].Stopped {
			t.Fatalf("%s v%d (was v%d), stopped %v: %s", op.State, op.Version, before.Version, f.exec.Executions()[id].Stopped, f.history(id))
		}
	})
}

// Issue #12: a record whose operation's stored history is not a legal one (an illegal
// transition, a gap) can never be dispatched, however often it is retried: it is poison, so
// it goes to the dead-letter queue instead of being reported failed and blocking its shard.
// A history the projection counts (its version moved past its snapshot's) is folded when
// read, and refused before an execution starts; a fact the projection does not count is
// invisible to a read of the projection, and met by the dispatcher's own append, after it
// started the execution.
func TestPoisonHistoriesAreDeadLetteredNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		kind    operation.Kind
		counted bool // the projection's version moved to the planted fact's
	}{
		{"illegal transition: accepted twice", 2, operation.KindAccepted, true},
		{"malformed: a gap before version 3", 3, operation.KindDispatched, true},
		{"a fact the projection does not count", 2, operation.KindAccepted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.accepted()
			f.putFact(id, tc.version, tc.kind)
			if tc.counted {
				f.countFact(id, tc.version)
			}
			resp := f.redeliver(id, "100")
			if len(resp.BatchItemFailures) != 0 {
				t.Errorf("reported as transient: %+v", resp.BatchItemFailures)
			}
			if len(f.dlq.got) != 1 || f.dlq.got[0].OperationID != id {
				t.Errorf("dead letters %+v", f.dlq.got)
			}
			if tc.counted && len(f.exec.Executions()) != 0 {
				t.Error("an execution was started for a broken history")
			}
		})
	}
}

// countFact moves the projection's version to version, as a writer that wrote facts around
// Append and updated the projection's version (not its snapshot) would.
func (f *fixture) countFact(id string, version int) {
	f.t.Helper()
	if _, err := f.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: &f.store.Table,
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "OP#" + id}, "sk": &types.AttributeValueMemberS{Value: "META"}},
		UpdateExpression: aws.String("SET version = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: fmt.Sprint(version)}},
	}); err != nil {
		f.t.Fatal(err)
	}
}

// putFact writes a fact item directly, bypassing Append's checks, as a bug or a manual edit
// would: a copy of the accepted fact's item, renumbered, with the kind changed.
func (f *fixture) putFact(id string, version int, kind operation.Kind) {
	f.t.Helper()
	ctx := context.Background()
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "OP#" + id}, "sk": &types.AttributeValueMemberS{Value: "FACT#00000001"}}
	out, err := f.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: &f.store.Table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		f.t.Fatalf("read the accepted fact: %v", err)
	}
	var fact operation.Fact
	if err := json.Unmarshal([]byte(out.Item["fact"].(*types.AttributeValueMemberS).Value), &fact); err != nil {
		f.t.Fatal(err)
	}
	fact.Version, fact.Kind = version, kind
	payload, _ := json.Marshal(fact)
	item := out.Item
	item["sk"] = &types.AttributeValueMemberS{Value: fmt.Sprintf("FACT#%08d", version)}
	item["version"] = &types.AttributeValueMemberN{Value: fmt.Sprint(version)}
	item["kind"] = &types.AttributeValueMemberS{Value: string(kind)}
	item["fact"] = &types.AttributeValueMemberS{Value: string(payload)}
	if _, err := f.raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: &f.store.Table, Item: item}); err != nil {
		f.t.Fatal(err)
	}
}

// The worker may report before the dispatcher's fact commits; dispatch then has nothing to add,
// and reports how long the operation waited all the same.
func TestWorkerStartedFirst(t *testing.T) {
	eachStore(t, testWorkerStartedFirst)
}

func testWorkerStartedFirst(t *testing.T, f *fixture) {
	buf := withMetrics(t, f)
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
	if lag := points(t, buf, "DispatchLag"); len(lag) != 1 || lag[0].Dims["Type"] != f.load(id).Type {
		t.Fatalf("DispatchLag %+v\n%s", lag, buf)
	}
	if err := f.d.Dispatch(context.Background(), id); err != nil { // a redelivery: started nothing
		t.Fatal(err)
	}
	if lag := points(t, buf, "DispatchLag"); len(lag) != 1 {
		t.Fatalf("a redelivery reported DispatchLag: %+v", lag)
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

// Issue #20, item 9: during a rolling update of the types file, a dispatcher that does not
// serve a type yet meets operations that a newer API admitted. It must not fail them: it
// leaves the operation accepted, and is done with the stream record (no retry holding up
// the shard, no dead letter), so that a dispatcher serving the type dispatches it later (the
// reconciler, once the operation is due). So does one that serves the type again after a
// rollback.
func TestAnUnknownTypeIsLeftForAFunctionThatServesIt(t *testing.T) {
	f := newFixture(t)
	id := f.accepted()
	export, _ := optype.Builtin().Lookup("export.orders")
	f.d.Registry = optype.NewRegistry(export) // an older dispatcher: demo.task is not served yet
	if resp := f.redeliver(id, "1"); len(resp.BatchItemFailures) != 0 || len(f.dlq.got) != 0 {
		t.Fatalf("the record failed or went to the dead-letter queue: %+v, %+v", resp.BatchItemFailures, f.dlq.got)
	}
	if err := f.d.Dispatch(context.Background(), id); !errors.Is(err, dispatch.ErrUnknownType) {
		t.Fatalf("Dispatch: %v; want ErrUnknownType", err)
	}
	if op := f.load(id); op.State != operation.Accepted || op.Version != 1 || len(f.exec.Executions()) != 0 {
		t.Fatalf("%s v%d, %d executions (%s); want it left accepted, nothing started", op.State, op.Version, len(f.exec.Executions()), f.history(id))
	}
	f.d.Registry = optype.Builtin() // the update reached the dispatcher
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if op := f.load(id); op.State != operation.Dispatched || len(f.exec.Executions()) != 1 {
		t.Fatalf("%s, %d executions; want it dispatched once a dispatcher serves its type", op.State, len(f.exec.Executions()))
	}
}

// An operation whose type no dispatcher took up is failed only once no function that serves
// the type could still run it: after its deadline and the cancel lease after it. Then it is
// failed (unsupported_operation_type), not outcome_unknown: no step ran.
func TestAnUnknownTypeFailsOnlyPastItsDeadline(t *testing.T) {
	export, _ := optype.Builtin().Lookup("export.orders")
	cancel := operation.DefaultLeases().Cancel
	for _, tc := range []struct {
		name  string
		after time.Duration // after the operation's deadline
		want  operation.State
	}{
		{"within the cancel lease after the deadline", cancel - time.Minute, operation.Accepted},
		{"past the deadline and the cancel lease", cancel + time.Second, operation.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.accepted()
			deadline := f.load(id).Deadline
			f.d.Registry = optype.NewRegistry(export)
			f.d.Now = func() time.Time { return deadline.Add(tc.after) }
			if resp := f.redeliver(id, "1"); len(resp.BatchItemFailures) != 0 || len(f.dlq.got) != 0 {
				t.Fatalf("the record failed or went to the dead-letter queue: %+v, %+v", resp.BatchItemFailures, f.dlq.got)
			}
			op := f.load(id)
			if op.State != tc.want || len(f.exec.Executions()) != 0 {
				t.Fatalf("%s %+v, %d executions; want %s, nothing started", op.State, op.Problem, len(f.exec.Executions()), tc.want)
			}
			if tc.want == operation.Failed && (op.Problem == nil || op.Problem.Code != "unsupported_operation_type" || !strings.Contains(op.Problem.Detail, "no step ran")) {
				t.Fatalf("problem %+v; want unsupported_operation_type saying that no step ran", op.Problem)
			}
		})
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

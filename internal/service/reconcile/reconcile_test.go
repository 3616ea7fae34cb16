package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
	"github.com/longrun-dev/longrun/internal/service/recorder"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
	"github.com/longrun-dev/longrun/internal/testkit/fakeexecutor"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time                  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration)         { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }
func (c *clock) Set(t time.Time)                 { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }
func (c *clock) since(t time.Time) time.Duration { return c.Now().Sub(t) }

var leases = operation.Leases{Dispatch: 10 * time.Second, Check: 20 * time.Second, Cancel: 15 * time.Second, Deadline: 10 * time.Minute}

type fixture struct {
	t     *testing.T
	store *dynamo.Store
	exec  *fakeexecutor.Executor
	clock *clock
	r     *reconcile.Reconciler
	admit *dynamotest.Admitter
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
	store.Leases = leases
	c := &clock{t: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	f := &fixture{t: t, store: store, exec: &fakeexecutor.Executor{}, clock: c, admit: dynamotest.NewAdmitter(store, c.Now)}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	d, err := dispatch.New(dispatch.Dispatcher{Store: store, Executor: f.exec, Registry: optype.Builtin(), DeadLetters: noLetters{},
		Now: c.Now, Log: log, Accepted: dynamo.OutboxOperation})
	if err != nil {
		t.Fatal(err)
	}
	f.r = &reconcile.Reconciler{Store: store, Executions: f.exec, Dispatcher: d, Registry: optype.Builtin(), Leases: leases,
		Now: c.Now, Log: log, MaxPerRun: 50, Seals: testSealer(t)}
	return f
}

func testSealer(t *testing.T) *seal.Sealer {
	t.Helper()
	s, err := seal.New([]byte(strings.Repeat("test-key/", 4)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// finish ends execution name with output sealed as the recorder seals what it hands the
// workflow: the Run's answer (gate.decision), or, for a caught Run, the execution's input.
// Outputs that are not the workflow's state are kept as they are.
func (f *fixture) finish(name string, status reconcile.Status, output []byte) {
	f.t.Helper()
	var in recorder.Input
	if len(output) > 0 && json.Unmarshal(output, &in) == nil && in.OperationID != "" {
		var err error
		switch {
		case in.RecordError != nil && (in.Gate != nil || in.Continuation > 0):
			caught := in.RecordError
			in.RecordError = nil
			in, err = recorder.SealInput(f.r.Seals, in)
			in.RecordError = caught
		case in.Gate != nil && in.Gate.Decision != nil:
			var d recorder.Decision
			d, err = recorder.SealDecision(f.r.Seals, in.OperationID, *in.Gate.Decision)
			in.Gate.Decision = &d
		}
		if err != nil {
			f.t.Fatal(err)
		}
		if output, err = json.Marshal(in); err != nil {
			f.t.Fatal(err)
		}
	}
	f.exec.Finish(name, status, output)
}

// noLetters refuses dead letters: the reconciler dispatches by id, never from a stream
// record, so nothing it does may produce one.
type noLetters struct{}

func (noLetters) Send(context.Context, dispatch.DeadLetter) error {
	return errors.New("the reconciler sent a dead letter")
}

func (f *fixture) accepted() string { return f.admit.Admit(f.t, "") }

func (f *fixture) append(id string, kinds ...operation.Kind) {
	f.t.Helper()
	op := f.load(id)
	var fs []operation.Fact
	for _, k := range kinds {
		fs = append(fs, operation.Fact{Kind: k, At: f.clock.Now(), Source: operation.SourceExecutor})
	}
	if _, err := f.store.Append(context.Background(), op, fs...); err != nil {
		f.t.Fatal(err)
	}
}

// pastDeadline runs the reconciler as the clock goes past id's deadline, and once more
// past any backoff.
func (f *fixture) pastDeadline(id string) {
	f.t.Helper()
	created := f.load(id).CreatedAt
	for f.clock.since(created) <= leases.Deadline {
		f.clock.Advance(leases.Check * 4)
		f.run()
	}
	f.clock.Advance(time.Hour)
	f.run()
}

func (f *fixture) load(id string) operation.Operation { return dynamotest.Load(f.t, f.store, id) }

func (f *fixture) run() reconcile.Summary {
	f.t.Helper()
	sum, err := f.r.Run(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return sum
}

// started makes an operation dispatched (with an execution in the fake) and optionally running.
func (f *fixture) started(running bool) string {
	id := f.accepted()
	if _, err := f.exec.Start(context.Background(), "demo-task", id, nil); err != nil {
		f.t.Fatal(err)
	}
	f.append(id, operation.KindDispatched)
	if running {
		f.append(id, operation.KindStarted)
	}
	return id
}

func TestAcceptedIsDispatchedOnceWhenDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.accepted()
	if sum := f.run(); sum.Examined != 0 {
		t.Fatalf("not due yet, but examined: %+v", sum)
	}
	f.clock.Advance(leases.Dispatch + time.Second)
	if sum := f.run(); sum.Dispatched != 1 {
		t.Fatalf("%+v", sum)
	}
	if sum := f.run(); sum.Examined != 0 {
		t.Fatalf("a dispatched operation is due only after the check lease: %+v", sum)
	}
	if op := f.load(id); op.State != operation.Dispatched || len(f.exec.Executions()) != 1 {
		t.Fatalf("%s, %d executions", op.State, len(f.exec.Executions()))
	}
}

func TestHealthyRunningIsLeftAloneAndBacksOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	f.clock.Advance(leases.Check + time.Second)
	if sum := f.run(); sum.Rescheduled != 1 {
		t.Fatalf("%+v", sum)
	}
	// The next look is pushed out by the backoff (twice the check lease after one attempt).
	f.clock.Advance(leases.Check + time.Second)
	if sum := f.run(); sum.Examined != 0 {
		t.Fatalf("examined before its backoff: %+v", sum)
	}
	f.clock.Advance(2 * leases.Check)
	if sum := f.run(); sum.Rescheduled != 1 {
		t.Fatalf("%+v", sum)
	}
	if op := f.load(id); op.State != operation.Running {
		t.Fatalf("%s", op.State)
	}
}

// An execution stopped behind the system's back is noticed and recorded: work that never
// started failed without effect; work in progress has an unknown outcome.
func TestExecutionEndedWithoutOutcome(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	notStarted, inProgress := f.started(false), f.started(true)
	for _, id := range []string{notStarted, inProgress} {
		f.exec.Finish(id, reconcile.Aborted, nil)
	}
	f.clock.Advance(leases.Check + time.Second)
	if sum := f.run(); sum.Recorded != 2 {
		t.Fatalf("%+v", sum)
	}
	if op := f.load(notStarted); op.State != operation.Failed || op.Problem.Code != "execution_ended" {
		t.Fatalf("not started: %s %+v", op.State, op.Problem)
	}
	if op := f.load(inProgress); op.State != operation.OutcomeUnknown || op.Problem.Code != "execution_ended" {
		t.Fatalf("in progress: %s %+v", op.State, op.Problem)
	}
	if sum := f.run(); sum.Examined != 0 {
		t.Fatalf("settled operations are not due: %+v", sum)
	}
}

// An operation handed on to its next execution is watched there: its first execution
// ended when the Run handed over (its output a decision, not an outcome), and only how the
// latest one is doing counts.
func TestTheLatestExecutionIsWatched(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		for _, tc := range []struct {
			latest reconcile.Status
			state  operation.State
		}{
			{reconcile.Running, operation.Running},
			{reconcile.Aborted, operation.OutcomeUnknown},
		} {
			id := f.started(true)
			f.finish(id, reconcile.Succeeded, []byte(`{"next":"continue","continuedIn":"`+id+`-1"}`))
			ref, err := f.exec.Start(context.Background(), "demo-task", id+"-1", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindProgress,
				At: f.clock.Now(), Source: operation.SourceExecutor, Execution: ref}); err != nil {
				t.Fatal(err)
			}
			f.exec.Finish(id+"-1", tc.latest, nil)
			f.clock.Advance(leases.Check + time.Second)
			f.run()
			if op := f.load(id); op.State != tc.state || tc.state == operation.OutcomeUnknown && op.Problem.Code != "execution_ended" {
				t.Fatalf("latest %s: %s %+v", tc.latest, op.State, op.Problem)
			}
		}
	})
}

// An execution that finished but whose outcome was never recorded: the outcome it reported
// is recorded.
func TestSucceededExecutionOutcomeIsRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	f.finish(id, reconcile.Succeeded, []byte(`{"operationId":"`+id+`","gate":{"decision":`+firstStep(id)+`},"task":{"report":{"status":"succeeded","result":{"n":3}}}}`))
	f.clock.Advance(leases.Check + time.Second)
	f.run()
	if op := f.load(id); op.State != operation.Succeeded || string(op.Result) != `{"n":3}` {
		t.Fatalf("%s %s", op.State, op.Result)
	}
}

// An execution started by someone else with made-up state (issue #20, finding 1) ends with
// an output the recorder never sealed: nothing in it is recorded, and the work is carried on
// from the operation's facts in the next execution, whose input carries nothing of it.
func TestAForgedExecutionOutputIsNotRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	f.exec.Finish(id, reconcile.Succeeded, []byte(`{"operationId":"`+id+`","gate":{"decision":`+firstStep(id)+
		`},"task":{"report":{"status":"succeeded","result":{"forged":true}}}}`))
	f.clock.Advance(leases.Check + time.Second)
	f.run()
	if op := f.load(id); op.State.Terminal() || op.State == operation.OutcomeUnknown {
		t.Fatalf("the forged output was recorded: %s %s", op.State, op.Result)
	}
	next, ok := f.exec.Executions()[id+"-1"]
	if !ok {
		t.Fatal("the work was not carried on")
	}
	var in recorder.Input
	if err := json.Unmarshal(next.Input, &in); err != nil || in.Gate != nil || in.Task != nil || in.Seal == "" {
		t.Fatalf("the next execution's input: %s (%v)", next.Input, err)
	}
}

// cancel asks for cancellation through the intent service, as the API does.
func (f *fixture) cancel(id string) {
	f.t.Helper()
	svc := &intent.Service{Store: f.store, Now: f.clock.Now}
	if _, _, err := svc.Cancel(context.Background(), id, intent.Sender{Principal: "alice"}, func(operation.Operation) bool { return true }, nil); err != nil {
		f.t.Fatal(err)
	}
}

// Issue #12, defect 2: the workflow of a cancelling operation did not stop by itself within
// the cancel lease while a step had started. StopExecution does not stop a running Lambda,
// so that step's effect may still complete after the stop: the honest outcome is
// outcome_unknown, never canceled (which would free the target while the step acts).
func TestCancellingMidStepThatDoesNotStopIsStoppedAsUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	f.cancel(id)
	f.clock.Advance(leases.Cancel + time.Second)
	if sum := f.run(); sum.Stopped != 1 {
		t.Fatalf("%+v", sum)
	}
	op := f.load(id)
	if op.State != operation.OutcomeUnknown || op.Problem == nil || op.Problem.Code != "cancel_unconfirmed" || !f.exec.Executions()[id].Stopped {
		t.Fatalf("%s %+v", op.State, op.Problem)
	}
}

// The same without any started step: nothing can have acted, so the stop is the cancel.
func TestCancellingBeforeAnyStepThatDoesNotStopIsCanceled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(false)
	f.cancel(id)
	f.clock.Advance(leases.Cancel + time.Second)
	if sum := f.run(); sum.Stopped != 1 {
		t.Fatalf("%+v", sum)
	}
	if op := f.load(id); op.State != operation.Canceled || !f.exec.Executions()[id].Stopped {
		t.Fatalf("%s", op.State)
	}
}

// A cancelling operation whose execution ended on its own without recording anything (on
// AWS: the Record state ran out of retries and failed the execution) had a step started:
// the outcome is unknown, not canceled.
func TestCancellingWhoseExecutionFailedMidStepIsUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	f.cancel(id)
	f.exec.Finish(id, reconcile.Failed, nil)
	f.clock.Advance(leases.Cancel + time.Second)
	f.run()
	if op := f.load(id); op.State != operation.OutcomeUnknown {
		t.Fatalf("%s %+v", op.State, op.Problem)
	}
}

// Issue #12, defect 5 (the reconciler's half): a dispatched operation that never started a
// step and is stopped at its deadline provably did nothing: failed, not outcome_unknown.
func TestDeadlineStopOfWorkThatNeverStartedIsFailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(false)
	f.pastDeadline(id)
	op := f.load(id)
	if op.State != operation.Failed || op.Problem == nil || op.Problem.Code != "deadline_exceeded" || !f.exec.Executions()[id].Stopped {
		t.Fatalf("%s %+v", op.State, op.Problem)
	}
}

// Every run counts the operations waiting for an operator, for the alarm on their number.
func TestRunCountsUnknownOutcomes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	f.exec.Finish(id, reconcile.Aborted, nil)
	f.clock.Advance(leases.Check + time.Second)
	if sum := f.run(); sum.OutcomeUnknown != 1 {
		t.Fatalf("%+v", sum)
	}
	if sum := f.run(); sum.OutcomeUnknown != 1 || sum.Examined != 0 {
		t.Fatalf("a second run: %+v", sum)
	}
}

func TestStuckPastDeadlineIsStoppedAsUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	f.pastDeadline(id)
	op := f.load(id)
	if op.State != operation.OutcomeUnknown || op.Problem.Code != "deadline_exceeded" || !f.exec.Executions()[id].Stopped {
		t.Fatalf("%s %+v", op.State, op.Problem)
	}
}

func TestWorkPerRunIsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range 5 {
		f.accepted()
	}
	f.r.MaxPerRun = 2
	f.clock.Advance(leases.Dispatch + time.Second)
	if sum := f.run(); sum.Examined != 2 {
		t.Fatalf("%+v", sum)
	}
	f.run()
	f.run()
	if n := len(f.exec.Executions()); n != 5 {
		t.Fatalf("%d executions after three runs", n)
	}
}

// awsEndWhenRecordFails is how Step Functions ends an execution whose recorder could not
// record how a step ended, by the workflow's own definition: the Run answers unrecorded with
// the step's end in its decision, and the state it leads to, when it ends the execution (End,
// or a Succeed state), ends it SUCCEEDED with the workflow's state as output; otherwise the
// execution FAILED, and DescribeExecution returns no output for a failed execution.
func awsEndWhenRecordFails(t *testing.T, id, report string) (reconcile.Status, []byte) {
	t.Helper()
	var asl struct {
		States map[string]struct {
			Type string
			End  bool
		}
	}
	if err := json.Unmarshal([]byte(stepfunctions.Template()), &asl); err != nil {
		t.Fatal(err)
	}
	path, err := stepfunctions.Path("unrecorded")
	if err != nil {
		t.Fatal(err)
	}
	if last := asl.States[path[len(path)-1]]; last.Type != "Succeed" && !(last.Type == "Task" && last.End) {
		return reconcile.Failed, nil
	}
	var req map[string]any
	if err := json.Unmarshal([]byte(firstStep(id)), &req); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(map[string]any{"operationId": id, "gate": map[string]any{"decision": map[string]any{
		"next": "unrecorded", "request": req["request"], "task": map[string]any{"report": json.RawMessage(report)}}}})
	return reconcile.Succeeded, out
}

// Issue #12, defect 3: the recorder fails until its retries run out on AWS. The outcome the
// worker reported must still be recorded, as what happened, by the reconciler: a success
// stays a success, and a cancel the worker honoured stays canceled, never outcome_unknown.
func TestKnownOutcomeSurvivesARecorderThatKeepsFailing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, report string
		cancel       bool
		want         operation.State
	}{
		{"success", `{"status":"succeeded","result":{"n":3}}`, false, operation.Succeeded},
		{"cancel honoured", `{"status":"continue"}`, true, operation.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.started(true)
			if tc.cancel {
				f.cancel(id)
			}
			status, output := awsEndWhenRecordFails(t, id, tc.report)
			f.finish(id, status, output)
			f.clock.Advance(leases.Cancel + leases.Check + time.Second)
			f.run()
			if op := f.load(id); op.State != tc.want {
				t.Fatalf("%s %+v, want %s", op.State, op.Problem, tc.want)
			}
		})
	}
}

// The run's log lines are what the stack's alarms read (construct/alarms.go): an operation
// recorded outcome_unknown, and the count of those waiting for an operator.
func TestLogLinesTheAlarmsRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var buf bytes.Buffer
	f.r.Log = slog.New(lambdalog.New(&buf, "longrun-reconciler", slog.LevelInfo)) // as the function logs
	id := f.started(true)
	f.exec.Finish(id, reconcile.Aborted, nil)
	f.clock.Advance(leases.Check + time.Second)
	f.run()
	var recorded, run bool
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		switch l["message"] {
		case "reconciled":
			recorded = recorded || (l["operation_id"] == id && l["outcome"] == "outcome_unknown" && l["state"] == "outcome_unknown")
		case "run":
			run = run || l["outcome_unknown"] == float64(1)
		}
	}
	if !recorded || !run {
		t.Fatalf("log lines:\n%s", buf.String())
	}
}

// firstStep is the recorder's decision that sent step 1 of id to its worker, as the
// workflow keeps it.
func firstStep(id string) string {
	return `{"next":"work","stepTimeoutSeconds":60,"request":{"protocol":"longrun.step.v1","operationId":"` + id +
		`","type":"demo.task","version":1,"input":{"target":"t"},"step":1,"maxSteps":20,"deadline":"2030-01-01T00:00:00.000Z","stepTimeoutSeconds":60}}`
}

// The line about each operation carries its operation and correlation ids.
func TestReconciledLineCarriesTheCorrelationID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var buf bytes.Buffer
	f.r.Log = slog.New(lambdalog.New(&buf, "longrun-reconciler", slog.LevelInfo))
	id := f.admit.AdmitCorrelated(t, "", "corr-reconcile")
	f.clock.Advance(leases.Dispatch + time.Second)
	if sum := f.run(); sum.Dispatched != 1 {
		t.Fatalf("%+v", sum)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		switch l["message"] {
		case "reconciled":
			found = l["operation_id"] == id && l["correlation_id"] == "corr-reconcile" && l["action"] == "dispatched"
		case "run":
			if _, ok := l["correlation_id"]; ok {
				t.Errorf("the run's line is about no one operation: %v", l)
			}
		}
	}
	if !found {
		t.Fatalf("no reconciled line with the operation's ids:\n%s", buf.String())
	}
}

// executionInput is what the fake executor was given to start name with, decoded.
func (f *fixture) executionInput(name string) (recorder.Input, bool) {
	f.t.Helper()
	ex, ok := f.exec.Executions()[name]
	if !ok {
		return recorder.Input{}, false
	}
	var in recorder.Input
	if err := json.Unmarshal(ex.Input, &in); err != nil {
		f.t.Fatal(err)
	}
	return in, true
}

// Throttling only delays: when the workflow caught a Run that kept failing, the recorder's
// own throttling included, and no step's outcome waits to be recorded, nothing is in
// flight. The reconciler carries the work on in the operation's next execution, from the
// state the last one held: a step that asked to continue goes on, and a Run that never ran
// starts over, rather than failing accepted work or calling its outcome unknown.
func TestACaughtRunIsCarriedOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, output string
		step         int // the step the carried-on execution's state was for
	}{
		{"the recorder was throttled before the first step",
			`{"operationId":"ID","recordError":{"Error":"Lambda.TooManyRequestsException","Cause":"Rate Exceeded."}}`, 0},
		{"a step asked to continue and its report could not be recorded", "", 1},
		{"the worker was refused and the refusal could not be handled",
			`{"operationId":"ID","gate":{"decision":FIRST},"error":{"Error":"Lambda.TooManyRequestsException","Cause":"Rate Exceeded."},"recordError":{"Error":"States.TaskFailed","Cause":"table unavailable"}}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.started(true)
			output := []byte(strings.NewReplacer("ID", id, "FIRST", firstStep(id)).Replace(tc.output))
			if tc.output == "" {
				_, output = awsEndWhenRecordFails(t, id, `{"status":"continue","state":{"cursor":7}}`)
			}
			f.finish(id, reconcile.Succeeded, output)
			f.clock.Advance(leases.Check + time.Second)
			if sum := f.run(); sum.Continued != 1 {
				t.Fatalf("%+v; want the work carried on", sum)
			}
			if op := f.load(id); op.State != operation.Running {
				t.Fatalf("%s %+v; want still running", op.State, op.Problem)
			}
			in, ok := f.executionInput(id + "-1")
			if !ok || in.OperationID != id || in.Continuation != 1 {
				t.Fatalf("carried on in %+v (%v); want %s-1", in, ok, id)
			}
			if tc.step > 0 && (in.Gate == nil || in.Gate.Decision.Request == nil || in.Gate.Decision.Request.Step != tc.step) {
				t.Fatalf("the state handed on is not step %d's: %+v", tc.step, in.Gate)
			}
			// A second look starts nothing new.
			f.clock.Advance(time.Hour)
			starts := f.exec.Starts()
			f.run()
			if f.exec.Starts() > starts+1 || len(f.exec.Executions()) != 2 {
				t.Fatalf("%d executions after a second look", len(f.exec.Executions()))
			}
		})
	}
}

// The next execution a Run could not start (Step Functions refused it) is in its
// execution's output: the reconciler starts it, on the state machine it was for.
func TestAPendingContinuationIsStarted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	out := `{"operationId":"` + id + `","gate":{"decision":{"next":"wait","waitSeconds":20,"request":{"operationId":"` + id +
		`","step":2,"state":{"n":1}},"pending":{"operationId":"` + id + `","continuation":1,"gate":{"decision":{"next":"wait","waitSeconds":20,"request":{"operationId":"` +
		id + `","step":2,"state":{"n":1}}}}}}}}`
	f.finish(id, reconcile.Succeeded, []byte(out))
	f.clock.Advance(leases.Check + time.Second)
	if sum := f.run(); sum.Continued != 1 {
		t.Fatalf("%+v", sum)
	}
	ex, ok := f.exec.Executions()[id+"-1"]
	if !ok || ex.Workflow != "demo-task-resume" {
		t.Fatalf("started %+v; want %s-1 on the resume state machine", ex, id)
	}
	in, _ := f.executionInput(id + "-1")
	if string(in.Gate.Decision.Request.State) != `{"n":1}` || f.load(id).State != operation.Running {
		t.Fatalf("handed %+v", in.Gate.Decision.Request)
	}
}

// leased appends a progress fact from the Run run of id's first execution, holding the
// lease of a step until until (the zero time: releasing it).
func (f *fixture) leased(id, run string, until time.Time) {
	f.t.Helper()
	fact := operation.Fact{Kind: operation.KindProgress, At: f.clock.Now(), Source: operation.SourceExecutor}
	if !until.IsZero() {
		fact.Lease = &operation.Lease{Run: run, Execution: id, Until: until}
	}
	if _, err := f.store.Append(context.Background(), f.load(id), fact); err != nil {
		f.t.Fatal(err)
	}
}

// idle makes a running operation whose Run took a lease for a step and released it: work
// has started, and no step is in flight.
func (f *fixture) idle() string {
	f.t.Helper()
	id := f.started(true)
	f.leased(id, "run-1", f.clock.Now().Add(time.Minute))
	f.leased(id, "run-1", time.Time{})
	return id
}

// While a Run holds the lease of a step it invoked, the reconciler decides nothing about
// an execution that ended without recording the step's end: the workflow gave up on a
// retry it made while that Run ran, and the Run will record the end. Once the lease runs
// out with nobody to record it, the work is carried on.
func TestNothingIsDecidedWhileAStepIsLeased(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	f.leased(id, "run-1", f.clock.Now().Add(3*time.Minute))
	f.finish(id, reconcile.Succeeded, []byte(`{"operationId":"`+id+`","recordError":{"Error":"States.TaskFailed","Cause":"recorder: another Run has a step in flight"}}`))
	v := f.load(id).Version
	f.clock.Advance(leases.Check + time.Second)
	if sum := f.run(); sum.Recorded != 0 || sum.Continued != 0 || f.load(id).Version != v {
		t.Fatalf("%+v, v%d → v%d; want nothing decided while the lease holds", sum, v, f.load(id).Version)
	}
	f.clock.Advance(3 * time.Minute)
	if sum := f.run(); sum.Continued != 1 || f.load(id).State != operation.Running {
		t.Fatalf("%+v %s; want the work carried on once the lease ran out", sum, f.load(id).State)
	}
}

// A cancel, or the deadline, that the workflow did not act on is settled honestly when no
// step is in flight (the lease was released): canceled, or failed, never outcome_unknown,
// although work had started. While a step is leased it stays outcome_unknown.
func TestAStopWithNoStepInFlightIsKnown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		leased bool
		cancel bool
		want   operation.State
		code   string
	}{
		{"cancel, nothing in flight", false, true, operation.Canceled, ""},
		{"cancel, a step in flight", true, true, operation.OutcomeUnknown, "cancel_unconfirmed"},
		{"deadline, nothing in flight", false, false, operation.Failed, "deadline_exceeded"},
		{"deadline, a step in flight", true, false, operation.OutcomeUnknown, "deadline_exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.started(true)
			f.leased(id, "run-1", f.clock.Now().Add(24*time.Hour)) // the Run took a lease...
			if !tc.leased {
				f.leased(id, "run-1", time.Time{}) // ...and released it
			}
			if tc.cancel {
				f.cancel(id)
				f.clock.Advance(leases.Cancel + time.Second)
			} else {
				f.pastDeadline(id)
			}
			f.run()
			op := f.load(id)
			if op.State != tc.want || (tc.code != "" && (op.Problem == nil || op.Problem.Code != tc.code)) {
				t.Fatalf("%s %+v; want %s %s", op.State, op.Problem, tc.want, tc.code)
			}
			if ex := f.exec.Executions()[id]; !ex.Stopped {
				t.Fatal("the execution was not stopped")
			}
		})
	}
}

// An execution that ended without an outcome while no step was in flight failed the work
// plainly: nothing can have acted unseen, so its outcome is not unknown.
func TestAnEndWithNoStepInFlightIsNotUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.idle()
	f.exec.Finish(id, reconcile.Aborted, nil)
	f.clock.Advance(leases.Check + time.Second)
	f.run()
	if op := f.load(id); op.State != operation.Failed || op.Problem == nil || op.Problem.Code != "execution_ended" {
		t.Fatalf("%s %+v; want failed execution_ended", op.State, op.Problem)
	}
}

// A cancel during a wait is settled at once, however long the wait: the operation is due as
// soon as the cancel is recorded, nothing is in flight, so the reconciler stops the waiting
// execution and records canceled. Before the cancel, the waiting operation is not looked at.
func TestACancelDuringAWaitIsCanceledAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	until := f.clock.Now().Add(6 * time.Hour)
	f.leased(id, "run-1", f.clock.Now().Add(time.Minute))
	if _, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindProgress, At: f.clock.Now(),
		Source: operation.SourceExecutor, WaitingUntil: &until}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	if sum := f.run(); sum.Examined != 0 {
		t.Fatalf("a waiting operation was looked at: %+v", sum)
	}
	f.cancel(id)
	if sum := f.run(); sum.Stopped != 1 {
		t.Fatalf("%+v; want the waiting execution stopped at once", sum)
	}
	if op := f.load(id); op.State != operation.Canceled {
		t.Fatalf("%s %+v; want canceled", op.State, op.Problem)
	}
}

// An execution the reconciler started to carry the work on may itself end before it names
// itself (its Run throttled in its turn): the next look goes on from where it ended, in the
// execution after it, rather than finding it already there and doing nothing for ever.
func TestACarriedOnExecutionThatEndedUnnamedIsFollowed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.started(true)
	caught := func(k int) []byte {
		return []byte(fmt.Sprintf(`{"operationId":%q,"continuation":%d,"recordError":{"Error":"States.TaskFailed","Cause":"429"}}`, id, k))
	}
	f.finish(id, reconcile.Succeeded, caught(0))
	f.clock.Advance(leases.Check + time.Second)
	f.run()
	f.finish(id+"-1", reconcile.Succeeded, caught(1))
	f.clock.Advance(leases.Check + time.Second)
	if sum := f.run(); sum.Continued != 1 {
		t.Fatalf("%+v", sum)
	}
	in, ok := f.executionInput(id + "-2")
	if !ok || in.Continuation != 2 || f.load(id).State != operation.Running {
		t.Fatalf("carried on in %+v (%v); want %s-2, still running", in, ok, id)
	}
}

// serve makes the reconciler, and the dispatcher it dispatches with, serve only types: both
// take the deployment's types file, so during a rolling update both are old or both new.
func (f *fixture) serve(types *optype.Registry) {
	f.r.Registry = types
	f.r.Dispatcher.(*dispatch.Dispatcher).Registry = types
}

// older is the registry of a function from before demo.task was added (or after it was
// removed): it serves export.orders only.
func older() *optype.Registry {
	export, _ := optype.Builtin().Lookup("export.orders")
	return optype.NewRegistry(export)
}

// Issue #20, item 9: during a rolling update of the types file (or its rollback) an older
// reconciler meets operations of a type it does not serve, which a newer function admitted or
// started. It leaves each alone, whatever its state, looking again with the backoff of a
// healthy operation, and records nothing: no execution is started, stopped or judged. Once
// the update reaches it, the work goes on as if nothing had happened.
func TestAnUnknownTypeWaitsForAFunctionThatServesIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	accepted, dispatched, running := f.accepted(), f.started(false), f.started(true)
	leased := f.idle() // no step in flight
	ids := []string{accepted, dispatched, running, leased}
	versions := map[string]int{}
	for _, id := range ids {
		versions[id] = f.load(id).Version
	}
	f.serve(older())
	for range 5 {
		f.clock.Advance(leases.Check * 8)
		if sum := f.run(); sum.Recorded != 0 || sum.Dispatched != 0 || sum.Stopped != 0 || sum.Errors != 0 {
			t.Fatalf("%+v; want every operation of the unknown type left alone", sum)
		}
	}
	for _, id := range ids {
		if op := f.load(id); op.Version != versions[id] {
			t.Fatalf("%s: %s v%d → v%d %+v; want it left alone", id, op.State, versions[id], op.Version, op.Problem)
		}
	}
	if n := len(f.exec.Executions()); n != 3 {
		t.Fatalf("%d executions; want the three there were, none started", n)
	}
	if due, err := f.store.Due(context.Background(), f.clock.Now().Add(2*time.Hour), 100); err != nil || len(due) != 4 {
		t.Fatalf("%d due within the backoff (%v); want all four still watched", len(due), err)
	}

	f.serve(optype.Builtin())         // the update reached the reconciler
	f.clock.Advance(30 * time.Minute) // past every backoff, before the deadline
	if sum := f.run(); sum.Dispatched != 1 || sum.Rescheduled != 3 || sum.Recorded != 0 {
		t.Fatalf("%+v; want the accepted one dispatched and the others looked at as usual", sum)
	}
	if op := f.load(accepted); op.State != operation.Dispatched {
		t.Fatalf("%s; want dispatched", op.State)
	}
}

// Only once no function that serves the type could still run the work, after its deadline
// and the cancel lease after it, is an operation of a type nobody serves settled, as an
// execution that ended would be: failed (unsupported_operation_type) when no step may be in
// flight, which says whether any ran; outcome_unknown only when one may be (a history from
// before leases, once started). A step still leased is waited for.
func TestAnUnknownTypeIsSettledOnlyPastItsDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		setup  func(f *fixture) string
		want   operation.State
		detail string
	}{
		{"accepted", func(f *fixture) string { return f.accepted() }, operation.Failed, "no step ran"},
		{"dispatched, never started", func(f *fixture) string { return f.started(false) }, operation.Failed, "no step ran"},
		{"running, no step in flight", (*fixture).idle, operation.Failed, "none was in flight"},
		{"running, from before leases", func(f *fixture) string { return f.started(true) }, operation.OutcomeUnknown, "may have been in flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := tc.setup(f)
			f.serve(older())
			deadline := f.load(id).Deadline
			for f.clock.Now().Before(deadline.Add(leases.Cancel)) {
				// Five-minute steps until the last five minutes, then the lease's own: a
				// reconciler that settled too early is caught at its first run after the
				// mistake either way, still before the deadline, in 30 runs instead of 180.
				step := leases.Check
				if deadline.Sub(f.clock.Now()) > 5*time.Minute {
					step = 5 * time.Minute
				}
				f.clock.Advance(step)
				f.run()
				if op := f.load(id); f.clock.Now().Before(deadline.Add(leases.Cancel)) && (op.State.Terminal() || op.State == operation.OutcomeUnknown) {
					t.Fatalf("%s %+v at %s, before the deadline %s and the cancel lease", op.State, op.Problem, f.clock.Now(), deadline)
				}
			}
			f.clock.Advance(time.Hour)
			f.run()
			op := f.load(id)
			if op.State != tc.want || op.Problem == nil || op.Problem.Code != "unsupported_operation_type" || !strings.Contains(op.Problem.Detail, tc.detail) {
				t.Fatalf("%s %+v; want %s unsupported_operation_type saying %q", op.State, op.Problem, tc.want, tc.detail)
			}
			if ex, ok := f.exec.Executions()[id]; ok && ex.Stopped {
				t.Fatal("an execution was stopped without its type")
			}
		})
	}
	t.Run("a step still leased", func(t *testing.T) {
		f := newFixture(t)
		id := f.started(true)
		f.leased(id, "run-1", f.clock.Now().Add(3*time.Hour))
		f.serve(older())
		f.clock.Advance(2 * time.Hour)
		f.run()
		if op := f.load(id); op.State != operation.Running {
			t.Fatalf("%s %+v; want nothing decided while the lease holds", op.State, op.Problem)
		}
		f.clock.Advance(2 * time.Hour)
		f.run()
		if op := f.load(id); op.State != operation.Failed || op.Problem == nil || op.Problem.Code != "unsupported_operation_type" {
			t.Fatalf("%s %+v; want failed once the lease ran out with nothing in flight", op.State, op.Problem)
		}
	})
}

// A cancel of an operation whose type is not served is honoured at the reconciler's look
// after the cancel lease, as for any type, when no step is in flight: canceled, since
// nothing can act after it is recorded. It does not wait for the deadline.
func TestACancelOfAnUnknownTypeIsCanceled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.idle()
	f.serve(older())
	f.cancel(id)
	f.clock.Advance(leases.Cancel + time.Second)
	if sum := f.run(); sum.Recorded != 1 {
		t.Fatalf("%+v", sum)
	}
	if op := f.load(id); op.State != operation.Canceled {
		t.Fatalf("%s %+v; want canceled", op.State, op.Problem)
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	deadletters "github.com/longrun-dev/longrun/internal/aws/sqs"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
	"github.com/longrun-dev/longrun/internal/testkit/fakeexecutor"
)

// crashingExecutor wraps the real Step Functions adapter to die at a chosen point.
type crashingExecutor struct {
	dispatch.Executor
	beforeStart, afterStart bool
}

var errCrash = errors.New("the dispatcher process died here")

func (c crashingExecutor) Start(ctx context.Context, workflow, name string, input []byte) (string, error) {
	if c.beforeStart {
		return "", errCrash
	}
	ref, err := c.Executor.Start(ctx, workflow, name, input)
	if c.afterStart && err == nil {
		return "", errCrash // started, but the response (and the fact) is lost
	}
	return ref, err
}

func dispatcher(exec dispatch.Executor) *dispatch.Dispatcher {
	d, err := dispatch.New(dispatch.Dispatcher{Store: store(), Executor: exec, Registry: optype.Builtin(),
		DeadLetters: &deadletters.Queue{Client: stack.SQS, URL: stack.DeadLetterQueueURL},
		Now:         time.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Accepted: dynamo.OutboxOperation})
	if err != nil {
		panic(err)
	}
	return d
}

func realExecutor() *stepfunctions.Executor {
	return &stepfunctions.Executor{Client: stack.StepFunctions, StateMachines: stack.StateMachines}
}

// paused runs f with the stack's stream consumers held, then lets them deliver what waited.
func paused(t *testing.T, f func()) {
	t.Helper()
	stack.Pause()
	defer stack.Resume()
	time.Sleep(300 * time.Millisecond) // let a batch already in flight finish
	f()
}

func state(t *testing.T, id string) operation.Operation {
	t.Helper()
	op, err := store().Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// The dispatcher dies after the intent committed and before StartExecution: nothing runs,
// and the stream's redelivery starts the work exactly once.
func TestCrashAfterIntentBeforeDispatch(t *testing.T) {
	c := alice(t)
	var id string
	paused(t, func() {
		id = c.admit(`{"type":"demo.task","input":{"target":"crash-before"}}`)
		if err := dispatcher(crashingExecutor{Executor: realExecutor(), beforeStart: true}).Dispatch(context.Background(), id); !errors.Is(err, errCrash) {
			t.Fatalf("err = %v", err)
		}
		if n := executions(t, id); n != 0 || state(t, id).State != operation.Accepted {
			t.Fatalf("after the crash: %d executions, %s", n, state(t, id).State)
		}
	})
	if r := c.poll(id, 30*time.Second); r.json["state"] != "succeeded" {
		t.Fatalf("%s", r.body)
	}
	if n := executions(t, id); n != 1 {
		t.Fatalf("%d executions", n)
	}
}

// The dispatcher dies after StartExecution and before the dispatched fact: the redelivered
// record finds the execution by name; there is never a second one.
func TestCrashAfterStartBeforeFact(t *testing.T) {
	c := alice(t)
	var id string
	paused(t, func() {
		id = c.admit(`{"type":"demo.task","input":{"target":"crash-after","steps":3,"sleepMs":300}}`)
		if err := dispatcher(crashingExecutor{Executor: realExecutor(), afterStart: true}).Dispatch(context.Background(), id); !errors.Is(err, errCrash) {
			t.Fatalf("err = %v", err)
		}
		if n := executions(t, id); n != 1 {
			t.Fatalf("%d executions after the crash", n)
		}
		// The same record redelivered to an in-process dispatcher, while the execution runs.
		if err := dispatcher(realExecutor()).Dispatch(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	})
	if r := c.poll(id, 30*time.Second); r.json["state"] != "succeeded" {
		t.Fatalf("%s", r.body)
	}
	if n := executions(t, id); n != 1 {
		t.Fatalf("%d executions", n)
	}
}

// The same stream record delivered twice to the dispatcher function (and once more by the
// poller when it resumes) starts one execution.
func TestSameRecordDeliveredTwice(t *testing.T) {
	c := alice(t)
	var id string
	paused(t, func() {
		id = c.admit(`{"type":"demo.task","input":{"target":"redelivery"}}`)
		payload, _ := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{dynamotest.FactRecord(id, "accepted", "1")}})
		for range 2 {
			out, err := stack.Lambda.Invoke(context.Background(), invokeInput(stack.function("dispatcher"), payload))
			if err != nil || out.FunctionError != nil || strings.Contains(string(out.Payload), "batchItemFailures\":[{") {
				t.Fatalf("invoke: %v %s", err, out.Payload)
			}
		}
	})
	if r := c.poll(id, 30*time.Second); r.json["state"] != "succeeded" {
		t.Fatalf("%s", r.body)
	}
	time.Sleep(300 * time.Millisecond) // the resumed poller's delivery
	if n := executions(t, id); n != 1 {
		t.Fatalf("%d executions", n)
	}
}

// Cancellation intent recorded before dispatch: nothing starts, the state is canceled.
func TestCancelIntentBeforeDispatch(t *testing.T) {
	c := alice(t)
	var id string
	paused(t, func() {
		id = c.admit(`{"type":"demo.task","input":{"target":"cancel-first"}}`)
		if _, err := store().Append(context.Background(), state(t, id),
			operation.Fact{Kind: operation.KindCancelRequested, At: time.Now(), Source: operation.SourceClient, Actor: "alice"}); err != nil {
			t.Fatal(err)
		}
	})
	r := c.poll(id, 30*time.Second)
	if r.json["state"] != "canceled" || r.json["cancelRequested"] != true || r.json["observedAt"] != nil {
		t.Fatalf("%s", r.body)
	}
	if n := executions(t, id); n != 0 {
		t.Fatalf("%d executions", n)
	}
}

// Replace the executor with the fake, whose references look like real ARNs: none of it
// reaches a client, in any state.
func TestExecutorReplacementLeaksNothing(t *testing.T) {
	c := alice(t)
	fake := &fakeexecutor.Executor{}
	var id string
	paused(t, func() {
		id = c.admit(`{"type":"demo.task","input":{"target":"fake-executor"}}`)
		if err := dispatcher(fake).Dispatch(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		op := state(t, id)
		if op.State != operation.Dispatched || !strings.HasPrefix(op.Execution, "arn:aws:states:") {
			t.Fatalf("the fake's reference must be stored for this test to mean anything: %+v", op)
		}
		if g := c.do(http.MethodGet, "/v1/operations/"+id, "", ""); g.json["state"] != "dispatched" { // leaks are checked by do
			t.Fatalf("%s", g.body)
		}
		if _, err := store().Append(context.Background(), op,
			operation.Fact{Kind: operation.KindStarted, At: time.Now(), Source: operation.SourceExecutor},
			operation.Fact{Kind: operation.KindOutcomeUnknown, At: time.Now(), Source: operation.SourceExecutor,
				Problem: operation.NewProblem("outcome_unknown", "Outcome unknown", "lost")}); err != nil {
			t.Fatal(err)
		}
	})
	r := c.do(http.MethodGet, "/v1/operations/"+id, "", "")
	if r.json["state"] != "outcome_unknown" || len(fake.Executions()) != 1 || executions(t, id) != 0 {
		t.Fatalf("%s", r.body)
	}
}

// The Step Functions adapter against kumo: a second start of the same name is "already
// started" with the same reference, confirmed by DescribeExecution.
func TestStepFunctionsAdapterAlreadyStarted(t *testing.T) {
	exec := realExecutor()
	ctx := context.Background()
	// A real operation with long steps, started here rather than by the dispatcher, so its
	// execution is still running when it is stopped.
	var name, ref string
	paused(t, func() {
		name = alice(t).admit(`{"type":"demo.task","input":{"target":"e2e-adapter","steps":5,"sleepMs":2000}}`)
		var err error
		if ref, err = exec.Start(ctx, "demo-task", name, []byte(`{"operationId":"`+name+`"}`)); err != nil {
			t.Fatal(err)
		}
	})
	again, err := exec.Start(ctx, "demo-task", name, []byte(`{"operationId":"`+name+`"}`))
	if !errors.Is(err, dispatch.ErrAlreadyStarted) || again != ref {
		t.Fatalf("second start: %q %v (first %q)", again, err, ref)
	}
	if err := exec.Stop(ctx, ref, "test"); err != nil {
		t.Fatal(err)
	}
	out, err := stack.StepFunctions.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(ref)})
	if err != nil || out.Status != sfntypes.ExecutionStatusAborted {
		t.Fatalf("after stop: %v %v", out, err)
	}
	if _, err := exec.Start(ctx, "no-such-workflow", name, nil); !errors.Is(err, dispatch.ErrPermanent) {
		t.Fatalf("unknown workflow: %v", err)
	}
}

// A poison record (an operation the table does not have) goes to the dead-letter queue
// with its operation id, and the dispatcher function reports success so the shard moves on.
func TestPoisonRecordReachesTheDeadLetterQueue(t *testing.T) {
	id := "op_01ARYZ6S41" + strings.Repeat("0", 16)
	payload, _ := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{dynamotest.FactRecord(id, "accepted", "7")}})
	out, err := stack.Lambda.Invoke(context.Background(), invokeInput(stack.function("dispatcher"), payload))
	if err != nil || out.FunctionError != nil || strings.Contains(string(out.Payload), `"ItemIdentifier"`) || strings.Contains(string(out.Payload), `"itemIdentifier"`) {
		t.Fatalf("invoke: %v %s", err, out.Payload)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		msgs, err := stack.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(stack.DeadLetterQueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs.Messages {
			var letter dispatch.DeadLetter
			if json.Unmarshal([]byte(aws.ToString(m.Body)), &letter) == nil && letter.OperationID == id {
				return
			}
		}
	}
	t.Fatal("the poison record's operation id never reached the dead-letter queue")
}

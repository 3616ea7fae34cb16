package stepfunctions_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

const machine = "arn:aws:states:us-east-1:123456789012:stateMachine:longrun-test-demo-task"

// noDelay retries at once: the test is about what reaches the caller, not the SDK's backoff.
type noDelay struct{}

func (noDelay) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }

// executor is the adapter on a real SDK client whose every call Step Functions answers with
// the error code given (an awsJson1_0 error, as the service writes it), with the SDK's
// standard retryer. calls counts the HTTP requests, retries included.
func executor(t *testing.T, code string) (*stepfunctions.Executor, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-ErrorType", code)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"` + code + `","message":"Rate exceeded"}`))
	}))
	t.Cleanup(srv.Close)
	client := sfn.New(sfn.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:     retry.NewStandard(func(o *retry.StandardOptions) { o.Backoff = noDelay{} }),
	})
	return &stepfunctions.Executor{Client: client, StateMachines: map[string]string{"demo-task": machine}}, &calls
}

// Step Functions' ThrottlingException, still there after the SDK's own retries, reaches the
// services as dispatch.ErrThrottled on every call they make (start, describe, stop), so they
// can wait instead of failing the work; any other error does not.
func TestThrottlingIsTranslated(t *testing.T) {
	ctx := context.Background()
	ref := stepfunctions.ExecutionARN(machine, "op-1")
	calls := map[string]func(e *stepfunctions.Executor) error{
		"start": func(e *stepfunctions.Executor) error {
			_, err := e.Start(ctx, "demo-task", "op-1", []byte(`{}`))
			return err
		},
		"describe": func(e *stepfunctions.Executor) error { _, err := e.DescribeRef(ctx, ref); return err },
		"stop":     func(e *stepfunctions.Executor) error { return e.Stop(ctx, ref, "test") },
		"continue": func(e *stepfunctions.Executor) error {
			_, _, err := e.Continue(ctx, recorder.NextExecution{Workflow: "demo-task", Name: "op-1-1"}, []byte(`{}`))
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			e, n := executor(t, "ThrottlingException")
			err := call(e)
			if !errors.Is(err, dispatch.ErrThrottled) || errors.Is(err, dispatch.ErrPermanent) {
				t.Fatalf("%v; want dispatch.ErrThrottled", err)
			}
			if !strings.Contains(err.Error(), "Rate exceeded") {
				t.Errorf("the cause is lost: %v", err)
			}
			if n.Load() < 2 {
				t.Errorf("%d requests: the SDK did not retry before giving up", n.Load())
			}
			e, _ = executor(t, "InternalServerError")
			if err := call(e); err == nil || errors.Is(err, dispatch.ErrThrottled) {
				t.Fatalf("a server error: %v; want an error that is not a throttle", err)
			}
		})
	}
	e, _ := executor(t, "InvalidExecutionInput")
	if _, err := e.Start(ctx, "demo-task", "op-1", []byte(`{}`)); !errors.Is(err, dispatch.ErrPermanent) || errors.Is(err, dispatch.ErrThrottled) {
		t.Fatalf("rejected input: %v; want permanent, not throttled", err)
	}
}

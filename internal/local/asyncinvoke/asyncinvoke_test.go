package asyncinvoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/longrun-dev/longrun/internal/aws/lambdainvoke"
	"github.com/longrun-dev/longrun/internal/local/asyncinvoke"
)

// functions is the rest of the edge for the emulator's tests: each function answers as its
// script says (a fault injector; the e2e suite runs the emulator in front of kumo), and
// every invocation is kept.
type functions struct {
	mu     sync.Mutex
	calls  []string          // function names, in order
	bodies map[string][]byte // the last body each got
	answer func(fn string, n int) ([]byte, string, error)
	seen   map[string]int
	told   chan lambdainvoke.Record
}

func (f *functions) invoke(_ context.Context, fn string, payload []byte) ([]byte, string, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fn)
	f.seen[fn]++
	n := f.seen[fn]
	f.bodies[fn] = payload
	f.mu.Unlock()
	if fn == "recorder" {
		var rec lambdainvoke.Record
		_ = json.Unmarshal(payload, &rec)
		out, fnErr, err := f.answer(fn, n)
		if err == nil && fnErr == "" {
			f.told <- rec
		}
		return out, fnErr, err
	}
	return f.answer(fn, n)
}

// stack is the emulator in front of the functions, with the Lambda API's client on it.
func stack(t *testing.T, answer func(fn string, n int) ([]byte, string, error), now func() time.Time) (*lambda.Client, *functions) {
	t.Helper()
	f := &functions{bodies: map[string][]byte{}, seen: map[string]int{}, answer: answer, told: make(chan lambdainvoke.Record, 4)}
	e := asyncinvoke.New(asyncinvoke.Options{
		Next:    http.NotFoundHandler(),
		Invoke:  f.invoke,
		Backoff: func(int) time.Duration { return time.Millisecond },
		Now:     now,
	})
	srv := httptest.NewServer(e)
	t.Cleanup(func() { srv.Close(); e.Close() })
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint: aws.String(srv.URL)}
	client := lambda.NewFromConfig(cfg)
	_, err := client.PutFunctionEventInvokeConfig(context.Background(), &lambda.PutFunctionEventInvokeConfigInput{
		FunctionName: aws.String("worker"), MaximumRetryAttempts: aws.Int32(0), MaximumEventAgeInSeconds: aws.Int32(60),
		DestinationConfig: &types.DestinationConfig{
			OnSuccess: &types.OnSuccess{Destination: aws.String("recorder")},
			OnFailure: &types.OnFailure{Destination: aws.String("recorder")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return client, f
}

func send(t *testing.T, c *lambda.Client, payload string) {
	t.Helper()
	out, err := c.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("arn:aws:lambda:us-east-1:000000000000:function:worker"),
		InvocationType: types.InvocationTypeEvent, Payload: []byte(payload)})
	if err != nil || out.StatusCode != http.StatusAccepted {
		t.Fatalf("Event invocation: %v, %+v", err, out)
	}
}

func (f *functions) record(t *testing.T) lambdainvoke.Record {
	t.Helper()
	select {
	case rec := <-f.told:
		return rec
	case <-time.After(10 * time.Second):
		t.Fatal("the destination heard nothing")
		return lambdainvoke.Record{}
	}
}

// The destination hears each way an invocation ends, in Lambda's record, and the record
// reads back as the step's end (lambdainvoke.Destination).
func TestTheDestinationHearsHowItEnded(t *testing.T) {
	t.Run("success", func(t *testing.T) {
		c, f := stack(t, func(string, int) ([]byte, string, error) { return []byte(`{"status":"succeeded"}`), "", nil }, nil)
		send(t, c, `{"step":1}`)
		rec := f.record(t)
		if rec.RequestContext.Condition != lambdainvoke.ConditionSuccess || string(rec.RequestPayload) != `{"step":1}` ||
			string(rec.ResponsePayload) != `{"status":"succeeded"}` || rec.RequestContext.ApproximateInvokeCount != 1 ||
			!strings.HasSuffix(rec.RequestContext.FunctionArn, ":function:worker:$LATEST") {
			t.Fatalf("record %+v", rec)
		}
	})
	t.Run("a function error is not run again", func(t *testing.T) {
		c, f := stack(t, func(fn string, _ int) ([]byte, string, error) {
			if fn == "worker" {
				return []byte(`{"errorType":"Boom","errorMessage":"no"}`), "Boom", nil
			}
			return nil, "", nil
		}, nil)
		send(t, c, `{"step":1}`)
		rec := f.record(t)
		d, ok := lambdainvoke.Destination(mustJSON(t, rec))
		if rec.RequestContext.Condition != lambdainvoke.ConditionRetriesExhausted || f.seen["worker"] != 1 || !ok || d.Error == nil || d.Error.Error != "Boom" {
			t.Fatalf("record %+v, worker ran %d times, delivery %+v", rec, f.seen["worker"], d)
		}
	})
	t.Run("refused until too old", func(t *testing.T) {
		var mu sync.Mutex
		now := time.Now()
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		c, f := stack(t, func(fn string, _ int) ([]byte, string, error) {
			if fn == "worker" {
				mu.Lock()
				now = now.Add(25 * time.Second) // each refusal ages the event
				mu.Unlock()
				return nil, "", errors.New("TooManyRequestsException: Rate exceeded")
			}
			return nil, "", nil
		}, clock)
		send(t, c, `{"step":1}`)
		rec := f.record(t)
		d, _ := lambdainvoke.Destination(mustJSON(t, rec))
		// 60 s of age at 25 s a refusal: refused three times, then given up on.
		if rec.RequestContext.Condition != lambdainvoke.ConditionEventAgeExceeded || f.seen["worker"] != 3 ||
			rec.RequestContext.ApproximateInvokeCount != 0 || d.Error == nil || d.Error.Error != "Lambda.TooManyRequestsException" {
			t.Fatalf("record %+v after %d refusals, delivery %+v", rec, f.seen["worker"], d)
		}
	})
	t.Run("a failing destination is told three times", func(t *testing.T) {
		c, f := stack(t, func(fn string, n int) ([]byte, string, error) {
			if fn == "recorder" && n < 3 {
				return []byte(`{"errorType":"Store"}`), "Store", nil
			}
			return []byte(`{}`), "", nil
		}, nil)
		send(t, c, `{"step":1}`)
		f.record(t)
		if f.seen["recorder"] != 3 || f.seen["worker"] != 1 {
			t.Fatalf("the recorder was invoked %d times, the worker %d", f.seen["recorder"], f.seen["worker"])
		}
	})
}

// Only a function with an event invoke config is played here; any other Event invocation
// and every synchronous one pass on to the rest of the edge (kumo).
func TestUnconfiguredPassesOn(t *testing.T) {
	c, f := stack(t, func(string, int) ([]byte, string, error) { return nil, "", nil }, nil)
	_, err := c.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("other"), InvocationType: types.InvocationTypeEvent})
	if err == nil {
		t.Fatal("an Event invocation of a function without a config was played, not passed on")
	}
	_, err = c.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("worker")})
	if err == nil || len(f.calls) != 0 {
		t.Fatalf("a synchronous invocation was played: %v, %v", err, f.calls)
	}
	got, err := c.GetFunctionEventInvokeConfig(context.Background(), &lambda.GetFunctionEventInvokeConfigInput{FunctionName: aws.String("worker")})
	if err != nil || aws.ToInt32(got.MaximumRetryAttempts) != 0 || aws.ToString(got.DestinationConfig.OnFailure.Destination) != "recorder" {
		t.Fatalf("config %+v, %v", got, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

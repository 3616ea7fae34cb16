package lambdainvoke_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/longrun-dev/longrun/internal/aws/lambdainvoke"
	"github.com/longrun-dev/longrun/internal/core/step"
)

// lambdaAPI answers Invoke as Lambda does, as the test says: a fault injector; the e2e suite
// proves invocations through the emulator.
func lambdaAPI(t *testing.T, answer func(w http.ResponseWriter, body []byte)) (*lambdainvoke.Invoker, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		answer(w, body)
	}))
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}
	return lambdainvoke.New(cfg, func(o *lambda.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
	}), &calls
}

func invokeErr(t *testing.T, err error) *step.InvokeError {
	t.Helper()
	var ie *step.InvokeError
	if !errors.As(err, &ie) {
		t.Fatalf("want a *step.InvokeError, got %T %v", err, err)
	}
	return ie
}

func TestAnswerIsThePayload(t *testing.T) {
	inv, calls := lambdaAPI(t, func(w http.ResponseWriter, body []byte) {
		if string(body) != `{"step":1}` {
			t.Errorf("payload %s", body)
		}
		_, _ = w.Write([]byte(`{"status":"succeeded"}`))
	})
	out, err := inv.Invoke(context.Background(), "worker-x", []byte(`{"step":1}`), time.Minute)
	if err != nil || string(out) != `{"status":"succeeded"}` || calls.Load() != 1 {
		t.Fatalf("%s %v after %d calls", out, err, calls.Load())
	}
}

// A function error is the step's failure, named by its errorType, and never sent again.
func TestFunctionErrorsAreNotRetried(t *testing.T) {
	inv, calls := lambdaAPI(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		_, _ = w.Write([]byte(`{"errorType":"errorString","errorMessage":"boom"}`))
	})
	_, err := inv.Invoke(context.Background(), "worker-x", []byte(`{}`), time.Minute)
	if ie := invokeErr(t, err); ie.Name != "errorString" || ie.Cause != "boom" || calls.Load() != 1 {
		t.Fatalf("%+v after %d calls", ie, calls.Load())
	}
	timedOut, _ := lambdaAPI(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		_, _ = w.Write([]byte(`{"errorType":"Sandbox.Timedout","errorMessage":"RequestId: 1 Error: Task timed out after 2.00 seconds"}`))
	})
	_, err = timedOut.Invoke(context.Background(), "worker-x", []byte(`{}`), time.Minute)
	if ie := invokeErr(t, err); ie.Name != step.ErrTimeout {
		t.Fatalf("a function that ran out of its timeout is the step's timeout: %+v", ie)
	}
}

// A throttled invocation never ran: it is retried, and when Lambda keeps refusing it is
// not invoked at all. A 5xx may have reached the function: never retried.
func TestOnlyRefusalsAreRetried(t *testing.T) {
	inv, calls := lambdaAPI(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("X-Amzn-Errortype", "TooManyRequestsException")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"Type":"User","message":"Rate Exceeded."}`))
	})
	_, err := inv.Invoke(context.Background(), "worker-x", []byte(`{}`), time.Minute)
	if ie := invokeErr(t, err); ie.Name != step.ErrNotInvoked || calls.Load() != 3 {
		t.Fatalf("%+v after %d calls; want not invoked after 3", ie, calls.Load())
	}
	broken, calls5 := lambdaAPI(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("X-Amzn-Errortype", "ServiceException")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"message":"internal"}`))
	})
	_, err = broken.Invoke(context.Background(), "worker-x", []byte(`{}`), time.Minute)
	if ie := invokeErr(t, err); ie.Name != "Lambda.ServiceException" || calls5.Load() != 1 {
		t.Fatalf("%+v after %d calls; want one call", ie, calls5.Load())
	}
}

// Lambda answers 502 for refusals that come before the handler runs (no network interface
// yet, a KMS key it cannot use, a function still being updated): those never ran either, so
// they are retried and end as not invoked, never as a worker failure that may have acted.
func TestRefusalsBeforeTheHandlerAreNotInvoked(t *testing.T) {
	for _, code := range []string{"ResourceNotReadyException", "EC2ThrottledException", "SubnetIPAddressLimitReachedException",
		"ENILimitReachedException", "KMSAccessDeniedException", "KMSDisabledException", "InvalidSubnetIDException"} {
		inv, calls := lambdaAPI(t, func(w http.ResponseWriter, _ []byte) {
			w.Header().Set("X-Amzn-Errortype", code)
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"Type":"Server","message":"not ready"}`))
		})
		_, err := inv.Invoke(context.Background(), "worker-x", []byte(`{}`), time.Minute)
		if ie := invokeErr(t, err); ie.Name != step.ErrNotInvoked || calls.Load() != 3 {
			t.Errorf("%s: %+v after %d calls; want not invoked after 3", code, ie, calls.Load())
		}
	}
}

func TestNoAnswerInTimeIsTheStepsTimeout(t *testing.T) {
	inv, _ := lambdaAPI(t, func(w http.ResponseWriter, _ []byte) { time.Sleep(500 * time.Millisecond) })
	_, err := inv.Invoke(context.Background(), "worker-x", []byte(`{}`), 50*time.Millisecond)
	if ie := invokeErr(t, err); ie.Name != step.ErrTimeout {
		t.Fatalf("%+v", ie)
	}
}

// A destination's record reads as the step's end in the protocol's terms, as Invoke names
// them: a report, the function's own error, its timeout, or a step Lambda never ran.
func TestDestinationReadsEveryCondition(t *testing.T) {
	req := `{"operationId":"op_1","step":2}`
	for name, tc := range map[string]struct {
		record      string
		report      string
		error, fail string
	}{
		"success": {record: `{"version":"1.0","requestContext":{"condition":"Success","approximateInvokeCount":1,"functionArn":"arn:aws:lambda:us-east-1:123456789012:function:w:$LATEST"},"requestPayload":` + req +
			`,"responseContext":{"statusCode":200},"responsePayload":{"status":"succeeded"}}`, report: `{"status":"succeeded"}`},
		"function error": {record: `{"version":"1.0","requestContext":{"condition":"RetriesExhausted","approximateInvokeCount":1},"requestPayload":` + req +
			`,"responseContext":{"statusCode":200,"functionError":"Unhandled"},"responsePayload":{"errorType":"Runtime.ExitError","errorMessage":"exit status 2"}}`,
			error: "Runtime.ExitError"},
		"timeout": {record: `{"version":"1.0","requestContext":{"condition":"RetriesExhausted"},"requestPayload":` + req +
			`,"responseContext":{"statusCode":200,"functionError":"Unhandled"},"responsePayload":{"errorMessage":"2026-12-02T04:00:00.000Z abc Task timed out after 30.03 seconds"}}`,
			error: step.ErrTimeout},
		"expired in the queue": {record: `{"version":"1.0","requestContext":{"condition":"EventAgeExceeded","approximateInvokeCount":0},"requestPayload":` + req + `}`,
			error: step.ErrNotInvoked},
		"a Success that failed all the same": {record: `{"version":"1.0","requestContext":{"condition":"Success"},"requestPayload":` + req +
			`,"responseContext":{"statusCode":200,"functionError":"Unhandled"},"responsePayload":{"errorType":"Boom"}}`, error: "Boom"},
	} {
		t.Run(name, func(t *testing.T) {
			d, ok := lambdainvoke.Destination([]byte(tc.record))
			if name == "success" && d.Function != "arn:aws:lambda:us-east-1:123456789012:function:w" {
				t.Errorf("the step went to %q", d.Function)
			}
			if !ok || string(d.Request) != req {
				t.Fatalf("not read as a delivery of %s: %+v", req, d)
			}
			switch {
			case tc.report != "":
				if d.Task == nil || string(d.Task.Report) != tc.report || d.Error != nil {
					t.Fatalf("delivery %+v; want the report %s", d, tc.report)
				}
			case d.Error == nil || d.Error.Error != tc.error || d.Task != nil:
				t.Fatalf("delivery %+v; want the error %s", d, tc.error)
			}
		})
	}
	for _, other := range []string{`{"state":{"operationId":"op_1"},"worker":"arn:w","token":"t"}`, `{"operationId":"op_1"}`, `[]`} {
		if _, ok := lambdainvoke.Destination([]byte(other)); ok {
			t.Errorf("%s read as a delivery", other)
		}
	}
}

// Send invokes asynchronously, and a refusal before Lambda queued the step is one it never
// ran; an answer that came after Lambda may have queued it is not.
func TestSendIsAnEventInvocation(t *testing.T) {
	inv, _ := lambdaAPI(t, func(w http.ResponseWriter, _ []byte) { w.WriteHeader(http.StatusAccepted) })
	if err := inv.Send(context.Background(), "worker", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	var seen string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("X-Amz-Invocation-Type")
		w.Header().Set("X-Amzn-Errortype", "TooManyRequestsException")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"message":"Rate exceeded"}`)
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}
	throttled := lambdainvoke.New(cfg, func(o *lambda.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	err := throttled.Send(context.Background(), "worker", []byte(`{}`))
	if ie := invokeErr(t, err); ie.Name != step.ErrNotInvoked || seen != "Event" {
		t.Fatalf("error %+v, invocation type %q", ie, seen)
	}
	broken, _ := lambdaAPI(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("X-Amzn-Errortype", "ServiceException")
		w.WriteHeader(http.StatusInternalServerError)
	})
	if ie := invokeErr(t, broken.Send(context.Background(), "worker", []byte(`{}`))); ie.Name == step.ErrNotInvoked {
		t.Fatalf("a 500 may have queued the step: %+v", ie)
	}
}

// Package lambdainvoke invokes a worker's Lambda function for one step, for the recorder
// (internal/service/recorder), and says how an invocation failed in the protocol's terms
// (step.InvokeError). It retries only what Lambda refused before the function ran; an
// invocation that may have reached the function is never sent again from here: the
// recorder decides what its failure means.
package lambdainvoke

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/longrun-dev/longrun/internal/core/step"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// beforeHandler are the Lambda errors of an invocation that never reached the function's
// handler, whatever their HTTP status: throttling, and the 502 family that Lambda answers
// while it cannot give the function an execution environment (its network interface, its
// subnet's addresses, its KMS key, a function still being created or updated). Each is safe
// to send again, and after the retries the step never ran. A 5xx missing here
// (ServiceException above all) may have reached the handler and is never sent again.
// The list is Lambda's Invoke API reference, error by error.
var beforeHandler = []string{
	"TooManyRequestsException",
	"ResourceNotReadyException",
	"ResourceConflictException",
	"CodeStorageExceededException",
	"EC2ThrottledException",
	"EC2AccessDeniedException",
	"EC2UnexpectedException",
	"ENILimitReachedException",
	"SubnetIPAddressLimitReachedException",
	"InvalidSubnetIDException",
	"InvalidSecurityGroupIDException",
	"InvalidRuntimeException",
	"InvalidZipFileException",
	"KMSAccessDeniedException",
	"KMSDisabledException",
	"KMSInvalidStateException",
	"KMSNotFoundException",
	"EFSMountConnectivityException",
	"EFSMountFailureException",
	"EFSMountTimeoutException",
	"SnapStartNotReadyException",
	"SnapStartTimeoutException",
}

// refused retries the invocations that never reached the handler.
func refused() retry.IsErrorRetryable {
	codes := map[string]struct{}{}
	for _, c := range beforeHandler {
		codes[c] = struct{}{}
	}
	return retry.RetryableErrorCode{Codes: codes}
}

// Invoker invokes worker functions.
type Invoker struct {
	client *lambda.Client
}

// New returns an Invoker on cfg whose SDK retries only refused invocations (three
// attempts, jittered backoff) and never a connection that broke after the request was sent.
func New(cfg aws.Config, optFns ...func(*lambda.Options)) *Invoker {
	retryer := func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Retryables = []retry.IsErrorRetryable{refused()}
		})
	}
	opts := append([]func(*lambda.Options){func(o *lambda.Options) { o.Retryer = retryer() }}, optFns...)
	return &Invoker{client: lambda.NewFromConfig(cfg, opts...)}
}

// functionError is the payload Lambda returns when the function failed.
type functionError struct {
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
}

// Invoke invokes function with payload and waits for its answer at most timeout. A
// function that failed, one that ran out of its own timeout, a throttled invocation and
// an answer that did not come in time are *step.InvokeError.
func (i *Invoker) Invoke(ctx context.Context, function string, payload []byte, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := i.client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(function), Payload: payload})
	if err != nil {
		return nil, classify(ctx, err)
	}
	if out.FunctionError != nil {
		var fe functionError
		_ = json.Unmarshal(out.Payload, &fe)
		return nil, functionFailure(fe)
	}
	return out.Payload, nil
}

// functionFailure names a failed function's error: a function that ran out of its own
// timeout is the step's timeout, whichever way the runtime words it.
func functionFailure(fe functionError) *step.InvokeError {
	if fe.ErrorType == "Sandbox.Timedout" || strings.Contains(fe.ErrorMessage, "Task timed out") {
		return &step.InvokeError{Name: step.ErrTimeout, Cause: fe.ErrorMessage}
	}
	name := fe.ErrorType
	if name == "" {
		name = "Lambda.Unknown" // as Step Functions names a failure without a type
	}
	return &step.InvokeError{Name: name, Cause: fe.ErrorMessage}
}

func classify(ctx context.Context, err error) *step.InvokeError {
	var api smithy.APIError
	var resp *awshttp.ResponseError
	switch {
	case ctx.Err() != nil:
		return &step.InvokeError{Name: step.ErrTimeout, Cause: "no answer within the step's timeout"}
	case errors.As(err, &api) && (slices.Contains(beforeHandler, api.ErrorCode()) ||
		errors.As(err, &resp) && resp.HTTPStatusCode() < 500):
		// A refusal before the handler (throttled, no such function, payload too large, a
		// 502 of the family above): the function did not run.
		return &step.InvokeError{Name: step.ErrNotInvoked, Cause: api.ErrorCode() + ": " + api.ErrorMessage()}
	case errors.As(err, &api):
		return &step.InvokeError{Name: "Lambda." + api.ErrorCode(), Cause: api.ErrorMessage()}
	default:
		return &step.InvokeError{Name: "Lambda.SdkClientException", Cause: err.Error()}
	}
}

// Send invokes function with payload asynchronously (InvocationType Event): Lambda queues
// it and answers at once, and the function's destinations hear how it ended (Destination).
// A refusal before Lambda queued it is step.ErrNotInvoked; any other failure may hide an
// invocation that was queued.
func (i *Invoker) Send(ctx context.Context, function string, payload []byte) error {
	_, err := i.client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(function), Payload: payload,
		InvocationType: types.InvocationTypeEvent})
	if err != nil {
		return classify(ctx, err)
	}
	return nil
}

// Record is what Lambda hands an asynchronous invocation's destination: the request it was
// sent, and how it ended (AWS's "invocation record", version 1.0).
type Record struct {
	Version        string `json:"version"`
	RequestContext struct {
		RequestID              string `json:"requestId"`
		FunctionArn            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	RequestPayload  json.RawMessage `json:"requestPayload"`
	ResponseContext *struct {
		StatusCode    int    `json:"statusCode"`
		FunctionError string `json:"functionError,omitempty"`
	} `json:"responseContext,omitempty"`
	ResponsePayload json.RawMessage `json:"responsePayload,omitempty"`
}

// The conditions of a Record: the function returned, it failed on every attempt, or Lambda
// gave up before it ran (the event outlived its maximum age, throttled all along).
const (
	ConditionSuccess          = "Success"
	ConditionRetriesExhausted = "RetriesExhausted"
	ConditionEventAgeExceeded = "EventAgeExceeded"
)

// Destination reads raw as a destination's Record of a step sent with Send, for the
// recorder: the step's report, or how its invocation failed in the protocol's terms, as
// Invoke names them. ok is false for anything else.
func Destination(raw json.RawMessage) (recorder.Delivery, bool) {
	var rec Record
	if json.Unmarshal(raw, &rec) != nil || rec.RequestContext.Condition == "" || len(rec.RequestPayload) == 0 {
		return recorder.Delivery{}, false
	}
	// The function the step went to, without the version Lambda ran ($LATEST): the Run's
	// next steps go to it as the workflow named it.
	d := recorder.Delivery{Function: recorder.Unqualified(rec.RequestContext.FunctionArn), Request: rec.RequestPayload}
	failed := rec.ResponseContext != nil && rec.ResponseContext.FunctionError != ""
	switch {
	case rec.RequestContext.Condition == ConditionEventAgeExceeded:
		// Never run: Lambda kept it queued (throttled) until it expired.
		d.Error = &recorder.TaskError{Error: step.ErrNotInvoked, Cause: "EventAgeExceeded: the step stayed queued past its maximum event age"}
	case rec.RequestContext.Condition == ConditionSuccess && !failed:
		d.Task = &recorder.Task{Report: rec.ResponsePayload}
	case failed:
		var fe functionError
		_ = json.Unmarshal(rec.ResponsePayload, &fe)
		ie := functionFailure(fe)
		d.Error = &recorder.TaskError{Error: ie.Name, Cause: ie.Cause}
	default:
		d.Error = &recorder.TaskError{Error: "Lambda.Unknown", Cause: "the invocation ended " + rec.RequestContext.Condition}
	}
	return d, true
}

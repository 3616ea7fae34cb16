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
	"github.com/aws/smithy-go"

	"github.com/longrun-dev/longrun/internal/core/step"
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

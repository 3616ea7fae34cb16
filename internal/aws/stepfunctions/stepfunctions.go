// Package stepfunctions is the Step Functions adapter of the executor ports: an operation's
// Standard executions, the first named after the operation id (the dispatcher's), the next
// after it and a count (the recorder's, which goes on after a wait or when a Run had no room
// for another step).
package stepfunctions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// Client is the part of the Step Functions API the adapter uses.
type Client interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
	StopExecution(ctx context.Context, in *sfn.StopExecutionInput, opts ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskHeartbeat(ctx context.Context, in *sfn.SendTaskHeartbeatInput, opts ...func(*sfn.Options)) (*sfn.SendTaskHeartbeatOutput, error)
}

// Executor starts and stops executions. StateMachines maps a type's workflow name
// (optype.Type.Executor) to its state machine ARN.
type Executor struct {
	Client        Client
	StateMachines map[string]string
}

// NewExecutor is the executor of the given state machines, reached with cfg.
func NewExecutor(cfg aws.Config, stateMachines map[string]string) *Executor {
	return &Executor{Client: sfn.NewFromConfig(cfg), StateMachines: stateMachines}
}

// Start starts the execution called name. An execution of that name is already there when
// a previous dispatch crashed after starting it: that is reported as ErrAlreadyStarted with
// the existing execution's ARN, confirmed with DescribeExecution. (AWS answers a same-name,
// same-input start of a running execution with success instead; both end the same.)
func (e *Executor) Start(ctx context.Context, workflow, name string, input []byte) (string, error) {
	machine, ok := e.StateMachines[workflow]
	if !ok {
		return "", fmt.Errorf("%w: no state machine configured for workflow %q", dispatch.ErrPermanent, workflow)
	}
	out, err := e.Client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(machine), Name: aws.String(name), Input: aws.String(string(input)),
	})
	var exists *types.ExecutionAlreadyExists
	switch {
	case errors.As(err, &exists):
		ref := ExecutionARN(machine, name)
		if _, err := e.Client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(ref)}); err != nil {
			return "", callError("describe existing execution", err)
		}
		return ref, dispatch.ErrAlreadyStarted
	case permanent(err):
		return "", fmt.Errorf("%w: start execution: %v", dispatch.ErrPermanent, err)
	case err != nil:
		return "", callError("start execution", err)
	}
	return aws.ToString(out.ExecutionArn), nil
}

// Stop stops an execution; one that is gone or already finished is fine.
func (e *Executor) Stop(ctx context.Context, ref, cause string) error {
	_, err := e.Client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(ref), Cause: aws.String(cause)})
	var missing *types.ExecutionDoesNotExist
	if err != nil && !errors.As(err, &missing) {
		return callError("stop execution", err)
	}
	return nil
}

// callError is the error of a failed call, marked dispatch.ErrThrottled when Step Functions
// refused it for its rate, so that the services can tell "later" from "broken" without
// knowing the SDK's error types.
func callError(call string, err error) error {
	if throttled(err) {
		return fmt.Errorf("%w: %s: %w", dispatch.ErrThrottled, call, err)
	}
	return fmt.Errorf("%s: %w", call, err)
}

// throttled reports whether err is a refusal for rate: ThrottlingException, which Step
// Functions answers when an API action's token bucket is empty, or any other code the SDK's
// retryer treats as throttling. The SDK has retried it by then (its error wraps the last
// attempt's), so it is worth no more tries now.
func throttled(err error) bool {
	return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
}

// ExecutionARN derives an execution's ARN from its state machine's and its name.
func ExecutionARN(stateMachine, name string) string {
	return strings.Replace(stateMachine, ":stateMachine:", ":execution:", 1) + ":" + name
}

// permanent reports errors that retrying the same call cannot fix.
func permanent(err error) bool {
	var (
		missing  *types.StateMachineDoesNotExist
		deleting *types.StateMachineDeleting
		arn      *types.InvalidArn
		input    *types.InvalidExecutionInput
		name     *types.InvalidName
	)
	return errors.As(err, &missing) || errors.As(err, &deleting) || errors.As(err, &arn) ||
		errors.As(err, &input) || errors.As(err, &name)
}

// Describe reports the execution called name on workflow's state machine.
func (e *Executor) Describe(ctx context.Context, workflow, name string) (reconcile.Execution, error) {
	machine, ok := e.StateMachines[workflow]
	if !ok {
		return reconcile.Execution{}, fmt.Errorf("%w: no state machine configured for workflow %q", dispatch.ErrPermanent, workflow)
	}
	return e.DescribeRef(ctx, ExecutionARN(machine, name))
}

// DescribeRef reports the execution ref (its ARN).
func (e *Executor) DescribeRef(ctx context.Context, ref string) (reconcile.Execution, error) {
	out, err := e.Client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(ref)})
	var missing *types.ExecutionDoesNotExist
	switch {
	case errors.As(err, &missing):
		return reconcile.Execution{Ref: ref, Status: reconcile.Missing}, nil
	case err != nil:
		return reconcile.Execution{}, callError("describe execution", err)
	}
	status := reconcile.Status(out.Status)
	if out.Status == types.ExecutionStatusPendingRedrive {
		status = reconcile.Failed
	}
	return reconcile.Execution{Ref: ref, Status: status, Output: []byte(aws.ToString(out.Output))}, nil
}

// Ref is the ARN the execution called name of workflow's state machine has, or will have.
func (e *Executor) Ref(workflow, name string) (string, error) {
	machine, ok := e.StateMachines[workflow]
	if !ok {
		return "", fmt.Errorf("%w: no state machine configured for workflow %q", dispatch.ErrPermanent, workflow)
	}
	return ExecutionARN(machine, name), nil
}

// Running reports whether the execution ref is still running (not stopped, failed or over).
func (e *Executor) Running(ctx context.Context, ref string) (bool, error) {
	ex, err := e.DescribeRef(ctx, ref)
	return ex.Status == reconcile.Running, err
}

// Continuations is the executor as the recorder uses it to go on with an operation in its
// next execution: on the workflow's own state machine, or on its resume state machine
// (ResumeKey).
type Continuations struct{ *Executor }

// machineKey is next's state machine in LONGRUN_STATE_MACHINES.
func machineKey(next recorder.NextExecution) string {
	if next.Resume {
		return ResumeKey(next.Workflow)
	}
	return next.Workflow
}

// Ref is the ARN of the execution next, started or not.
func (c Continuations) Ref(next recorder.NextExecution) (string, error) {
	return c.Executor.Ref(machineKey(next), next.Name)
}

// Start starts the execution next; one already there comes back with its ARN and
// dispatch.ErrAlreadyStarted.
func (c Continuations) Start(ctx context.Context, next recorder.NextExecution, input []byte) (string, error) {
	return c.Executor.Start(ctx, machineKey(next), next.Name, input)
}

// Continue starts the execution next that carries on an operation's work, for the
// reconciler, as a Run's hand-back does (Continuations.Start). One already there is
// described instead: started is false.
func (e *Executor) Continue(ctx context.Context, next recorder.NextExecution, input []byte) (reconcile.Execution, bool, error) {
	ref, err := Continuations{e}.Start(ctx, next, input)
	switch {
	case errors.Is(err, dispatch.ErrAlreadyStarted):
		ex, err := e.DescribeRef(ctx, ref)
		return ex, false, err
	case err != nil:
		return reconcile.Execution{}, false, err
	}
	return reconcile.Execution{Ref: ref, Status: reconcile.Running}, true, nil
}

// Answer ends the Task state that waits on token (a parked Run, .waitForTaskToken) with
// output as its result. A token nobody waits on any more is recorder.ErrCallbackGone.
func (c Continuations) Answer(ctx context.Context, token string, output []byte) error {
	_, err := c.Client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(string(output))})
	if gone(err) {
		return fmt.Errorf("%w: %w", recorder.ErrCallbackGone, err)
	}
	return err
}

// Alive sends the task that waits on token a heartbeat: false when nobody waits on it any
// more (its execution was stopped, or the task timed out).
func (c Continuations) Alive(ctx context.Context, token string) (bool, error) {
	_, err := c.Client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	if gone(err) {
		return false, nil
	}
	return err == nil, err
}

// gone says whether err is Step Functions' answer for a token nobody waits on.
func gone(err error) bool {
	var timedOut *types.TaskTimedOut
	var missing *types.TaskDoesNotExist
	var invalid *types.InvalidToken
	return errors.As(err, &timedOut) || errors.As(err, &missing) || errors.As(err, &invalid)
}

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

// Func is one operation type's work: it runs one step of it, with the operation's input
// decoded into In (with encoding/json, so members In does not name are ignored).
//
// It returns the step's [Report]. An error instead is the invocation's failure, which
// longrun records as outcome_unknown (the step ran and may have acted), except a
// [*Problem], which is a failed report. ctx ends at the step's stepTimeout, or sooner when
// the invocation's time does; an error after it is reported as outcome_unknown with the
// code [CodeStepTimeout].
type Func[In any] func(ctx context.Context, step Step, input In) (Report, error)

// Handler is fn as a Lambda handler: it decodes the step request and its input, runs fn
// and returns the report as JSON (see [Run]). A payload that is not a step request of
// [Protocol] (or not JSON) is a failed report with the code [CodeInvalidRequest]: fn did
// not run.
func Handler[In any](fn Func[In]) func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	return handler(fn, nil)
}

func handler[In any](fn Func[In], log *stepLogger) func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
		var req Request
		err := json.Unmarshal(payload, &req)
		if err == nil {
			err = req.check()
		}
		var rep Report
		if err != nil {
			rep = Fail(CodeInvalidRequest, "The invocation is not a step request.", "the payload is not a "+Protocol+" step request: "+err.Error())
		} else {
			start := time.Now()
			rep, err = Run(ctx, fn, req)
			if log != nil {
				log.step(ctx, req, rep, time.Since(start), err)
			}
			if err != nil {
				return nil, err
			}
		}
		return json.Marshal(rep)
	}
}

// Start runs fn as the Lambda function's handler; it does not return. A worker's main is
//
//	func main() { worker.Start(step) }
//
// It writes one JSON line per step to standard output, where Lambda sends it to the
// function's log group: message "step", with the operation id, the correlation id, the
// step number, its status (or "error") and duration, in the field names longrun's own
// functions and Powertools for AWS Lambda use (docs/observability.md). It never logs the
// input, the carried state or the result.
func Start[In any](fn Func[In]) {
	log := newStepLogger(os.Stdout)
	lambda.Start(handler(fn, &log))
}

// Run runs fn for req as the Lambda function does, without Lambda: for a team's unit tests.
// It decodes req.Input into In (a failure is a failed report with the code
// [CodeInvalidInput]: fn did not run), calls fn, turns a [*Problem] error into a failed
// report and checks the report against the protocol: a report that breaks it is an error,
// as is any other error from fn, except one after the step's stepTimeout (its context ends
// then), which is an outcome_unknown report with the code [CodeStepTimeout]. Run does not check req's protocol or step number (Handler
// does), so a test sets only what its Func reads.
func Run[In any](ctx context.Context, fn Func[In], req Request) (Report, error) {
	var in In
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return Fail(CodeInvalidInput, "The operation's input is not what the worker reads.", err.Error()), nil
	}
	// The step's context ends at its stepTimeout: the function's own timeout may be longer
	// (a worker serves types of different stepTimeouts, and Lambda runs a step sent to it
	// asynchronously for the function's whole timeout).
	invocation := ctx
	timed := req.StepTimeoutSeconds > 0
	if timed {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.StepTimeoutSeconds)*time.Second)
		defer cancel()
	}
	rep, err := fn(ctx, req.step(), in)
	if err != nil {
		var p *Problem
		// The step's own time ran out, not the invocation's (that one is the invocation's
		// failure, which Lambda reports as its timeout).
		if timed && errors.Is(ctx.Err(), context.DeadlineExceeded) && invocation.Err() == nil && !errors.As(err, &p) {
			// Failed once its time was up: it may have acted before.
			return Report{status: StatusOutcomeUnknown, problem: &Problem{Code: CodeStepTimeout, Title: "Step timed out",
				Detail: fmt.Sprintf("Step %d did not finish within its step timeout of %ds; it may have acted, so the outcome is unknown.", req.Step, req.StepTimeoutSeconds)}}, nil
		}
		if !errors.As(err, &p) || p == nil {
			return Report{}, err
		}
		rep = Fail(p.Code, p.Title, p.Detail)
	}
	if err := rep.validate(); err != nil {
		return Report{}, fmt.Errorf("step %d of %s: %w", req.Step, req.OperationID, err)
	}
	return rep, nil
}

// Package worker runs an operation's work one step per invocation, as the workflow asks.
// Before every step it reads the operation again: cancellation intent stops the remaining
// work, and a settled operation is never worked on. The operation id is the deduplication
// identity passed to anything downstream.
package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/operation"
)

// Task is what the workflow sends for each step.
type Task struct {
	OperationID string `json:"operationId"`
	Step        int    `json:"step"`
}

// Report is what a step returns to the workflow. Done ends the loop; the recorder turns the
// outcome into the terminal fact. ErrorType/ErrorMessage are how a failed invocation looks
// when an executor hands the function error back as a result (see internal/service/recorder).
type Report struct {
	OperationID string             `json:"operationId"`
	Done        bool               `json:"done"`
	Step        int                `json:"step"`
	Outcome     operation.Kind     `json:"outcome,omitempty"`
	Result      json.RawMessage    `json:"result,omitempty"`
	Problem     *operation.Problem `json:"problem,omitempty"`

	ErrorType    string `json:"errorType,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// Work is one operation type's work.
type Work interface {
	// Step runs step (0-based) for op. It returns the next step, or a report with Done and
	// the outcome after the last step.
	Step(ctx context.Context, op operation.Operation, step int) (Report, error)
}

// Runner checks intent and records the start, then runs one step of Work.
type Runner struct {
	Store facts.Store
	Work  Work
	Now   func() time.Time
}

// NotStartedErrorType is the errorType of a *NotStartedError as the workflow hands it to
// the recorder: the Lambda runtime reports a handler's error as the name of its type
// (aws-lambda-go, lambdaErrorResponse), and so does the workflow's Catch. Renaming the type
// changes it.
const NotStartedErrorType = "NotStartedError"

// NotStartedError is an invocation's failure before its step began: the worker could not
// read the operation or record its start (throttled, timed out), so it ran none of the
// step's work. Nothing of that step can have happened, so the recorder records failed
// (worker_unavailable), not outcome_unknown. Any error after the step began is not one.
type NotStartedError struct {
	OperationID string
	Step        int
	Err         error
}

func (e *NotStartedError) Error() string {
	return fmt.Sprintf("step %d of %s did not start: %v", e.Step, e.OperationID, e.Err)
}

func (e *NotStartedError) Unwrap() error { return e.Err }

// Handle runs one step. An error before the step's work begins is a *NotStartedError
// (returned as is, so that its type is the invocation's errorType); an error from the work
// itself is any other error: the step may have acted.
func (r *Runner) Handle(ctx context.Context, task Task) (Report, error) {
	op, err := facts.Update(ctx, r.Store, task.OperationID, func(op operation.Operation) ([]operation.Fact, error) {
		if op.State == operation.Accepted || op.State == operation.Dispatched {
			return []operation.Fact{{Kind: operation.KindStarted, At: r.Now(), Source: operation.SourceExecutor}}, nil
		}
		return nil, nil
	})
	if err != nil {
		return Report{}, &NotStartedError{OperationID: task.OperationID, Step: task.Step, Err: err}
	}
	done := Report{OperationID: op.ID, Done: true, Step: task.Step}
	switch {
	case op.State.Terminal() || op.State == operation.OutcomeUnknown:
		return done, nil // settled elsewhere: do no more work and record nothing
	case op.CancelRequested:
		done.Outcome = operation.KindCanceled
		return done, nil
	}
	rep, err := r.Work.Step(ctx, op, task.Step)
	if err != nil {
		return Report{}, fmt.Errorf("step %d of %s: %w", task.Step, task.OperationID, err)
	}
	rep.OperationID = op.ID
	return rep, nil
}

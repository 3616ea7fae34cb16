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

// Handle runs one step.
func (r *Runner) Handle(ctx context.Context, task Task) (Report, error) {
	op, err := facts.Update(ctx, r.Store, task.OperationID, func(op operation.Operation) ([]operation.Fact, error) {
		if op.State == operation.Accepted || op.State == operation.Dispatched {
			return []operation.Fact{{Kind: operation.KindStarted, At: r.Now(), Source: operation.SourceExecutor}}, nil
		}
		return nil, nil
	})
	if err != nil {
		return Report{}, fmt.Errorf("step %d of %s: %w", task.Step, task.OperationID, err)
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

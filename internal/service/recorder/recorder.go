// Package recorder turns the end of an execution into the operation's terminal fact. It
// reads the workflow's state whichever way a worker failure arrived: through the workflow's
// Catch (Step Functions on AWS: {"Error","Cause"}) or as the function's error payload in the
// task result (emulators that ignore function errors: {"errorType","errorMessage"}), so the
// recorded outcome is the same in both places.
package recorder

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/worker"
)

// Input is the workflow state handed to the recorder (internal/aws/stepfunctions): the last step's
// report under task, and a caught error under error.
type Input struct {
	OperationID string     `json:"operationId"`
	Step        int        `json:"step"`
	Task        *Task      `json:"task,omitempty"`
	Error       *TaskError `json:"error,omitempty"`
}

// Task holds a step's result as the workflow stored it.
type Task struct {
	Report *worker.Report `json:"report,omitempty"`
}

func (in Input) report() *worker.Report {
	if in.Task == nil {
		return nil
	}
	return in.Task.Report
}

// TaskError is what a Catch puts in the state.
type TaskError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Recorder appends terminal facts.
type Recorder struct {
	Store facts.Store
	Now   func() time.Time
	Log   *slog.Logger
}

// Outcome decides the fact an execution's end calls for; ok is false when there is nothing
// to record (the operation was settled elsewhere). A worker failure is an unknown outcome:
// the step may have acted before it failed, and a blind retry could act twice. The one
// exception is a worker that failed before its step began (worker.NotStartedErrorType):
// that step did nothing, so the operation failed (worker_unavailable).
func Outcome(in Input) (f operation.Fact, ok bool) {
	failure := ""
	switch {
	case in.Error != nil:
		failure = in.Error.Error
	case in.report() == nil:
		failure = "no report"
	case in.report().ErrorType != "":
		failure = in.report().ErrorType
	}
	if failure == worker.NotStartedErrorType {
		detail := "The worker could not check the operation before its first step, so no work ran."
		if in.Step > 0 {
			detail = fmt.Sprintf("The worker could not check the operation before step %d of its work, so that step never ran; the steps before it had completed.", in.Step+1)
		}
		return operation.Fact{Kind: operation.KindFailed, Source: operation.SourceExecutor,
			Problem: operation.NewProblem("worker_unavailable", "Worker unavailable", detail)}, true
	}
	if failure != "" {
		return operation.Fact{Kind: operation.KindOutcomeUnknown, Source: operation.SourceExecutor,
			Problem: operation.NewProblem("worker_error", "Worker failed",
				"The worker failed ("+failure+") after it may have acted; the outcome is unknown until it is reconciled.")}, true
	}
	switch r := in.report(); r.Outcome {
	case operation.KindSucceeded, operation.KindFailed, operation.KindOutcomeUnknown, operation.KindCanceled:
		return operation.Fact{Kind: r.Outcome, Source: operation.SourceExecutor, Result: r.Result, Problem: r.Problem}, true
	}
	return operation.Fact{}, false
}

// Handle records the outcome of in. A fact that can no longer follow (the operation was
// canceled or settled meanwhile) is dropped: a late result never overwrites a decision.
func (r *Recorder) Handle(ctx context.Context, in Input) error {
	f, ok := Outcome(in)
	if !ok {
		return nil
	}
	f.At = r.Now()
	op, err := facts.Update(ctx, r.Store, in.OperationID, func(op operation.Operation) ([]operation.Fact, error) {
		if _, err := operation.Next(op.State, f.Kind); err != nil {
			return nil, nil
		}
		return []operation.Fact{f}, nil
	})
	if err != nil {
		return err
	}
	r.Log.InfoContext(ctx, "recorded", "operation_id", in.OperationID, "outcome", f.Kind, "state", op.State)
	return nil
}

// Command worker-demo-task is demo.task's worker: `steps` steps of `sleepMs` each (with a
// wait of `waitSeconds` after the first), then the asked-for outcome. It speaks the step protocol through the public worker package, as any
// team's worker does, and never touches longrun's table.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/longrun-dev/longrun/worker"
)

// input is demo.task's input; longrun has validated it and applied its defaults.
type input struct {
	Target  string `json:"target"`
	Steps   int    `json:"steps"`   // default 1; 0 is taken as 1
	SleepMs int    `json:"sleepMs"` // default 0
	Outcome string `json:"outcome"` // succeed (the default), fail or unknown
	// WaitSeconds is how long the task waits after its first step, with nothing running
	// (a continue report's delay); default 0.
	WaitSeconds int `json:"waitSeconds"`
}

// carried is the state a step carries to the next: how many steps are done.
type carried struct {
	Done int `json:"done"`
}

// errResultLost is how the "unknown" outcome fails its last step: after the effect, as
// when a worker dies after acting. The invocation fails, and longrun records
// outcome_unknown (worker_error).
var errResultLost = errors.New("the connection dropped after the effect; the result is lost")

func demoTask(ctx context.Context, step worker.Step, in input) (worker.Report, error) {
	steps := max(in.Steps, 1)
	switch in.Outcome {
	case "", "succeed", "fail", "unknown":
	default:
		return worker.Report{}, &worker.Problem{Code: worker.CodeInvalidInput, Title: "The operation's input is not what the worker reads.",
			Detail: fmt.Sprintf("outcome %q is not succeed, fail or unknown.", in.Outcome)}
	}
	if step.Number > 1 {
		var c carried
		ok, err := step.State(&c)
		if err != nil {
			return worker.Report{}, err
		}
		if !ok || c.Done != step.Number-1 {
			return worker.Report{}, fmt.Errorf("step %d of %s carries %s, not the previous step's {\"done\":%d}",
				step.Number, step.OperationID, stateOf(ok, c), step.Number-1)
		}
	}
	select {
	case <-ctx.Done():
		return worker.Report{}, ctx.Err()
	case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
	}
	if step.Number < steps {
		next := worker.Continue(carried{Done: step.Number}).WithProgress(worker.Progress{
			TotalSteps: steps, Message: fmt.Sprintf("step %d of %d done", step.Number, steps),
		})
		if step.Number == 1 && in.WaitSeconds > 0 {
			next = next.After(time.Duration(in.WaitSeconds) * time.Second)
		}
		return next, nil
	}
	switch in.Outcome {
	case "fail":
		return worker.Fail("demo_failed", "Demo task failed", "The demo task was asked to fail."), nil
	case "unknown":
		return worker.Report{}, errResultLost
	}
	return worker.Succeed(map[string]any{"target": in.Target, "steps": steps}).
		WithProgress(worker.Progress{TotalSteps: steps}), nil
}

func stateOf(ok bool, c carried) string {
	if !ok {
		return "no state"
	}
	return fmt.Sprintf(`{"done":%d}`, c.Done)
}

func main() { worker.Start(demoTask) }

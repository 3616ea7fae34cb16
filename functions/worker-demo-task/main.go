// Command worker-demo-task is demo.task's worker: `steps` steps of `sleepMs` each (with a
// wait of `waitSeconds` after the first), then the asked-for outcome. With `await`, a
// first step waits for that signal (approval) before any work. It speaks the step
// protocol through the public worker package, as any team's worker does, and never
// touches longrun's table.
package main

import (
	"context"
	"encoding/json"
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
	Outcome string `json:"outcome"` // succeed (the default), fail, unknown or flaky
	// WaitSeconds is how long the task waits after its first step, with nothing running
	// (a continue report's delay); default 0.
	WaitSeconds int `json:"waitSeconds"`
	// Await is a signal to wait for before any work ("" or approval), at most
	// AwaitSeconds (0: 600).
	Await        string `json:"await"`
	AwaitSeconds int    `json:"awaitSeconds"`
}

// carried is the state a step carries to the next: how many work steps are done, and the
// approval's data once it came.
type carried struct {
	Done   int             `json:"done"`
	Signal json.RawMessage `json:"signal,omitempty"`
}

// approval is the approval signal's data (its schema in builtin.types.yaml).
type approval struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

// errResultLost is how the "unknown" outcome fails its last step: after the effect, as
// when a worker dies after acting. The invocation fails, and longrun records
// outcome_unknown (worker_error).
var errResultLost = errors.New("the connection dropped after the effect; the result is lost")

func demoTask(ctx context.Context, step worker.Step, in input) (worker.Report, error) {
	steps := max(in.Steps, 1)
	switch in.Outcome {
	case "", "succeed", "fail", "unknown", "flaky":
	default:
		return worker.Report{}, &worker.Problem{Code: worker.CodeInvalidInput, Title: "The operation's input is not what the worker reads.",
			Detail: fmt.Sprintf("outcome %q is not succeed, fail, unknown or flaky.", in.Outcome)}
	}
	// With await, step 1 only waits and step 2 hears how the wait ended; the work's steps
	// come after, numbered from 1 again.
	work := step.Number
	var c carried
	if in.Await != "" {
		if step.Number == 1 {
			if s, ok := step.Signal(in.Await); ok {
				// It came before anyone waited for it (step 1 is given it): no wait.
				return worker.Continue(carried{Signal: s.Data}), nil
			}
			timeout := 600 * time.Second
			if in.AwaitSeconds > 0 {
				timeout = time.Duration(in.AwaitSeconds) * time.Second
			}
			return worker.Continue(carried{}).AwaitSignal(in.Await, timeout), nil
		}
		work = step.Number - 1
	}
	if step.Number > 1 {
		ok, err := step.State(&c)
		if err != nil {
			return worker.Report{}, err
		}
		if !ok || c.Done != work-1 {
			return worker.Report{}, fmt.Errorf("step %d of %s carries %s, not the previous step's {\"done\":%d}",
				step.Number, step.OperationID, stateOf(ok, c), work-1)
		}
	}
	if in.Await != "" && step.Number == 2 {
		if s, ok := step.Signal(in.Await); ok {
			c.Signal = s.Data
		}
		if rep, err := heard(c.Signal, in.Await); rep != nil || err != nil {
			return *rep, err
		}
	}
	select {
	case <-ctx.Done():
		return worker.Report{}, ctx.Err()
	case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
	}
	// longrun counts every step, the one that waited for the signal among them, and the
	// total the worker reports is never below that count.
	total := steps
	if in.Await != "" {
		total++
	}
	if work < steps {
		next := worker.Continue(carried{Done: work, Signal: c.Signal}).WithProgress(worker.Progress{
			TotalSteps: total, Message: fmt.Sprintf("step %d of %d done", work, steps),
		})
		if work == 1 && in.WaitSeconds > 0 {
			next = next.After(time.Duration(in.WaitSeconds) * time.Second)
		}
		return next, nil
	}
	switch in.Outcome {
	case "fail":
		return worker.Fail("demo_failed", "Demo task failed", "The demo task was asked to fail."), nil
	case "unknown":
		return worker.Report{}, errResultLost
	case "flaky":
		// Lost on its first attempt; an operator who had it run again (a retry) finds it
		// succeeds, as when the first attempt never reached the downstream system.
		if step.Attempt == 1 {
			return worker.Report{}, errResultLost
		}
	}
	result := map[string]any{"target": in.Target, "steps": steps}
	if step.Attempt > 1 {
		result["attempt"] = step.Attempt
	}
	if c.Signal != nil {
		result["signal"] = c.Signal
	}
	return worker.Succeed(result).WithProgress(worker.Progress{TotalSteps: total}), nil
}

// heard is the report that ends the work when the wait for signal name did not end in an
// approval: data is the signal's, nil when none came (nil report: approved, go on).
func heard(data json.RawMessage, name string) (*worker.Report, error) {
	if data == nil {
		r := worker.Fail("approval_timeout", "No approval came", fmt.Sprintf("No %s signal came before the wait timed out.", name))
		return &r, nil
	}
	var a approval
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("the %s signal's data: %w", name, err)
	}
	if !a.Approved {
		detail := "The work was not approved."
		if a.By != "" {
			detail = fmt.Sprintf("The work was not approved by %s.", a.By)
		}
		r := worker.Fail("not_approved", "Not approved", detail)
		return &r, nil
	}
	return nil, nil
}

func stateOf(ok bool, c carried) string {
	if !ok {
		return "no state"
	}
	return fmt.Sprintf(`{"done":%d}`, c.Done)
}

func main() { worker.Start(demoTask) }

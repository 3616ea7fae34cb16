// Command pollworker is the end-to-end tests' worker for the types of
// internal/e2e/testdata/e2e.types.yaml, written against the public worker package as a
// team would write its own: it carries state from step to step, waits between steps,
// reports progress, and ends as its input asks.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/longrun-dev/longrun/worker"
)

type input struct {
	Name    string `json:"name"`
	Steps   int    `json:"steps"`
	Outcome string `json:"outcome"`
	Spec    *struct {
		Region string `json:"region"`
	} `json:"spec"`
}

// carried is the state each step hands the next: every step number so far, so the last can
// prove that state went from step to step.
type carried struct {
	Seen []int `json:"seen"`
}

func step(ctx context.Context, s worker.Step, in input) (worker.Report, error) {
	var st carried
	if _, err := s.State(&st); err != nil {
		return worker.Report{}, err
	}
	if len(st.Seen) != s.Number-1 {
		return worker.Report{}, fmt.Errorf("step %d got the state of %d steps", s.Number, len(st.Seen))
	}
	st.Seen = append(st.Seen, s.Number)
	progress := worker.Progress{TotalSteps: in.Steps, Message: fmt.Sprintf("step %d of %d", s.Number, in.Steps)}
	switch in.Outcome {
	case "forever", "overstep":
		next := worker.Continue(st).WithProgress(worker.Progress{Message: "still going"})
		if in.Outcome == "forever" {
			next = next.Wait() // the type's stepDelay, until the deadline stops it
		}
		return next, nil
	case "hang":
		select { // longer than the type's stepTimeout
		case <-ctx.Done():
			return worker.Report{}, ctx.Err()
		case <-time.After(4 * time.Second):
		}
		return worker.Continue(st), nil
	}
	if s.Number < in.Steps {
		next := worker.Continue(st).WithProgress(progress)
		if s.Number == 1 {
			next = next.Wait() // as when polling something that is not ready yet
		}
		return next, nil
	}
	switch in.Outcome {
	case "fail":
		return worker.Report{}, &worker.Problem{Code: "poll_failed", Title: "Poll failed", Detail: "The test asked to fail."}
	case "lost":
		return worker.ResultLost("The test's effect happened and its answer was lost."), nil
	case "crash":
		os.Exit(3) // the process dies mid-step, after its effect
	}
	region := ""
	if in.Spec != nil {
		region = in.Spec.Region
	}
	return worker.Succeed(map[string]any{"name": in.Name, "seen": st.Seen, "region": region,
		"deadline": s.Deadline.Format(time.RFC3339), "maxSteps": s.MaxSteps}).WithProgress(progress), nil
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, errors.New("pollworker takes no arguments"))
		os.Exit(2)
	}
	worker.Start(step)
}

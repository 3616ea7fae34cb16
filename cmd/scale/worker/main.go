// Command worker is the scale model's worker (cmd/scale/scale.types.yaml), written against
// the public worker package as a team's would be: each step sleeps, the first may ask to
// wait, the carried state proves that steps arrive in order, and the last ends as the input
// asks. It has no effect outside itself, so a step delivered twice is harmless.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/longrun-dev/longrun/worker"
)

type input struct {
	Name    string `json:"name"`
	Steps   int    `json:"steps"`
	SleepMs int    `json:"sleepMs"`
	Wait    bool   `json:"wait"`
	Outcome string `json:"outcome"`
}

type carried struct {
	Done int `json:"done"`
}

func step(ctx context.Context, s worker.Step, in input) (worker.Report, error) {
	var st carried
	if _, err := s.State(&st); err != nil {
		return worker.Report{}, err
	}
	if st.Done != s.Number-1 {
		return worker.Report{}, fmt.Errorf("step %d got the state of %d steps", s.Number, st.Done)
	}
	select {
	case <-ctx.Done():
		return worker.Report{}, ctx.Err()
	case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
	}
	st.Done = s.Number
	if s.Number < in.Steps {
		next := worker.Continue(st).WithProgress(worker.Progress{TotalSteps: in.Steps})
		if s.Number == 1 && in.Wait {
			next = next.Wait()
		}
		return next, nil
	}
	switch in.Outcome {
	case "fail":
		return worker.Report{}, &worker.Problem{Code: "scale_failed", Title: "Failed as planned", Detail: "The scale model asked this operation to fail."}
	case "lost":
		return worker.ResultLost("The scale model asked this operation to lose its result."), nil
	}
	return worker.Succeed(map[string]any{"name": in.Name, "steps": st.Done}), nil
}

func main() { worker.Start(step) }

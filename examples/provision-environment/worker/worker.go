package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/longrun-dev/longrun/worker"

	"example.com/provision-environment/provisioner"
)

// Input is provision.environment's input, as longrun.types.yaml's schema allows it.
type Input struct {
	Project     string `json:"project"`
	Environment string `json:"environment"`
	Template    string `json:"template"`
}

// state is what one step hands the next.
type state struct {
	EnvironmentID string `json:"environmentId"`
	Ready         bool   `json:"ready"`
}

// progress says how far the work has come. The number of steps depends on how long the
// provisioner takes (one step per poll), so the worker reports a percentage, not a total.
func progress(percent float64, message string) worker.Progress {
	return worker.Progress{Percent: &percent, Message: message}
}

// Steps is the worker's step function over a provisioner. Step 1 asks for the environment
// (keyed by the operation id, so a step delivered twice creates one); the steps after poll
// it, asking longrun to wait the type's stepDelay between polls instead of sleeping; the
// step after it is ready returns its URL.
func Steps(p provisioner.Provisioner) worker.Func[Input] {
	return func(ctx context.Context, step worker.Step, in Input) (worker.Report, error) {
		var st state
		if _, err := step.State(&st); err != nil {
			return worker.Report{}, err
		}
		switch {
		case st.EnvironmentID == "":
			env, err := p.Create(ctx, step.OperationID, provisioner.Request{Project: in.Project, Environment: in.Environment, Template: in.Template})
			if errors.Is(err, provisioner.ErrUnknownTemplate) {
				// The provisioner refused: nothing was created, so this is a plain failure. The
				// detail does not repeat the template: the caller chose that text, and the
				// operation shows its input anyway.
				return worker.Fail("unknown_template", "Unknown template", "The provisioner has no template of the name the input gives."), nil
			}
			if err != nil {
				return worker.Report{}, err // it may have been created: longrun says outcome_unknown
			}
			return worker.Continue(state{EnvironmentID: env.ID}).WithProgress(progress(10, "environment requested")), nil
		case !st.Ready:
			env, err := p.Get(ctx, st.EnvironmentID)
			if err != nil {
				return worker.Report{}, err
			}
			if env.Status != "ready" {
				return worker.Continue(st).Wait().WithProgress(progress(50, "waiting for the provisioner")), nil
			}
			st.Ready = true
			return worker.Continue(st).WithProgress(progress(90, "environment ready")), nil
		default:
			return worker.Succeed(map[string]string{"url": fmt.Sprintf("https://%s.%s.example.test", in.Environment, in.Project)}).
				WithProgress(progress(100, "done")), nil
		}
	}
}

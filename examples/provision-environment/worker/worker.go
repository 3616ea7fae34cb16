package main

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	// Unsent counts the steps in a row whose create never reached the provisioner.
	Unsent int `json:"unsent,omitempty"`
}

// MaxUnsent is how many steps in a row may fail to reach the provisioner with the create
// before the operation fails: the provisioner is down, and nothing was asked of it.
const MaxUnsent = 5

// unsentDelay is how long longrun waits before the step after the n-th create in a row that
// was never sent: 2 s, doubling (30 s in all before the last try).
func unsentDelay(n int) time.Duration { return 2 * time.Second << (n - 1) }

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
			if errors.Is(err, provisioner.ErrNotSent) {
				// The request never left (connection refused, a name that does not resolve):
				// the provisioner did nothing, so trying again is safe, and giving up is a
				// plain failure, not an unknown outcome.
				st.Unsent++
				if st.Unsent >= MaxUnsent {
					return worker.Fail("provisioner_unreachable", "The provisioner could not be reached",
						fmt.Sprintf("%d requests in a row could not be sent to the provisioner; nothing was created.", st.Unsent)), nil
				}
				return worker.Continue(st).After(unsentDelay(st.Unsent)).WithProgress(progress(0, "provisioner unreachable; trying again")), nil
			}
			if err != nil {
				// The request may have reached the provisioner (a timeout or a reset after it
				// was written): the environment may have been created, and only longrun's
				// outcome_unknown says that honestly.
				return worker.Report{}, err
			}
			return worker.Continue(state{EnvironmentID: env.ID}).WithProgress(progress(10, "environment requested")), nil
		case !st.Ready:
			env, err := p.Get(ctx, st.EnvironmentID)
			if errors.Is(err, provisioner.ErrNotSent) {
				// A poll that never left is polled again after the type's stepDelay, as one
				// that found the environment not ready yet.
				return worker.Continue(st).Wait().WithProgress(progress(50, "provisioner unreachable; polling again")), nil
			}
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

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
	// Production environments wait for an operator's approval before anything is
	// provisioned, and the provisioner says when they are done through a callback.
	Production bool `json:"production"`
	// ApprovalTimeoutSeconds is how long a production environment waits for its approval.
	// longrun fills in the schema's default (3600); 0, in a request a test builds, means
	// DefaultApprovalTimeout too.
	ApprovalTimeoutSeconds int `json:"approvalTimeoutSeconds"`
}

// The signals longrun.types.yaml declares.
const (
	// SignalApproval is an operator's decision on a production environment (Approval), from
	// anyone but the operation's creator.
	SignalApproval = "approval"
	// SignalProvisioned is the provisioner's callback: the environment (a
	// provisioner.Environment), ready or failed.
	SignalProvisioned = "provisioned"
)

// Approval is the approval signal's data.
type Approval struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
	Reason   string `json:"reason"`
}

// state is what one step hands the next.
type state struct {
	EnvironmentID string `json:"environmentId"`
	Ready         bool   `json:"ready"`
	// Unsent counts the steps in a row whose create never reached the provisioner.
	Unsent int `json:"unsent,omitempty"`
	// Approved: a production environment's approval came; ApprovedBy is the operator who
	// sent it. (Each signal is given to one step only: what later steps need of it is
	// carried here.)
	Approved   bool   `json:"approved,omitempty"`
	ApprovedBy string `json:"approvedBy,omitempty"`
	// Callback: the provisioner was handed the callback URL of SignalProvisioned, so the
	// steps wait for it instead of polling.
	Callback bool `json:"callback,omitempty"`
}

// MaxUnsent is how many steps in a row may fail to reach the provisioner with the create
// before the operation fails: the provisioner is down, and nothing was asked of it.
const MaxUnsent = 5

// DefaultApprovalTimeout is how long a production environment waits for its approval when
// the input does not say (the schema's default).
const DefaultApprovalTimeout = time.Hour

// CallbackTimeout is how long a step waits for the provisioner's callback. Past it the
// webhook may have been lost, and the steps poll the provisioner instead: it still knows.
const CallbackTimeout = 30 * time.Minute

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
//
// A production environment first waits for an operator's approval (the signal approval):
// nothing runs meanwhile. Approved, the same step asks for the environment, handing the
// provisioner the callback URL of the signal provisioned, and waits for that instead of
// polling; the step it wakes returns the URL. Rejected, or with no approval in time, the
// operation fails and nothing was provisioned.
func Steps(p provisioner.Provisioner) worker.Func[Input] {
	return func(ctx context.Context, step worker.Step, in Input) (worker.Report, error) {
		var st state
		if _, err := step.State(&st); err != nil {
			return worker.Report{}, err
		}
		if in.Production && !st.Approved {
			if rep, approved, err := approval(step, in, &st); !approved {
				return rep, err
			}
		}
		switch {
		case st.EnvironmentID == "":
			return create(ctx, p, step, in, st)
		case st.Callback && !st.Ready:
			return provisioned(ctx, p, step, in, st)
		case !st.Ready:
			return poll(ctx, p, st)
		default:
			return done(in, st), nil
		}
	}
}

// approval settles a production environment's approval: true when an operator approved it
// (st then says who), or else the report to return, a wait for the approval or a failure.
// An approval that came before any step waited for it counts as well: longrun keeps it for
// the next step.
func approval(step worker.Step, in Input, st *state) (worker.Report, bool, error) {
	sig, ok := step.Signal(SignalApproval)
	switch {
	case ok:
		var a Approval
		if err := sig.Decode(&a); err != nil {
			return worker.Report{}, false, err
		}
		if !a.Approved {
			// The reason is the operator's, not the caller's: the operation's readers want it.
			detail := "An operator rejected the production environment; nothing was provisioned."
			if a.Reason != "" {
				detail += " Reason: " + a.Reason
			}
			return worker.Fail("not_approved", "The production environment was not approved", detail), false, nil
		}
		st.Approved, st.ApprovedBy = true, sig.Sender
		return worker.Report{}, true, nil
	case step.Awaited != nil && step.Awaited.Signal == SignalApproval && step.Awaited.TimedOut:
		return worker.Fail("approval_timeout", "No approval in time",
			fmt.Sprintf("No operator approved the production environment within %v; nothing was provisioned.", approvalTimeout(in))), false, nil
	default:
		return worker.Continue(*st).AwaitSignal(SignalApproval, approvalTimeout(in)).
			WithProgress(progress(0, "waiting for an operator's approval")), false, nil
	}
}

func approvalTimeout(in Input) time.Duration {
	if in.ApprovalTimeoutSeconds <= 0 {
		return DefaultApprovalTimeout
	}
	return time.Duration(in.ApprovalTimeoutSeconds) * time.Second
}

// create asks the provisioner for the environment. A production one is handed the callback
// URL of SignalProvisioned and then waited for; the others are polled. (A production
// environment takes long, and polling it every stepDelay would spend the type's maxSteps;
// if a step ever came without the callback URL, it would be polled all the same.)
func create(ctx context.Context, p provisioner.Provisioner, step worker.Step, in Input, st state) (worker.Report, error) {
	req := provisioner.Request{Project: in.Project, Environment: in.Environment, Template: in.Template}
	if in.Production {
		req.CallbackURL, _ = step.CallbackURL(SignalProvisioned)
	}
	env, err := p.Create(ctx, step.OperationID, req)
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
	st.EnvironmentID, st.Unsent = env.ID, 0
	if req.CallbackURL != "" {
		st.Callback = true
		return awaitProvisioned(st), nil
	}
	return worker.Continue(st).WithProgress(progress(10, "environment requested")), nil
}

func awaitProvisioned(st state) worker.Report {
	return worker.Continue(st).AwaitSignal(SignalProvisioned, CallbackTimeout).
		WithProgress(progress(10, "environment requested; waiting for the provisioner's callback"))
}

// provisioned is the step after a wait for the provisioner's callback.
func provisioned(ctx context.Context, p provisioner.Provisioner, step worker.Step, in Input, st state) (worker.Report, error) {
	sig, ok := step.Signal(SignalProvisioned)
	if !ok {
		if a := step.Awaited; a != nil && a.Signal == SignalProvisioned && a.TimedOut {
			// No callback in CallbackTimeout: it may have been lost. Poll from now on.
			st.Callback = false
			return poll(ctx, p, st)
		}
		return awaitProvisioned(st), nil
	}
	var env provisioner.Environment
	if err := sig.Decode(&env); err != nil {
		return worker.Report{}, err
	}
	switch {
	case env.ID != st.EnvironmentID:
		// Not news of this operation's environment: wait on for it.
		return awaitProvisioned(st), nil
	case env.Status == "failed":
		return provisioningFailed(env), nil
	default: // ready: the schema allows no other status
		return done(in, st), nil
	}
}

// poll asks the provisioner whether the environment is ready.
func poll(ctx context.Context, p provisioner.Provisioner, st state) (worker.Report, error) {
	env, err := p.Get(ctx, st.EnvironmentID)
	if errors.Is(err, provisioner.ErrNotSent) {
		// A poll that never left is polled again after the type's stepDelay, as one
		// that found the environment not ready yet.
		return worker.Continue(st).Wait().WithProgress(progress(50, "provisioner unreachable; polling again")), nil
	}
	if err != nil {
		return worker.Report{}, err
	}
	switch env.Status {
	case "failed":
		return provisioningFailed(env), nil
	case "ready":
		st.Ready = true
		return worker.Continue(st).WithProgress(progress(90, "environment ready")), nil
	default:
		return worker.Continue(st).Wait().WithProgress(progress(50, "waiting for the provisioner")), nil
	}
}

// provisioningFailed is the failure of an environment the provisioner could not make (and
// cleaned up after, as it promises).
func provisioningFailed(env provisioner.Environment) worker.Report {
	detail := "The provisioner could not make the environment."
	if env.Reason != "" {
		detail += " It says: " + env.Reason
	}
	return worker.Fail("provisioning_failed", "The environment could not be provisioned", detail)
}

func done(in Input, st state) worker.Report {
	result := map[string]string{"url": fmt.Sprintf("https://%s.%s.example.test", in.Environment, in.Project)}
	if st.ApprovedBy != "" {
		result["approvedBy"] = st.ApprovedBy
	}
	return worker.Succeed(result).WithProgress(progress(100, "done"))
}

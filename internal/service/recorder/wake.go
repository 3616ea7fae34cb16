package recorder

import (
	"errors"
	"fmt"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/core/step"
)

// ErrNotAwaiting is Wake's answer for an operation that waits for no signal and has no
// retry to run.
var ErrNotAwaiting = errors.New("recorder: the operation waits for no signal and no retry")

// Wake is the execution that ends op's wait for a signal (the signal came, or the wait
// timed out), or that runs the step an operator retried, for the dispatcher or the
// reconciler to start on the workflow's own state machine: the operation's next execution after the one that asked to wait, named after
// the operation and its count, so that both may start it and only one runs. Its input
// names the step after the one that asked, with the state that step carried; its gate
// gives that step the signals and says what the wait came to. workflow is the type's
// worker.
func Wake(s *seal.Sealer, op operation.Operation, workflow string) (NextExecution, []byte, error) {
	in, err := WakeInput(op)
	if err != nil {
		return NextExecution{}, nil, err
	}
	next := NextExecution{Workflow: workflow, Name: fmt.Sprintf("%s-%d", op.ID, in.Continuation)}
	if in, err = SealInput(s, in); err != nil {
		return NextExecution{}, nil, err
	}
	payload, err := marshal(in)
	return next, payload, err
}

// WakeInput is the input of Wake's execution, unsealed: the reconciler carries it on as it
// carries on any execution, following one that ended before it named itself (its Run
// throttled) to the next.
func WakeInput(op operation.Operation) (Input, error) {
	k := max(continuationOf(op.ID, op.ExecutionName()), 0) + 1
	if r := op.Retrying; r != nil && op.State == operation.Running {
		// The step runs again as it ran before: the gate moves on to it from the step
		// before, with the state it was given, and finds its attempt in the fold.
		return Input{OperationID: op.ID, CorrelationID: op.CorrelationID, Continuation: k,
			Gate: &Gate{Decision: &Decision{Next: NextRetry,
				Request: &step.Request{OperationID: op.ID, Step: r.Step, State: r.State}}}}, nil
	}
	if !op.Awaits() {
		return Input{}, fmt.Errorf("%w: %s is %s", ErrNotAwaiting, op.ID, op.State)
	}
	return Input{OperationID: op.ID, CorrelationID: op.CorrelationID, Continuation: k,
		Gate: &Gate{Decision: &Decision{Next: NextAwait,
			Request: &step.Request{OperationID: op.ID, Step: op.Awaiting.Step + 1, State: op.Awaiting.State}}}}, nil
}

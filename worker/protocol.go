package worker

import (
	"encoding/json"
	"fmt"
	"time"
)

// Protocol is the version of the step protocol this package speaks: the protocol member of
// every step request.
const Protocol = "longrun.step.v1"

// Status is a step report's status.
type Status string

// The statuses of a step report.
const (
	// StatusContinue: the work is not done; longrun invokes the next step (at once, after
	// the type's stepDelay, or after the report's delay), carrying the report's state.
	StatusContinue Status = "continue"
	// StatusSucceeded: the work is done; the report's result is the operation's result.
	StatusSucceeded Status = "succeeded"
	// StatusFailed: the work did not and will not happen; the report's problem says why.
	StatusFailed Status = "failed"
	// StatusOutcomeUnknown: the work may have happened and its result is lost. longrun
	// records outcome_unknown and never retries it blindly.
	StatusOutcomeUnknown Status = "outcome_unknown"
)

// The protocol's limits on a report.
const (
	// MaxStateBytes is the most a continue report's state may take, as compact JSON.
	MaxStateBytes = 32 << 10
	// MaxResultBytes is the most a succeeded report's result may take, as compact JSON.
	MaxResultBytes = 64 << 10
	// MaxDelay is the longest delay a continue report may ask for.
	MaxDelay = 24 * time.Hour
	// MaxTitleChars, MaxDetailChars and MaxMessageChars are the most characters (Unicode
	// code points) of a problem's title, a problem's detail and a progress message. [Fail],
	// [ResultLost] and [Report.WithProgress] cut longer text to its limit.
	MaxTitleChars   = 200
	MaxDetailChars  = 2000
	MaxMessageChars = 200
)

// Problem codes this package reports by itself.
const (
	// CodeInvalidInput: the request's input does not decode into the Func's input type.
	CodeInvalidInput = "invalid_input"
	// CodeInvalidRequest: the invocation is not a step request of this Protocol.
	CodeInvalidRequest = "invalid_request"
	// CodeResultLost is the problem code of [ResultLost].
	CodeResultLost = "result_lost"
	// CodeStepTimeout: the step's function failed after its stepTimeout had passed (Run
	// ends its context then); it may have acted, so the report is outcome_unknown.
	CodeStepTimeout = "step_timeout"
)

// Request is a step request as longrun sends it: the invocation's payload. A worker reads it
// through [Step]; tests build one to [Run] a Func.
type Request struct {
	// Protocol is always [Protocol].
	Protocol string `json:"protocol"`
	// OperationID is the operation's id ("op_…"): with Step, the deduplication identity of
	// whatever the step does downstream.
	OperationID string `json:"operationId"`
	// Type and Version are the operation's type and its version.
	Type    string `json:"type"`
	Version int    `json:"version"`
	// Input is the operation's validated input, the type schema's defaults applied.
	Input json.RawMessage `json:"input"`
	// Step is the number of this step, from 1; MaxSteps is the most the type allows.
	Step     int `json:"step"`
	MaxSteps int `json:"maxSteps"`
	// State is what the previous step's report carried; absent on step 1 or when none was.
	State json.RawMessage `json:"state,omitempty"`
	// Deadline is the operation's deadline, after which longrun starts no further step. It
	// is sent in UTC with milliseconds.
	Deadline time.Time `json:"deadline"`
	// StepTimeoutSeconds is how long this invocation may run.
	StepTimeoutSeconds int `json:"stepTimeoutSeconds"`
	// CorrelationID is the operation's correlation id, the same in every step, event and
	// longrun log line about it; absent for operations admitted before longrun recorded it.
	CorrelationID string `json:"correlationId,omitempty"`
}

// deadlineLayout is how a request writes its deadline: UTC, milliseconds.
const deadlineLayout = "2006-01-02T15:04:05.000Z"

// MarshalJSON writes the request as longrun sends it, the deadline in UTC with milliseconds.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	return json.Marshal(struct {
		plain
		Deadline string `json:"deadline"`
	}{plain(r), r.Deadline.UTC().Format(deadlineLayout)})
}

// check rejects what is not a step request of this protocol.
func (r Request) check() error {
	switch {
	case r.Protocol != Protocol:
		return fmt.Errorf("protocol %q is not %q", r.Protocol, Protocol)
	case r.OperationID == "":
		return fmt.Errorf("operationId is missing")
	case r.Step < 1:
		return fmt.Errorf("step %d is not a step number (they start at 1)", r.Step)
	}
	return nil
}

// Step is what a Func knows about the step it runs.
type Step struct {
	OperationID string
	Type        string
	Version     int
	// Number is the step's number, from 1; MaxSteps is the most the type allows.
	Number   int
	MaxSteps int
	// Deadline is the operation's: longrun starts no step after it.
	Deadline time.Time
	// StepTimeout is how long this invocation may run (its context ends then too).
	StepTimeout time.Duration
	// CorrelationID is the operation's correlation id ("" when the request has none): log
	// it as correlation_id, and one query finds the worker's lines with longrun's.
	CorrelationID string

	state json.RawMessage
}

func (r Request) step() Step {
	return Step{
		OperationID:   r.OperationID,
		Type:          r.Type,
		Version:       r.Version,
		Number:        r.Step,
		MaxSteps:      r.MaxSteps,
		Deadline:      r.Deadline,
		StepTimeout:   time.Duration(r.StepTimeoutSeconds) * time.Second,
		CorrelationID: r.CorrelationID,
		state:         r.State,
	}
}

// State decodes the state the previous step carried into v. It reports false, and leaves v
// alone, when there is none: on the first step, after a step that carried none, or when the
// state carried is JSON null.
func (s Step) State(v any) (bool, error) {
	if !carried(s.state) {
		return false, nil
	}
	if err := json.Unmarshal(s.state, v); err != nil {
		return true, fmt.Errorf("worker: decode the state of step %d: %w", s.Number, err)
	}
	return true, nil
}

// IdempotencyKey is the step's deduplication identity, "<operation id>-step-<number>", to
// pass to whatever the step changes downstream: a redelivered step request has the same
// key, another step or operation another. With longrun's operation ids ("op_" and a ULID)
// it holds only letters, digits, '_' and '-', as most idempotency-key and client-token
// parameters accept.
func (s Step) IdempotencyKey() string { return fmt.Sprintf("%s-step-%d", s.OperationID, s.Number) }

func carried(state json.RawMessage) bool { return len(state) > 0 && string(state) != "null" }

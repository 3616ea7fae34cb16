package worker

import (
	"encoding/json"
	"fmt"
	"slices"
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
	// the type's stepDelay, after the report's delay, or when the signal it awaits arrives),
	// carrying the report's state.
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
	// MaxAwait is the longest a continue report may wait for a signal ([Report.AwaitSignal]);
	// the operation's deadline may end the wait sooner.
	MaxAwait = 30 * 24 * time.Hour
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
	// Attempt is the how-manieth run of this step: absent (0) on its first, 2 and up when an
	// operator had it run again after its outcome was unknown ([Step.Attempt]).
	Attempt int `json:"attempt,omitempty"`
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
	// Signals are the signals that arrived since the previous step was given its own, in
	// the order they arrived; absent when none did.
	Signals []Signal `json:"signals,omitempty"`
	// Awaited is set only on the step right after a report that waited for a signal
	// ([Report.AwaitSignal]): what the wait came to.
	Awaited *Awaited `json:"awaited,omitempty"`
	// Callbacks are the callback URLs of the type's signals that a third party may send
	// without credentials, by signal name; absent when the type has none.
	Callbacks map[string]string `json:"callbacks,omitempty"`
}

// How a signal was sent: its [Signal.Via].
const (
	// ViaAPI: a principal sent it through longrun's API; [Signal.Sender] names it.
	ViaAPI = "api"
	// ViaCallback: someone sent it through the signal's callback URL ([Step.CallbackURL]),
	// without credentials, so it has no sender.
	ViaCallback = "callback"
)

// Signal is a message an operation received from the world while its work ran, such as an
// approval or a webhook's call: the type declares the signals it accepts, who may send
// them and their data's schema. longrun keeps every signal and gives each to one step: the
// first step it sends after the signal arrived, in [Step.Signals].
type Signal struct {
	// Name is the signal's name, as the type declares it.
	Name string `json:"name"`
	// Data is the signal's data, a JSON object valid under the signal's schema; read it
	// with [Signal.Decode].
	Data json.RawMessage `json:"data"`
	// ReceivedAt is when longrun received the signal. It is sent in UTC with milliseconds.
	ReceivedAt time.Time `json:"receivedAt"`
	// Sender is the principal that sent the signal through longrun's API; "" for a signal
	// sent through a callback URL, whose sender holds no credentials.
	Sender string `json:"sender,omitempty"`
	// Via is how the signal was sent: [ViaAPI] or [ViaCallback].
	Via string `json:"via"`
}

// Decode decodes the signal's data into v. Data that is empty (in a Signal a test builds)
// decodes as the empty object.
func (s Signal) Decode(v any) error {
	data := s.Data
	if len(data) == 0 {
		data = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("worker: decode the data of the signal %s: %w", s.Name, err)
	}
	return nil
}

// MarshalJSON writes the signal as longrun sends it: the time it was received in UTC with
// milliseconds, and empty data as the empty object.
func (s Signal) MarshalJSON() ([]byte, error) {
	if len(s.Data) == 0 {
		s.Data = json.RawMessage(`{}`)
	}
	return json.Marshal(struct {
		Name       string          `json:"name"`
		Data       json.RawMessage `json:"data"`
		ReceivedAt string          `json:"receivedAt"`
		Sender     string          `json:"sender,omitempty"`
		Via        string          `json:"via"`
	}{s.Name, s.Data, s.ReceivedAt.UTC().Format(deadlineLayout), s.Sender, s.Via})
}

// Awaited is what a wait for a signal came to, on the step right after it: the signal the
// previous step waited for, and whether the wait's timeout passed before it arrived. When
// it did not, the signal is among the step's signals ([Step.Signal]); when it did, none of
// that name is.
type Awaited struct {
	Signal   string `json:"signal"`
	TimedOut bool   `json:"timedOut"`
}

// deadlineLayout is how a request writes its deadline: UTC, milliseconds.
const deadlineLayout = "2006-01-02T15:04:05.000Z"

// MarshalJSON writes the request as longrun sends it, the deadline and the signals' times in
// UTC with milliseconds.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	return json.Marshal(struct {
		plain
		Deadline string `json:"deadline"`
	}{plain(r), r.Deadline.UTC().Format(deadlineLayout)})
}

// UnmarshalJSON reads a step request as longrun sends it. Members are matched by their exact
// names, as every implementation of the protocol matches them (encoding/json alone would
// match "Step" or "STEP" too), and a member this version does not know is ignored: a later
// version of longrun may send more (docs/worker-protocol.md). The integer members are read
// as JSON Schema reads integers, so 3.0 is 3, as JSON re-serialised on the way may spell it.
// A payload that is not a JSON object is an error; what the members must hold beyond their
// JSON types, [Handler] checks.
func (r *Request) UnmarshalJSON(b []byte) error {
	m, err := members(b, "a step request")
	if err != nil {
		return err
	}
	var req Request
	for _, f := range []struct {
		name string
		v    any
	}{
		{"protocol", &req.Protocol}, {"operationId", &req.OperationID}, {"type", &req.Type},
		{"version", &req.Version}, {"input", &req.Input}, {"step", &req.Step}, {"maxSteps", &req.MaxSteps},
		{"attempt", &req.Attempt}, {"state", &req.State}, {"deadline", &req.Deadline},
		{"stepTimeoutSeconds", &req.StepTimeoutSeconds}, {"correlationId", &req.CorrelationID},
		{"signals", &req.Signals}, {"awaited", &req.Awaited}, {"callbacks", &req.Callbacks},
	} {
		if err := decodeMember(m, f.name, f.v); err != nil {
			return err
		}
	}
	*r = req
	return nil
}

// UnmarshalJSON reads a signal as a step request carries it, its members matched by their
// exact names (see [Request.UnmarshalJSON]).
func (s *Signal) UnmarshalJSON(b []byte) error {
	m, err := members(b, "a signal")
	if err != nil {
		return err
	}
	var sig Signal
	for _, f := range []struct {
		name string
		v    any
	}{{"name", &sig.Name}, {"data", &sig.Data}, {"receivedAt", &sig.ReceivedAt}, {"sender", &sig.Sender}, {"via", &sig.Via}} {
		if err := decodeMember(m, f.name, f.v); err != nil {
			return err
		}
	}
	*s = sig
	return nil
}

// UnmarshalJSON reads what a wait came to as a step request carries it, its members
// matched by their exact names (see [Request.UnmarshalJSON]).
func (a *Awaited) UnmarshalJSON(b []byte) error {
	m, err := members(b, "awaited")
	if err != nil {
		return err
	}
	var aw Awaited
	if err := decodeMember(m, "signal", &aw.Signal); err != nil {
		return err
	}
	if err := decodeMember(m, "timedOut", &aw.TimedOut); err != nil {
		return err
	}
	*a = aw
	return nil
}

// decodeMember decodes the member name of m, if there is one, into v: an *int as a JSON
// Schema integer that fits an int, anything else with encoding/json (where null leaves v
// alone).
func decodeMember(m map[string]json.RawMessage, name string, v any) error {
	raw, ok := m[name]
	if !ok {
		return nil
	}
	if n, isInt := v.(*int); isInt && string(raw) != "null" {
		d, err := parseNumber(raw, name)
		if err != nil {
			return err
		}
		if !d.integral() || d.magnitude() > 18 {
			return fmt.Errorf("%s %.40s is not an integer", name, raw)
		}
		*n = d.int()
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
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
	// Attempt is the how-manieth run of this step, from 1. It is 2 or more when the step's
	// outcome was unknown (it failed, timed out or lost its result after it may have acted)
	// and an operator, having found that it did not take effect, had it run again. The step
	// keeps its identity, (OperationID, Number), so whatever deduplicates on it downstream
	// still sees one request.
	Attempt int
	// Deadline is the operation's: longrun starts no step after it.
	Deadline time.Time
	// StepTimeout is how long this invocation may run (its context ends then too).
	StepTimeout time.Duration
	// CorrelationID is the operation's correlation id ("" when the request has none): log
	// it as correlation_id, and one query finds the worker's lines with longrun's.
	CorrelationID string
	// Signals are the signals that arrived since the previous step was given its own, in
	// the order they arrived. Each signal is given to one step only (and again only when
	// that step is delivered again), so a step that needs one later carries it in its
	// state. [Step.Signal] finds one by name.
	Signals []Signal
	// Awaited is what the previous step's wait for a signal ([Report.AwaitSignal]) came to;
	// nil when the previous step did not wait for one.
	Awaited *Awaited

	state     json.RawMessage
	callbacks map[string]string
}

func (r Request) step() Step {
	return Step{
		OperationID:   r.OperationID,
		Type:          r.Type,
		Version:       r.Version,
		Number:        r.Step,
		MaxSteps:      r.MaxSteps,
		Attempt:       max(r.Attempt, 1),
		Deadline:      r.Deadline,
		StepTimeout:   time.Duration(r.StepTimeoutSeconds) * time.Second,
		CorrelationID: r.CorrelationID,
		Signals:       slices.Clone(r.Signals),
		Awaited:       clonePtr(r.Awaited),
		state:         r.State,
		callbacks:     r.Callbacks,
	}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
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

// Signal is the last signal called name that the step received, and whether it received
// one. A signal sent more than once before a step ran (an approver who changed their mind)
// is in Signals once per send; the last is the one that stands.
func (s Step) Signal(name string) (Signal, bool) {
	for i := len(s.Signals) - 1; i >= 0; i-- {
		if s.Signals[i].Name == name {
			return s.Signals[i], true
		}
	}
	return Signal{}, false
}

// CallbackURL is the callback URL of the type's signal called name, and whether the type
// lets a third party send it without credentials. Hand the URL to the third party (a
// payment provider's webhook, an approval link): a POST of the signal's data to it sends
// the signal to this operation. Whoever holds the URL can send the signal, so give it
// only to whoever should.
func (s Step) CallbackURL(name string) (string, bool) {
	url, ok := s.callbacks[name]
	return url, ok
}

// IdempotencyKey is the step's deduplication identity, "<operation id>-step-<number>", to
// pass to whatever the step changes downstream: a redelivered step request has the same
// key, another step or operation another. With longrun's operation ids ("op_" and a ULID)
// it holds only letters, digits, '_' and '-', as most idempotency-key and client-token
// parameters accept.
func (s Step) IdempotencyKey() string { return fmt.Sprintf("%s-step-%d", s.OperationID, s.Number) }

func carried(state json.RawMessage) bool { return len(state) > 0 && string(state) != "null" }

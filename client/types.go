package client

import "time"

// The contract's schemas that the hand-written client hands to its callers, written here
// rather than taken from package client/api: their JSON tags are the contract's (the tests
// hold them to api/openapi.yaml as they hold the generated types), and what they do (State's
// IsDone, ErrorCode's constants for errors.As and IsCode) belongs to this package.

// State is where an operation is in its lifecycle: accepted → dispatched → running → one of
// succeeded, failed or canceled; cancelling after a cancel of a dispatched or running
// operation; outcome_unknown when an external effect may have happened but its result was
// lost (not terminal: it waits for reconciliation or an operator).
type State string

// The states of the contract's State enum.
const (
	StateAccepted       State = "accepted"
	StateDispatched     State = "dispatched"
	StateRunning        State = "running"
	StateCancelling     State = "cancelling"
	StateSucceeded      State = "succeeded"
	StateFailed         State = "failed"
	StateCanceled       State = "canceled"
	StateOutcomeUnknown State = "outcome_unknown"
)

// Valid reports whether s is one of the contract's states.
func (s State) Valid() bool {
	switch s {
	case StateAccepted, StateDispatched, StateRunning, StateCancelling,
		StateSucceeded, StateFailed, StateCanceled, StateOutcomeUnknown:
		return true
	}
	return false
}

// IsTerminal reports whether s is terminal in the contract's sense: succeeded, failed or
// canceled. Nothing follows a terminal state.
func (s State) IsTerminal() bool {
	switch s {
	case StateSucceeded, StateFailed, StateCanceled:
		return true
	}
	return false
}

// IsDone reports whether waiting for an operation in state s is over: s is terminal, or
// outcome_unknown, which is not terminal but changes only when an operator resolves it.
// The Poller stops at exactly these states.
func (s State) IsDone() bool {
	return s.IsTerminal() || s == StateOutcomeUnknown
}

// ErrorCode is a problem's machine-readable code, what a caller decides by
// (ProblemError.Code, IsCode); docs/idempotency.md and the contract say when each is sent.
type ErrorCode string

// The codes of the contract's ErrorCode enum.
const (
	ErrorCodeAlreadyTerminal          ErrorCode = "already_terminal"
	ErrorCodeCallbackExpired          ErrorCode = "callback_expired"
	ErrorCodeDeadlinePassed           ErrorCode = "deadline_passed"
	ErrorCodeForbidden                ErrorCode = "forbidden"
	ErrorCodeIdempotencyKeyReused     ErrorCode = "idempotency_key_reused"
	ErrorCodeInternal                 ErrorCode = "internal"
	ErrorCodeInvalidIdempotencyKey    ErrorCode = "invalid_idempotency_key"
	ErrorCodeInvalidInput             ErrorCode = "invalid_input"
	ErrorCodeMethodNotAllowed         ErrorCode = "method_not_allowed"
	ErrorCodeNotFound                 ErrorCode = "not_found"
	ErrorCodeNotRetryable             ErrorCode = "not_retryable"
	ErrorCodePayloadTooLarge          ErrorCode = "payload_too_large"
	ErrorCodeQuotaExceeded            ErrorCode = "quota_exceeded"
	ErrorCodeTargetBusy               ErrorCode = "target_busy"
	ErrorCodeUnauthenticated          ErrorCode = "unauthenticated"
	ErrorCodeUnavailable              ErrorCode = "unavailable"
	ErrorCodeUnknownSignal            ErrorCode = "unknown_signal"
	ErrorCodeUnsupportedMediaType     ErrorCode = "unsupported_media_type"
	ErrorCodeUnsupportedOperationType ErrorCode = "unsupported_operation_type"
	ErrorCodeVersionMismatch          ErrorCode = "version_mismatch"
)

// Valid reports whether c is one of the contract's codes. A code this client does not know
// (a newer API's) is still a ProblemError's Code; Valid tells it apart.
func (c ErrorCode) Valid() bool {
	switch c {
	case ErrorCodeAlreadyTerminal, ErrorCodeCallbackExpired, ErrorCodeDeadlinePassed, ErrorCodeForbidden, ErrorCodeIdempotencyKeyReused,
		ErrorCodeInternal, ErrorCodeInvalidIdempotencyKey, ErrorCodeInvalidInput,
		ErrorCodeMethodNotAllowed, ErrorCodeNotFound, ErrorCodeNotRetryable, ErrorCodePayloadTooLarge,
		ErrorCodeQuotaExceeded, ErrorCodeTargetBusy, ErrorCodeUnauthenticated,
		ErrorCodeUnavailable, ErrorCodeUnknownSignal, ErrorCodeUnsupportedMediaType,
		ErrorCodeUnsupportedOperationType, ErrorCodeVersionMismatch:
		return true
	}
	return false
}

// OperationProblem says why an operation failed or why its outcome is unknown
// (Operation.Problem), or, in a ResolveRequest, why an operator failed it.
type OperationProblem struct {
	// Type is `https://longrun.dev/problems/` followed by Code.
	Type string `json:"type"`
	// Title is a short summary of the problem, for people.
	Title string `json:"title"`
	// Code is the machine-readable reason (snake_case, at most 64 characters): the
	// worker's own codes, or longrun's (deadline_exceeded, result_lost, …).
	Code string `json:"code"`
	// Detail explains this occurrence, for people.
	Detail string `json:"detail"`
}

// Progress is how far an operation's work has got, as its worker last reported it
// (Operation.Progress): never invented, present once a step has completed.
type Progress struct {
	// CompletedSteps counts the steps that have completed.
	CompletedSteps int `json:"completedSteps"`
	// TotalSteps is the steps the work takes, when the worker knows it (never below
	// CompletedSteps).
	TotalSteps *int `json:"totalSteps,omitempty"`
	// Percent is the worker's own estimate of how much is done, 0 to 100.
	Percent *float64 `json:"percent,omitempty"`
	// Message is the worker's latest note on what it is doing, for people.
	Message *string `json:"message,omitempty"`
}

// Awaiting is the signal an operation's work waits for (Operation.Awaiting): a step asked to
// wait for Signal at Since, and the next step runs when it arrives (Client.Signal sends
// it), or at Until without it. An operation has one only while its work waits.
type Awaiting struct {
	// Signal is the name of the signal waited for, one the operation's type declares
	// (OperationType.Signals).
	Signal string `json:"signal"`
	// Since is when the wait began.
	Since time.Time `json:"since"`
	// Until is when the wait ends without the signal.
	Until time.Time `json:"until"`
}

// Retried is the latest retry an operator asked for (Operation.Retried): the step of an
// unknown outcome that runs again, the how-manieth time it runs (2 for the first retry),
// when and why.
type Retried struct {
	// Step is the step that runs again.
	Step int `json:"step"`
	// Attempt is the how-manieth time it runs: 2 for the first retry.
	Attempt int `json:"attempt"`
	// At is when the operator asked for it.
	At time.Time `json:"at"`
	// Reason is the reason the operator gave.
	Reason string `json:"reason"`
}

// FieldError is one field of a request that failed validation (ProblemError.Fields, with
// ErrorCodeInvalidInput).
type FieldError struct {
	// Pointer is a JSON Pointer (RFC 6901) into the request, e.g. `/input/from`.
	Pointer string `json:"pointer"`
	// Detail says what is wrong with it, for people.
	Detail string `json:"detail"`
}

// OperationType is one operation type the API admits (Types, Type), as the deployment's
// registry defines it: InputSchema is exactly what an admission's input must satisfy.
type OperationType struct {
	// Name is what CreateRequest.Type names, e.g. export.orders.
	Name string `json:"name"`
	// Version is the type's version (its template revision), part of every admission's
	// fingerprint: a replay across a version change is a different request.
	Version int `json:"version"`
	// Description says what an operation of this type does, for people.
	Description string `json:"description"`
	// InputSchema is the JSON Schema (draft 2020-12) an admission's input must satisfy.
	InputSchema map[string]any `json:"inputSchema"`
	// DeadlineSeconds is how long, in whole seconds from its admission, an operation of
	// this type may take before the reconciler stops it (deadline_exceeded).
	DeadlineSeconds int `json:"deadlineSeconds"`
	// Signals are the signals its operations accept while they run (Client.Signal), in the
	// order the deployment's definitions file declares them; nil when it declares none.
	Signals []SignalDeclaration `json:"signals,omitempty"`
}

// SignalDeclaration is a signal an operation type declares (OperationType.Signals): its
// name, the JSON Schema its data must satisfy and who may send it.
type SignalDeclaration struct {
	// Name is what Client.Signal names.
	Name string `json:"name"`
	// Schema is the JSON Schema (draft 2020-12) the signal's data must satisfy.
	Schema map[string]any `json:"schema"`
	// Senders are who may send it; anyone else gets ErrorCodeForbidden.
	Senders []SignalSender `json:"senders"`
	// NotCreator is the four-eyes rule: when true, the principal that created the operation
	// may not send it, whatever Senders allows.
	NotCreator bool `json:"notCreator"`
	// Callback says whether a third party without credentials of its own may send it,
	// through a callback URL the operation's worker is given for it.
	Callback bool `json:"callback"`
}

// SignalSender is who may send a signal (SignalDeclaration.Senders).
type SignalSender string

// The senders of the contract's SignalSender enum.
const (
	// SignalSenderCaller is the principal that created the operation.
	SignalSenderCaller SignalSender = "caller"
	// SignalSenderTenant is any principal of the operation's tenant, the caller included.
	SignalSenderTenant SignalSender = "tenant"
	// SignalSenderOperator is an operator of the deployment, whatever the tenant.
	SignalSenderOperator SignalSender = "operator"
)

// Valid reports whether s is one of the contract's senders.
func (s SignalSender) Valid() bool {
	return s == SignalSenderCaller || s == SignalSenderTenant || s == SignalSenderOperator
}

// ResolveOutcome is what an operator's Resolve settles an outcome_unknown operation as.
type ResolveOutcome string

// The outcomes of the contract's ResolveRequest.
const (
	ResolveSucceeded ResolveOutcome = "succeeded"
	ResolveFailed    ResolveOutcome = "failed"
	// ResolveRetry runs the step whose outcome was unknown again, with the same
	// (operation id, step) identity: the operation goes back to running. It needs
	// ResolveRequest.IfVersion.
	ResolveRetry ResolveOutcome = "retry"
)

// Valid reports whether o is one of the contract's outcomes.
func (o ResolveOutcome) Valid() bool {
	return o == ResolveSucceeded || o == ResolveFailed || o == ResolveRetry
}

// ResolveRequest is an operator's settlement of an operation in outcome_unknown (Resolve).
type ResolveRequest struct {
	// Outcome is what the operation becomes: succeeded or failed; or retry, to have the
	// step whose outcome was unknown run again.
	Outcome ResolveOutcome `json:"outcome"`
	// Reason says why the operator resolved it this way (kept in the operation's facts;
	// required).
	Reason string `json:"reason"`
	// Result, only with ResolveSucceeded, is the operation's result: anything that encodes
	// to a JSON object (a struct, a map, a json.RawMessage). nil sends none.
	Result any `json:"result,omitempty"`
	// Problem, only with ResolveFailed, says why it failed.
	Problem *OperationProblem `json:"problem,omitempty"`
	// IfVersion, when set, is sent as If-Match ("<version>", not in the body): the
	// resolution is refused with ErrorCodeVersionMismatch when the operation has moved
	// past that version. Required with ResolveRetry (the API answers
	// ErrorCodeInvalidInput without it): pass the Version of the representation, or the
	// History, the decision was made on.
	IfVersion *int `json:"-"`
}

// FactKind is what a fact records (HistoryEntry.Kind).
type FactKind string

// The kinds of the contract's FactKind enum.
const (
	FactAccepted        FactKind = "accepted"
	FactDispatched      FactKind = "dispatched"
	FactStarted         FactKind = "started"
	FactCancelRequested FactKind = "cancel_requested"
	FactProgress        FactKind = "progress"
	FactSucceeded       FactKind = "succeeded"
	FactFailed          FactKind = "failed"
	FactCanceled        FactKind = "canceled"
	FactOutcomeUnknown  FactKind = "outcome_unknown"
	FactSignaled        FactKind = "signaled"
	FactRetried         FactKind = "retried"
)

// Valid reports whether k is one of the contract's kinds. A kind this client does not know
// (a newer API's) still decodes; Valid tells it apart.
func (k FactKind) Valid() bool {
	switch k {
	case FactAccepted, FactDispatched, FactStarted, FactCancelRequested, FactProgress, FactSucceeded,
		FactFailed, FactCanceled, FactOutcomeUnknown, FactSignaled, FactRetried:
		return true
	}
	return false
}

// FactSource is who recorded a fact (HistoryEntry.By).
type FactSource string

// The sources of the contract's FactSource enum.
const (
	FactByAdmission  FactSource = "admission"
	FactByDispatcher FactSource = "dispatcher"
	// FactByExecutor is longrun's side of the worker's steps.
	FactByExecutor   FactSource = "executor"
	FactByClient     FactSource = "client"
	FactByReconciler FactSource = "reconciler"
	FactByOperator   FactSource = "operator"
	// FactByCallback is a signal sent through a callback URL.
	FactByCallback FactSource = "callback"
)

// Valid reports whether s is one of the contract's sources.
func (s FactSource) Valid() bool {
	switch s {
	case FactByAdmission, FactByDispatcher, FactByExecutor, FactByClient, FactByReconciler, FactByOperator, FactByCallback:
		return true
	}
	return false
}

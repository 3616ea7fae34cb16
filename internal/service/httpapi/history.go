package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/logctx"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// history is an operation's facts as the contract's History shows them (api/openapi.yaml).
type history struct {
	OperationID string         `json:"operationId"`
	Version     int            `json:"version"`
	Entries     []historyEntry `json:"entries"`
}

// historyEntry is one fact, public members only: never the execution, a lease's run,
// execution name or callback, the admission's internals, a retry's state, a signal's key
// or fingerprint. Actor is set for operators only.
type historyEntry struct {
	Version      int                     `json:"version"`
	At           string                  `json:"at"`
	Kind         operation.Kind          `json:"kind"`
	State        operation.State         `json:"state"`
	By           operation.Source        `json:"by"`
	Actor        string                  `json:"actor,omitempty"`
	Reason       string                  `json:"reason,omitempty"`
	Progress     *operation.Progress     `json:"progress,omitempty"`
	Problem      *operation.Problem      `json:"problem,omitempty"`
	StepStarted  int                     `json:"stepStarted,omitempty"`
	Signal       *historySignal          `json:"signal,omitempty"`
	Awaiting     *operation.AwaitingView `json:"awaiting,omitempty"`
	WaitingUntil string                  `json:"waitingUntil,omitempty"`
	Retry        *operation.RetryView    `json:"retry,omitempty"`
	// Input is the admitted input, on the accepted fact: the representation leaves it out,
	// and the history is where its creator and operators find it.
	Input json.RawMessage `json:"input,omitempty"`
}

// historySignal is a signaled fact's signal: its name and data, never its idempotency key
// or fingerprint.
type historySignal struct {
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
}

// getHistory serves GET /v1/operations/{id}/history: every fact of an operation the caller
// may see (as GET of the operation: another scope's is 404, not 403), oldest first, with the
// state each led to. One consistent read of the operation's facts; the fold is redone here,
// fact by fact.
func (h *Handler) getHistory(ctx context.Context, ev events.APIGatewayProxyRequest, see intent.Visible, operator bool, id string) (response, error) {
	if !ids.Valid("op_", id) {
		return response{}, errNotFound()
	}
	facts, err := h.Operations.Facts(ctx, id)
	if problem.CodeOf(err) == problem.NotFound {
		return response{}, errNotFound()
	}
	if err != nil {
		return response{}, err
	}
	out, op, err := describeHistory(id, facts, operator)
	if err != nil {
		return response{}, err
	}
	if !see(op) {
		return response{}, errNotFound()
	}
	logctx.Set(ctx, logctx.Fields{OperationID: op.ID, CorrelationID: op.CorrelationID})
	b, err := json.Marshal(out)
	if err != nil {
		return response{}, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	return response{status: http.StatusOK, body: b, header: http.Header{
		"Content-Type": {"application/json"},
		"ETag":         {strconv.Quote(strconv.Itoa(op.Version))},
	}}, nil
}

// describeHistory folds facts as the store does and describes each with the state it led
// to; actors only for an operator. It returns the fold too, for the visibility rule.
func describeHistory(id string, facts []operation.Fact, operator bool) (history, operation.Operation, error) {
	out := history{OperationID: id, Entries: make([]historyEntry, 0, len(facts))}
	op := operation.Operation{ID: id}
	for _, f := range facts {
		next, err := op.Apply(f)
		if err != nil {
			return out, op, problem.Wrap(problem.Internal, err, "An internal error occurred.")
		}
		out.Entries = append(out.Entries, describeFact(f, next, operator))
		op = next
	}
	out.Version = op.Version
	return out, op, nil
}

// describeFact is fact f's entry; after is the operation once f is applied.
func describeFact(f operation.Fact, after operation.Operation, operator bool) historyEntry {
	e := historyEntry{Version: f.Version, At: operation.FormatTime(f.At), Kind: f.Kind, State: after.State, By: f.Source,
		Reason: f.Reason, Problem: f.Problem}
	if operator {
		e.Actor = publicActor(f.Actor)
	}
	if f.Progress != nil {
		e.Progress = after.Progress // what the progress is once f is recorded
	}
	if f.Source == operation.SourceExecutor && f.Lease != nil && f.Awaiting == nil && f.WaitingUntil == nil {
		// The fact leases a step about to be sent to the worker: the one its delivery names,
		// else the one after those completed. (A wait's facts send none.)
		e.StepStarted = 1
		if after.Progress != nil {
			e.StepStarted = after.Progress.CompletedSteps + 1
		}
		if f.Delivery != nil && f.Delivery.Step > 0 {
			e.StepStarted = f.Delivery.Step
		}
	}
	if s := f.Signal; s != nil && f.Kind == operation.KindSignaled {
		e.Signal = &historySignal{Name: s.Name, Data: s.Data}
		if len(e.Signal.Data) == 0 {
			e.Signal.Data = json.RawMessage(`{}`)
		}
	}
	if a := f.Awaiting; a != nil {
		e.Awaiting = &operation.AwaitingView{Signal: a.Signal, Since: operation.FormatTime(a.Since), Until: operation.FormatTime(a.Until)}
	}
	if f.WaitingUntil != nil {
		e.WaitingUntil = operation.FormatTime(*f.WaitingUntil)
	}
	if r := f.Retry; r != nil && f.Kind == operation.KindRetried {
		e.Retry = &operation.RetryView{Step: r.Step, Attempt: r.Attempt}
	}
	if a := f.Admission; a != nil && f.Kind == operation.KindAccepted && len(a.Input) > 0 {
		e.Input = a.Input
	}
	return e
}

// publicActor is an actor as an operator sees it: as recorded, except that an IAM
// principal's ARN (arn:<partition>:<service>:<region>:<account>:<resource>) is shown
// without its arn:<partition>:<service>:<region>: prefix, as <account>:<resource>, since no
// public body carries an ARN. An operator's resolution records <tenant>/<principal>.
func publicActor(actor string) string {
	prefix, rest := "", actor
	if i := strings.Index(actor, "/arn:"); i >= 0 {
		prefix, rest = actor[:i+1], actor[i+1:]
	}
	if parts := strings.SplitN(rest, ":", 6); len(parts) == 6 && parts[0] == "arn" {
		return prefix + parts[4] + ":" + parts[5]
	}
	return actor
}

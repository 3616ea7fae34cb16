package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/longrun-dev/longrun/client/api"
)

// History is an operation's facts, oldest first, each with the state it led to (GET
// /v1/operations/{id}/history): what its representation is folded from.
type History struct {
	// OperationID is the operation's id.
	OperationID string `json:"operationId"`
	// Version is the operation's version, its last entry's; the ETag carries it.
	Version int `json:"version"`
	// Entries are its facts, oldest first; the first is always accepted.
	Entries []HistoryEntry `json:"entries"`

	// ETag is the response's ETag, the quoted version (`"5"`).
	ETag string `json:"-"`
	// RequestID is the response's X-Request-Id.
	RequestID string `json:"-"`
}

// HistoryEntry is one fact of an operation: its version, when it was recorded, what it
// records, the state it led to and who recorded it; the other fields only where the fact
// carries them.
type HistoryEntry struct {
	// Version is the fact's version: 1, 2, … without gaps.
	Version int `json:"version"`
	// At is when it was recorded.
	At time.Time `json:"at"`
	// Kind is what it records.
	Kind FactKind `json:"kind"`
	// State is the operation's state once it was recorded.
	State State `json:"state"`
	// By is who recorded it.
	By FactSource `json:"by"`
	// Actor is the principal that recorded a client's or an operator's fact; operators
	// only see it (empty for anyone else).
	Actor string `json:"actor,omitempty"`
	// Reason is the reason an operator gave for a resolution.
	Reason string `json:"reason,omitempty"`
	// Progress is how far the work had come once the fact was recorded, on facts that
	// report progress.
	Progress *Progress `json:"progress,omitempty"`
	// Problem is why the operation failed or why its outcome is unknown, on such a fact.
	Problem *OperationProblem `json:"problem,omitempty"`
	// StepStarted is the step the fact sends to the worker (a step's start); 0 on facts
	// that send none.
	StepStarted int `json:"stepStarted,omitempty"`
	// Signal is the signal a signaled fact records: its name and data.
	Signal *HistorySignal `json:"signal,omitempty"`
	// Awaiting is the wait for a signal the fact begins.
	Awaiting *Awaiting `json:"awaiting,omitempty"`
	// WaitingUntil is the end of a wait the worker asked for, which the fact begins.
	WaitingUntil *time.Time `json:"waitingUntil,omitempty"`
	// Retry is the step an operator had run again, on a retried fact.
	Retry *Retry `json:"retry,omitempty"`
	// Input is the operation's input as it was admitted, on the accepted fact.
	Input json.RawMessage `json:"input,omitempty"`
}

// HistorySignal is the signal a signaled fact records (HistoryEntry.Signal).
type HistorySignal struct {
	// Name is the signal's name.
	Name string `json:"name"`
	// Data is the signal's data, a JSON object, exactly as the API sent it.
	Data json.RawMessage `json:"data"`
}

// Retry is a step an operator had run again after its outcome was unknown
// (HistoryEntry.Retry): which step, and the how-manieth time it runs (2 for the first
// retry).
type Retry struct {
	Step    int `json:"step"`
	Attempt int `json:"attempt"`
}

// History reads operation id's facts, oldest first (GET /v1/operations/{id}/history). It is
// visible as Get's operation is: an operation of another caller, or none, is a
// *ProblemError with ErrorCodeNotFound (an operator sees every tenant's).
func (c *Client) History(ctx context.Context, id string) (*History, error) {
	if id == "" {
		return nil, errors.New("longrun: History: empty operation id")
	}
	var h History
	err := c.do(ctx, transient, nil, func(ctx context.Context) error {
		resp, body, err := c.send(ctx, func() (*http.Request, error) { return api.NewGetOperationHistoryRequest(c.server, id) }, nil)
		if err != nil {
			return err
		}
		h = History{}
		if err := json.Unmarshal(body, &h); err != nil {
			return fmt.Errorf("longrun: decoding the history (%d): %w", resp.StatusCode, err)
		}
		if h.OperationID == "" || len(h.Entries) == 0 {
			return fmt.Errorf("longrun: the %d response is not a history: %s", resp.StatusCode, snippet(body))
		}
		h.ETag, h.RequestID = resp.Header.Get("ETag"), resp.Header.Get("X-Request-Id")
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// Package notify publishes "Operation State Changed" for every committed state change. It
// reads changes from the projection's stream records, so nothing is published before the
// fact is committed, and publishes at least once, in version order per operation:
// subscribers deduplicate on (operationId, version).
package notify

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// Source and DetailType identify longrun's events on the bus (docs/lifecycle.md, "Events"; the schema is events/schemas/operation-state-changed.json).
const (
	Source     = "longrun"
	DetailType = "Operation State Changed"
)

// Detail is the event's detail.
type Detail struct {
	OperationID   string             `json:"operationId"`
	Type          string             `json:"type"`
	Target        string             `json:"target"`
	Tenant        string             `json:"tenant"`
	State         operation.State    `json:"state"`
	PreviousState *operation.State   `json:"previousState"`
	Version       int                `json:"version"`
	OccurredAt    string             `json:"occurredAt"`
	Result        json.RawMessage    `json:"result,omitempty"`
	Problem       *operation.Problem `json:"problem,omitempty"`
}

// StateChange is one committed change of an operation's state, read from the store's
// stream.
type StateChange struct {
	OperationID   string
	Tenant        string
	State         operation.State
	PreviousState operation.State // "" for the first (accepted)
	Version       int
	Rep           operation.Representation
}

// Bus publishes event details in order; it returns how many of them it published before the
// first failure (len(details) when all were).
type Bus interface {
	Publish(ctx context.Context, details [][]byte) (published int, err error)
}

// Notifier is the stream consumer.
type Notifier struct {
	Bus Bus
	// Changes reads a stream record as a state change; ok is false for records that are
	// none (the store's item format is the store adapter's business: dynamo.ProjectionChange).
	Changes func(events.DynamoDBEventRecord) (c StateChange, ok bool, err error)
	Log     *slog.Logger
}

// DetailOf builds the detail of a state change.
func DetailOf(c StateChange) Detail {
	d := Detail{OperationID: c.OperationID, Type: c.Rep.Type, Target: c.Rep.Target, Tenant: c.Tenant, State: c.State,
		Version: c.Version, OccurredAt: c.Rep.UpdatedAt, Result: c.Rep.Result, Problem: c.Rep.Problem}
	if c.PreviousState != "" {
		prev := c.PreviousState
		d.PreviousState = &prev
	}
	return d
}

// HandleStream publishes the batch's state changes in stream order. On the first failure it
// reports that record and every later one as failed, so the retry resends from there and no
// subscriber ever sees a version after a later one it already got from this batch.
func (n *Notifier) HandleStream(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var details [][]byte
	var sequences []string
	for _, rec := range ev.Records {
		c, ok, err := n.Changes(rec)
		if err != nil {
			// A projection that cannot be read will never be readable: say so and move on.
			n.Log.ErrorContext(ctx, "unreadable projection record", "sequence", rec.Change.SequenceNumber, "error", err.Error())
			continue
		}
		if !ok {
			continue
		}
		b, _ := json.Marshal(DetailOf(c))
		details = append(details, b)
		sequences = append(sequences, rec.Change.SequenceNumber)
	}
	var resp events.DynamoDBEventResponse
	if len(details) == 0 {
		return resp, nil
	}
	published, err := n.Bus.Publish(ctx, details)
	if err != nil {
		n.Log.WarnContext(ctx, "publish failed; the rest of the batch will be retried", "published", published, "error", err.Error())
		for _, seq := range sequences[published:] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
		}
	}
	n.Log.InfoContext(ctx, "published", "events", published)
	return resp, nil
}

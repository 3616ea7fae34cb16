// Package notify publishes "Operation State Changed" for every committed state change. It
// reads changes from the projection's stream records, so nothing is published before the
// fact is committed, and publishes at least once, in version order per operation: version
// n+1 goes to the bus only once version n is on it, and a version published again is its
// operation's latest, never an older one after a newer. Subscribers deduplicate on
// (operationId, version) (docs/lifecycle.md, "Events").
//
// The same details can be rebuilt from an operation's facts (Republish), for an operator to
// publish them again when the stream path gave up on them (docs/lifecycle.md, "Events").
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/logctx"
	"github.com/longrun-dev/longrun/internal/core/operation"
)

// Source and DetailType identify longrun's events on the bus (docs/lifecycle.md, "Events"; the schema is events/schemas/operation-state-changed.json).
const (
	Source     = "longrun"
	DetailType = "Operation State Changed"
)

// MaxDetailBytes bounds an encoded detail. A detail that would be larger goes out without
// its result (resultOmitted) or problem (problemOmitted), and the subscriber GETs the
// operation for it. With Source and DetailType, an entry is then at most 64 KiB: a quarter
// of what one PutEvents call (and one entry) may carry, and small enough for any target
// the bus delivers to.
const MaxDetailBytes = 64<<10 - len(Source) - len(DetailType)

// Detail is the event's detail.
type Detail struct {
	OperationID   string           `json:"operationId"`
	Type          string           `json:"type"`
	Target        string           `json:"target"`
	Tenant        string           `json:"tenant"`
	State         operation.State  `json:"state"`
	PreviousState *operation.State `json:"previousState"`
	Version       int              `json:"version"`
	OccurredAt    string           `json:"occurredAt"`
	// CorrelationID is the operation's (operation.Admission.CorrelationID).
	CorrelationID string             `json:"correlationId,omitempty"`
	Result        json.RawMessage    `json:"result,omitempty"`
	Problem       *operation.Problem `json:"problem,omitempty"`
	// Progress is the operation's progress when the state changed (operation.Progress).
	Progress *operation.Progress `json:"progress,omitempty"`
	// Awaiting is the signal the operation's work waited for after the change, as its
	// representation has it (present only while the work waits).
	Awaiting *operation.AwaitingView `json:"awaiting,omitempty"`
	// Retried is the latest retry an operator asked for, as the representation has it:
	// the change from outcome_unknown to running that a retry made carries it first.
	Retried *operation.RetriedView `json:"retried,omitempty"`
	// ResultOmitted and ProblemOmitted say that the detail would have exceeded
	// MaxDetailBytes with them: the operation has one, and a GET of it returns it.
	ResultOmitted  bool `json:"resultOmitted,omitempty"`
	ProblemOmitted bool `json:"problemOmitted,omitempty"`
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
	CorrelationID string // "" for operations admitted before it was recorded
}

// Event is one encoded detail to publish, and the operation it is about.
type Event struct {
	OperationID string
	Detail      []byte
}

// Bus publishes events. Of one operation's events it puts each on the bus only once every
// earlier one of that operation is there; on a failure it sends again only what failed, and
// when it gives up on an event it sends nothing after it. So what it publishes of events
// that come after an unpublished one is at most one event per operation. It reports which
// events are on the bus (published[i] for events[i]) and, when not all are, why not.
type Bus interface {
	Publish(ctx context.Context, events []Event) (published []bool, err error)
}

// Metrics is where the notifier counts what it published (the functions give it
// internal/aws/emf; docs/observability.md lists the metrics). dims are name, value pairs.
type Metrics interface {
	Add(name, unit string, value float64, dims ...string)
}

// Notifier is the stream consumer, and the republisher of an operation's events.
type Notifier struct {
	Bus Bus
	// Changes reads a stream record as a state change; ok is false for records that are
	// none (the store's item format is the store adapter's business: dynamo.ProjectionChange).
	Changes func(events.DynamoDBEventRecord) (c StateChange, ok bool, err error)
	// Facts reads an operation's facts in version order (dynamo.Store.Facts); only Republish
	// needs it.
	Facts func(ctx context.Context, id string) ([]operation.Fact, error)
	Log   *slog.Logger
	// Metrics hears of the stream path's events published and failures to publish; nil
	// counts nothing.
	Metrics Metrics
	// Now is the clock of the notify lag (the change's instant → published); nil measures
	// no lag.
	Now func() time.Time
}

func (n *Notifier) metric(name, unit string, value float64, dims ...string) {
	if n.Metrics != nil {
		n.Metrics.Add(name, unit, value, dims...)
	}
}

// DetailOf builds the detail of a state change.
func DetailOf(c StateChange) Detail {
	d := Detail{OperationID: c.OperationID, Type: c.Rep.Type, Target: c.Rep.Target, Tenant: c.Tenant, State: c.State,
		Version: c.Version, OccurredAt: c.Rep.UpdatedAt, CorrelationID: c.CorrelationID, Result: c.Rep.Result, Problem: c.Rep.Problem, Progress: c.Rep.Progress,
		Awaiting: c.Rep.Awaiting, Retried: c.Rep.Retried}
	if c.PreviousState != "" {
		prev := c.PreviousState
		d.PreviousState = &prev
	}
	return d
}

// Encode is the detail of a state change as it is published: DetailOf, as JSON, without
// the result or problem that would make it larger than MaxDetailBytes.
func Encode(c StateChange) []byte {
	d := DetailOf(c)
	b, _ := json.Marshal(d)
	if len(b) > MaxDetailBytes && d.Result != nil {
		d.Result, d.ResultOmitted = nil, true
		b, _ = json.Marshal(d)
	}
	if len(b) > MaxDetailBytes && d.Problem != nil {
		d.Problem, d.ProblemOmitted = nil, true
		b, _ = json.Marshal(d)
	}
	return b
}

// HandleStream publishes the batch's state changes in stream order, and reports the records
// whose events are not on the bus as failed. The event source mapping then delivers the
// batch again from the earliest of them, so the events after it that are on the bus go out
// again: by the Bus's rule at most one per operation, each its operation's latest, so no
// subscriber gets a version after a later one of its operation.
func (n *Notifier) HandleStream(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var changes []StateChange
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
		changes = append(changes, c)
		sequences = append(sequences, rec.Change.SequenceNumber)
	}
	var resp events.DynamoDBEventResponse
	if len(changes) == 0 {
		return resp, nil
	}
	published, err := n.publish(ctx, changes)
	var done, undone []StateChange
	for i, c := range changes {
		if published[i] {
			done = append(done, c)
			continue
		}
		undone = append(undone, c)
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: sequences[i]})
	}
	if len(undone) > 0 {
		// If the event source mapping runs out of retries, these are the events to
		// republish (longrun republish): its on-failure destination names only sequence
		// numbers.
		n.Log.WarnContext(ctx, "publish failed; the rest of the batch will be retried", "published", len(done),
			"unpublished", versions(undone), "error", err.Error())
		n.metric("PublishFailures", "Count", float64(len(undone)))
	}
	var now time.Time
	if n.Now != nil {
		now = n.Now()
	}
	for _, c := range done {
		n.Log.InfoContext(logctx.With(ctx, logctx.Fields{OperationID: c.OperationID, CorrelationID: c.CorrelationID}),
			"event published", "version", c.Version, "state", string(c.State))
		// The representation's updatedAt is the instant its writer stamped the change's
		// facts with, just before committing them: the lag is commit → published, retries
		// included.
		if at, err := time.Parse(operation.TimeFormat, c.Rep.UpdatedAt); err == nil && !now.IsZero() {
			n.metric("NotifyLag", "Milliseconds", float64(max(now.Sub(at), 0).Milliseconds()))
		}
	}
	if len(done) > 0 {
		n.metric("EventsPublished", "Count", float64(len(done)))
	}
	n.Log.InfoContext(ctx, "published", "events", len(done))
	return resp, nil
}

// publish publishes changes: published[i] says whether changes[i]'s event is on the bus, and
// err is not nil when one is not.
func (n *Notifier) publish(ctx context.Context, changes []StateChange) (published []bool, err error) {
	evs := make([]Event, len(changes))
	for i, c := range changes {
		evs[i] = Event{OperationID: c.OperationID, Detail: Encode(c)}
	}
	published, err = n.Bus.Publish(ctx, evs)
	if len(published) != len(changes) {
		// A bus that does not say which are on it: none count as published, and the retry
		// sends them again (at least once).
		err = errors.Join(err, fmt.Errorf("publish: the bus answered for %d of %d events", len(published), len(changes)))
		published = make([]bool, len(changes))
	}
	if err == nil && slices.Contains(published, false) {
		err = errors.New("publish: the bus left events unpublished without an error")
	}
	return published, err
}

// versions names changes as operationId@version, for logs.
func versions(changes []StateChange) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = fmt.Sprintf("%s@%d", c.OperationID, c.Version)
	}
	return out
}

// Republish publishes operation id's events again, in version order: the detail of every
// state change the store committed, rebuilt from the facts (History) and encoded as the
// stream path encodes it, so a subscriber that already has one dedupes it on (operationId,
// version). It returns the versions it published; on an error, those published before it.
func (n *Notifier) Republish(ctx context.Context, id string) ([]int, error) {
	facts, err := n.Facts(ctx, id)
	if err != nil {
		return nil, err
	}
	changes, err := History(id, facts)
	if err != nil {
		return nil, err
	}
	ctx = logctx.With(ctx, logctx.Fields{OperationID: id, CorrelationID: changes[0].CorrelationID})
	published, err := n.publish(ctx, changes)
	var done []int
	for i, c := range changes {
		if published[i] {
			done = append(done, c.Version)
		}
	}
	if err != nil {
		return done, fmt.Errorf("republish %s: %w", id, err)
	}
	n.Log.InfoContext(ctx, "republished", "operation_id", id, "versions", done)
	return done, nil
}

// History rebuilds, from an operation's facts in version order, the state changes its
// projection's stream records carried: one per append, at the append's last version, with
// the state before the append as the previous state and the fold's representation, which
// is what the store writes into the projection in the append's transaction.
//
// Facts of one append share their instant, source and actor: a writer decides them at once
// (core/facts: one Decide, one Append, stamped with one now), as when a cancel before
// dispatch appends cancel_requested and canceled together, and the stream shows one change
// from accepted to canceled. Facts of different appends never share an instant, because the
// later one is decided after the earlier one was read.
func History(id string, facts []operation.Fact) ([]StateChange, error) {
	var changes []StateChange
	op := operation.Operation{ID: id}
	var previous operation.State
	for i, f := range facts {
		var err error
		if op, err = op.Apply(f); err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		if i+1 < len(facts) && sameAppend(f, facts[i+1]) {
			continue
		}
		c := StateChange{OperationID: id, Tenant: op.Tenant, State: op.State, PreviousState: previous, Version: op.Version,
			CorrelationID: op.CorrelationID}
		// Through JSON, as the projection stores it and the stream path reads it.
		rep, err := json.Marshal(op.Represent(""))
		if err == nil {
			err = json.Unmarshal(rep, &c.Rep)
		}
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		changes = append(changes, c)
		previous = op.State
	}
	if len(changes) == 0 {
		return nil, fmt.Errorf("history of %s: %w: no facts", id, operation.ErrMalformedHistory)
	}
	return changes, nil
}

func sameAppend(a, b operation.Fact) bool {
	return !a.At.IsZero() && a.At.Equal(b.At) && a.Source == b.Source && a.Actor == b.Actor
}

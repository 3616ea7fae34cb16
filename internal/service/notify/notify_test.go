package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	eventschemas "github.com/longrun-dev/longrun/events"
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/notify"
)

type bus struct {
	got     []notify.Detail
	failAt  int          // publish stops at this index (-1: never)
	lost    map[int]bool // these fail, and those after them are published
	batches int
}

func (b *bus) Publish(_ context.Context, evs []notify.Event) ([]bool, error) {
	b.batches++
	published := make([]bool, len(evs))
	var err error
	for i, e := range evs {
		if i == b.failAt {
			return published, errors.Join(err, errors.New("throttled"))
		}
		if b.lost[i] {
			err = errors.Join(err, fmt.Errorf("entry %d: InternalFailure", i))
			continue
		}
		var det notify.Detail
		_ = json.Unmarshal(e.Detail, &det)
		b.got = append(b.got, det)
		published[i] = true
	}
	return published, err
}

func projection(id string, seq string, oldVersion, newVersion int, oldState, newState string) events.DynamoDBEventRecord {
	var r events.DynamoDBEventRecord
	r.EventName = "MODIFY"
	r.Change.SequenceNumber = seq
	rep := fmt.Sprintf(`{"operationId":"%s","type":"demo.task","target":"demo:x","state":"%s","version":%d,"updatedAt":"2026-11-30T10:00:0%d.000Z"}`, id, newState, newVersion, newVersion)
	r.Change.NewImage = map[string]events.DynamoDBAttributeValue{
		"pk": events.NewStringAttribute("OP#" + id), "sk": events.NewStringAttribute("META"),
		"tenant": events.NewStringAttribute("acme"), "state": events.NewStringAttribute(newState),
		"version": events.NewNumberAttribute(fmt.Sprint(newVersion)), "rep": events.NewStringAttribute(rep),
	}
	if oldVersion > 0 {
		r.Change.OldImage = map[string]events.DynamoDBAttributeValue{
			"sk": events.NewStringAttribute("META"), "state": events.NewStringAttribute(oldState),
			"version": events.NewNumberAttribute(fmt.Sprint(oldVersion)),
		}
	} else {
		r.EventName = "INSERT"
	}
	return r
}

func TestPublishesEachVersionOnceInOrder(t *testing.T) {
	b := &bus{failAt: -1}
	n := &notify.Notifier{Bus: b, Changes: dynamo.ProjectionChange, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		projection("op_1", "1", 0, 1, "", "accepted"),
		projection("op_1", "2", 1, 2, "accepted", "dispatched"),
		projection("op_1", "3", 2, 2, "dispatched", "dispatched"), // bookkeeping, same version
		projection("op_1", "4", 2, 3, "dispatched", "running"),
	}}
	resp, err := n.HandleStream(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v %v", resp, err)
	}
	if len(b.got) != 3 || b.got[0].PreviousState != nil || *b.got[2].PreviousState != "dispatched" || b.got[2].Version != 3 {
		t.Fatalf("%+v", b.got)
	}
}

// A bus that stops at a failure published nothing after it: that record and every later one
// are reported, so the retry sends them all, in order.
func TestFailureRetriesFromThere(t *testing.T) {
	b := &bus{failAt: 1}
	n := &notify.Notifier{Bus: b, Changes: dynamo.ProjectionChange, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		projection("op_1", "10", 0, 1, "", "accepted"),
		projection("op_2", "11", 0, 1, "", "accepted"),
		projection("op_1", "12", 1, 2, "accepted", "dispatched"),
	}}
	resp, _ := n.HandleStream(context.Background(), ev)
	if failed := failedRecords(resp); fmt.Sprint(failed) != "[11 12]" || len(b.got) != 1 {
		t.Fatalf("failed %v published %+v", failed, b.got)
	}
}

// Issue #20, 10: the bus may leave an event unpublished and publish later ones (a call's
// other entries, at most one per operation). The notifier reports exactly the records not
// on the bus, so the mapping's retry starts at the earliest of them, and counts only those as
// failures.
func TestOnlyWhatIsNotOnTheBusIsReportedFailed(t *testing.T) {
	b := &bus{failAt: -1, lost: map[int]bool{1: true}}
	var logs strings.Builder
	n := &notify.Notifier{Bus: b, Changes: dynamo.ProjectionChange, Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		projection("op_1", "10", 0, 1, "", "accepted"),
		projection("op_2", "11", 0, 1, "", "accepted"),
		projection("op_3", "12", 0, 1, "", "accepted"),
	}}
	resp, err := n.HandleStream(context.Background(), ev)
	if failed := failedRecords(resp); err != nil || fmt.Sprint(failed) != "[11]" || len(b.got) != 2 {
		t.Fatalf("failed %v, published %d: %v", failed, len(b.got), err)
	}
	if !strings.Contains(logs.String(), `"unpublished":["op_2@1"]`) || strings.Count(logs.String(), `"msg":"event published"`) != 2 {
		t.Fatalf("logs:\n%s", logs.String())
	}
}

// failedRecords is the sequence numbers resp reports failed.
func failedRecords(resp events.DynamoDBEventResponse) []string {
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

func change(result json.RawMessage, problem *operation.Problem) notify.StateChange {
	state := operation.Succeeded
	if problem != nil {
		state = operation.Failed
	}
	return notify.StateChange{OperationID: "op_1", Tenant: "acme", State: state, PreviousState: operation.Running, Version: 4,
		Rep: operation.Representation{OperationID: "op_1", Type: "demo.task", Target: "demo:x", State: state, Version: 4,
			UpdatedAt: "2026-11-30T10:00:04.000Z", Result: result, Problem: problem}}
}

// Defect 4 (issue #12): a result too large for an event goes out as a reference
// (resultOmitted: GET the operation), so the entry fits PutEvents; a result that fits goes
// out whole. The same holds for a problem.
func TestOverSizeResultIsSentAsAReference(t *testing.T) {
	blob := func(n int) json.RawMessage { return fmt.Appendf(nil, `{"blob":%q}`, strings.Repeat("x", n)) }
	for _, tc := range []struct {
		name    string
		c       notify.StateChange
		omitted string // the flag that must be set, "" for none
	}{
		{"60 KiB result", change(blob(60<<10), nil), ""},
		{"64 KiB result", change(blob(64<<10), nil), "resultOmitted"},
		// json.Marshal escapes <, so 20 KiB of them is 120 KiB on the wire.
		{"a result that grows when escaped", change(fmt.Appendf(nil, `{"blob":%q}`, strings.Repeat("<", 20<<10)), nil), "resultOmitted"},
		{"300 KiB result", change(blob(300<<10), nil), "resultOmitted"},
		{"100 KiB problem", change(nil, operation.NewProblem("resolved_failed", "Resolved as failed", strings.Repeat("p", 100<<10))), "problemOmitted"},
	} {
		b := notify.Encode(tc.c)
		var d map[string]any
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		if len(b) > notify.MaxDetailBytes {
			t.Errorf("%s: %d bytes", tc.name, len(b))
		}
		_, result := d["result"]
		_, problem := d["problem"]
		switch tc.omitted {
		case "":
			if !result || d["resultOmitted"] != nil {
				t.Errorf("%s: the result was omitted", tc.name)
			}
		case "resultOmitted":
			if result || d["resultOmitted"] != true || d["state"] != "succeeded" || d["version"] != 4.0 {
				t.Errorf("%s: %.200s", tc.name, b)
			}
		case "problemOmitted":
			if problem || d["problemOmitted"] != true || d["state"] != "failed" {
				t.Errorf("%s: %.200s", tc.name, b)
			}
		}
	}
}

// writes is an operation's history as its writers append it: each inner slice is one
// append (one transaction, one projection write). Facts of one decision share an instant.
func writes(id string) [][]operation.Fact {
	at := func(s int) time.Time { return time.Date(2026, 11, 30, 10, 0, s, 123456789, time.UTC) }
	accepted := operation.Fact{Kind: operation.KindAccepted, At: at(0), Source: operation.SourceAdmission, Actor: "alice",
		Admission: &operation.Admission{Type: "demo.task", TypeVersion: 1, Target: "demo:" + id, Tenant: "acme", Principal: "alice", Input: json.RawMessage(`{}`)}}
	switch id {
	case "op_ok":
		return [][]operation.Fact{{accepted},
			{{Kind: operation.KindDispatched, At: at(1), Source: operation.SourceDispatcher, Execution: "arn:x"}},
			{{Kind: operation.KindStarted, At: at(2), Source: operation.SourceExecutor}},
			{{Kind: operation.KindSucceeded, At: at(3), Source: operation.SourceExecutor, Result: json.RawMessage(`{"rows": 3, "note": "<ok>"}`)}}}
	case "op_awaiting", awaitingOp:
		// A step waits for an approval; the approval comes; the next step ends the wait.
		return [][]operation.Fact{{accepted},
			{{Kind: operation.KindDispatched, At: at(1), Source: operation.SourceDispatcher, Execution: "arn:x"}},
			{{Kind: operation.KindStarted, At: at(2), Source: operation.SourceExecutor}},
			{{Kind: operation.KindProgress, At: at(3), Source: operation.SourceExecutor, Progress: &operation.Progress{CompletedSteps: 1, Message: "Waiting for an approval."},
				Awaiting: &operation.Awaiting{Signal: "approval", Since: at(3), Until: at(3).Add(24 * time.Hour), Step: 1}}},
			{{Kind: operation.KindSignaled, At: at(4), Source: operation.SourceClient, Actor: "bob",
				Signal: &operation.Signal{Name: "approval", Data: json.RawMessage(`{"approved":true}`), Key: "k-approval", Fingerprint: "f"}}},
			{{Kind: operation.KindProgress, At: at(5), Source: operation.SourceExecutor, Progress: &operation.Progress{CompletedSteps: 2}}},
			{{Kind: operation.KindSucceeded, At: at(6), Source: operation.SourceExecutor, Result: json.RawMessage(`{"approved":true}`)}}}
	case "op_canceled":
		// Cancel before dispatch: the intent and its result are one append.
		return [][]operation.Fact{{accepted}, {
			{Kind: operation.KindCancelRequested, At: at(1), Source: operation.SourceClient, Actor: "alice"},
			{Kind: operation.KindCanceled, At: at(1), Source: operation.SourceClient, Actor: "alice"}}}
	default:
		return [][]operation.Fact{{accepted},
			{{Kind: operation.KindDispatched, At: at(1), Source: operation.SourceDispatcher, Execution: "arn:x"}},
			{{Kind: operation.KindFailed, At: at(2), Source: operation.SourceReconciler, Problem: operation.NewProblem("execution_ended", "Execution ended", "It ended.")}}}
	}
}

// record is the projection's stream record of one append, as the store writes it (the rep
// of the fold after the append; the old image's state and version before it).
func record(t *testing.T, seq int, before, after operation.Operation) events.DynamoDBEventRecord {
	t.Helper()
	rep, err := json.Marshal(after.Represent(""))
	if err != nil {
		t.Fatal(err)
	}
	var r events.DynamoDBEventRecord
	r.EventName = "INSERT"
	r.Change.SequenceNumber = fmt.Sprint(seq)
	r.Change.NewImage = map[string]events.DynamoDBAttributeValue{
		"pk": events.NewStringAttribute("OP#" + after.ID), "sk": events.NewStringAttribute("META"),
		"tenant": events.NewStringAttribute(after.Tenant), "state": events.NewStringAttribute(string(after.State)),
		"version": events.NewNumberAttribute(fmt.Sprint(after.Version)), "rep": events.NewStringAttribute(string(rep)),
	}
	if before.Version > 0 {
		r.EventName = "MODIFY"
		r.Change.OldImage = map[string]events.DynamoDBAttributeValue{"sk": events.NewStringAttribute("META"),
			"state": events.NewStringAttribute(string(before.State)), "version": events.NewNumberAttribute(fmt.Sprint(before.Version))}
	}
	return r
}

// rawBus keeps what it publishes as sent, and can be down.
type rawBus struct {
	down  bool
	calls int
	got   [][]byte
}

func (b *rawBus) Publish(_ context.Context, evs []notify.Event) ([]bool, error) {
	b.calls++
	published := make([]bool, len(evs))
	if b.down {
		return published, errors.New("ServiceUnavailable")
	}
	for i, e := range evs {
		b.got = append(b.got, e.Detail)
		published[i] = true
	}
	return published, nil
}

// Defect 4 (issue #12), an EventBridge outage that outlasts the event source mapping's
// retries: every attempt reports the whole batch as failed (nothing is dropped by the
// notifier); after the last one the mapping skips the batch and the stream forgets it. The
// facts remember: Republish brings every version of every operation to the bus, in version
// order, byte for byte what the stream path publishes, so subscribers dedupe it.
func TestOutageOutlastingTheRetriesLosesNothing(t *testing.T) {
	ids := []string{"op_ok", "op_canceled", "op_failed", "op_awaiting"}
	facts := map[string][]operation.Fact{}
	ops := map[string]operation.Operation{}
	var batch events.DynamoDBEvent
	for step := 0; ; step++ { // the operations' appends interleave in the stream
		more := false
		for _, id := range ids {
			w := writes(id)
			if step >= len(w) {
				continue
			}
			more = true
			before := ops[id]
			before.ID = id
			after := before
			for _, f := range w[step] {
				f.Version = after.Version + 1
				var err error
				if after, err = after.Apply(f); err != nil {
					t.Fatal(err)
				}
				facts[id] = append(facts[id], f)
			}
			ops[id] = after
			batch.Records = append(batch.Records, record(t, len(batch.Records)+1, before, after))
		}
		if !more {
			break
		}
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))

	// What the stream path publishes when the bus is up.
	up := &rawBus{}
	if resp, _ := (&notify.Notifier{Bus: up, Changes: dynamo.ProjectionChange, Log: log}).HandleStream(context.Background(), batch); len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp)
	}

	// The outage: the first attempt and every retry fail the whole batch.
	down := &rawBus{down: true}
	n := &notify.Notifier{Bus: down, Changes: dynamo.ProjectionChange, Log: log,
		Facts: func(_ context.Context, id string) ([]operation.Fact, error) { return facts[id], nil }}
	for attempt := 0; attempt <= eventsource.Notifier().MaxRetries; attempt++ {
		resp, err := n.HandleStream(context.Background(), batch)
		if err != nil || len(resp.BatchItemFailures) != len(batch.Records) || resp.BatchItemFailures[0].ItemIdentifier != "1" {
			t.Fatalf("attempt %d reported %d of %d records failed: %v", attempt, len(resp.BatchItemFailures), len(batch.Records), err)
		}
	}
	if len(down.got) != 0 {
		t.Fatalf("%d published during the outage", len(down.got))
	}

	// The mapping has given up on the batch. The bus is back; the operator republishes.
	down.down = false
	for _, id := range ids {
		versions, err := n.Republish(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: versions %v", id, versions)
	}
	streamed := map[string][]string{}
	for _, d := range up.got {
		var k struct{ OperationID string }
		_ = json.Unmarshal(d, &k)
		streamed[k.OperationID] = append(streamed[k.OperationID], string(d))
	}
	republished := map[string][]string{}
	last := map[string]int{}
	for _, d := range down.got {
		var k struct {
			OperationID string
			Version     int
		}
		_ = json.Unmarshal(d, &k)
		if k.Version <= last[k.OperationID] {
			t.Errorf("%s: version %d republished after %d", k.OperationID, k.Version, last[k.OperationID])
		}
		last[k.OperationID] = k.Version
		republished[k.OperationID] = append(republished[k.OperationID], string(d))
	}
	for _, id := range ids {
		if fmt.Sprint(republished[id]) != fmt.Sprint(streamed[id]) {
			t.Errorf("%s republished:\n%s\nthe stream path published:\n%s", id, strings.Join(republished[id], "\n"), strings.Join(streamed[id], "\n"))
		}
	}
	if len(down.got) != len(batch.Records) {
		t.Errorf("republished %d events, the stream carried %d changes", len(down.got), len(batch.Records))
	}
}

// Republish stops at the bus's failure and says how far it got.
func TestRepublishReportsWhatItPublished(t *testing.T) {
	var facts []operation.Fact
	for _, w := range writes("op_ok") {
		for _, f := range w {
			f.Version = len(facts) + 1
			facts = append(facts, f)
		}
	}
	b := &bus{failAt: 2}
	n := &notify.Notifier{Bus: b, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Facts: func(context.Context, string) ([]operation.Fact, error) { return facts, nil }}
	versions, err := n.Republish(context.Background(), "op_ok")
	if err == nil || fmt.Sprint(versions) != "[1 2]" {
		t.Fatalf("%v %v", versions, err)
	}
	if _, err := notify.History("op_x", facts[1:]); !errors.Is(err, operation.ErrMalformedHistory) {
		t.Fatalf("a history without its accepted fact: %v", err)
	}
}

// awaitingOp is the id of the operation whose work waits for a signal (writes), in the
// contract's form, so its events can be held to the published schema.
const awaitingOp = "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3"

// A step that waits for a signal is a committed change like any other: its event carries
// the representation's awaiting (the signal, since and until), and so does every event until
// the next step ends the wait, the signal's own included; the events conform to the
// published schema, and Republish rebuilds them byte for byte.
func TestEventsCarryTheWaitForASignal(t *testing.T) {
	var facts []operation.Fact
	var batch events.DynamoDBEvent
	var op operation.Operation
	op.ID = awaitingOp
	for _, w := range writes(awaitingOp) {
		before := op
		for _, f := range w {
			f.Version = op.Version + 1
			var err error
			if op, err = op.Apply(f); err != nil {
				t.Fatal(err)
			}
			facts = append(facts, f)
		}
		batch.Records = append(batch.Records, record(t, len(batch.Records)+1, before, op))
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	up := &rawBus{}
	n := &notify.Notifier{Bus: up, Changes: dynamo.ProjectionChange, Log: log,
		Facts: func(context.Context, string) ([]operation.Fact, error) { return facts, nil }}
	if resp, err := n.HandleStream(context.Background(), batch); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp, err)
	}
	v, err := eventschemas.NewValidator(eventschemas.StateChangedSchema)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{ // version → the detail's awaiting
		4: `{"signal":"approval","since":"2026-11-30T10:00:03.123Z","until":"2026-12-01T10:00:03.123Z"}`,
		5: `{"signal":"approval","since":"2026-11-30T10:00:03.123Z","until":"2026-12-01T10:00:03.123Z"}`,
	}
	if len(up.got) != 7 {
		t.Fatalf("%d events, want 7", len(up.got))
	}
	for _, d := range up.got {
		var got struct {
			Version  int
			State    string
			Awaiting json.RawMessage
		}
		if err := json.Unmarshal(d, &got); err != nil {
			t.Fatal(err)
		}
		if string(got.Awaiting) != want[got.Version] {
			t.Errorf("version %d (%s): awaiting %s, want %q", got.Version, got.State, got.Awaiting, want[got.Version])
		}
		event := []byte(`{"source":"longrun","detail-type":"Operation State Changed","detail":` + string(d) + `}`)
		if err := v.Validate(event); err != nil {
			t.Errorf("version %d: %v\n%s", got.Version, err, d)
		}
	}

	down := &rawBus{}
	n.Bus = down
	if _, err := n.Republish(context.Background(), awaitingOp); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%s", down.got) != fmt.Sprintf("%s", up.got) {
		t.Errorf("republished:\n%s\nthe stream path published:\n%s", down.got, up.got)
	}
}

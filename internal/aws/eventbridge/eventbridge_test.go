package eventbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventbridge"
	"github.com/longrun-dev/longrun/internal/service/notify"
)

// awsLimit is PutEvents' limit on a call's entries, in total and for each one (256 KB).
const awsLimit = 256 * 1024

// awsSize is an entry's size as EventBridge computes it (the EventBridge user guide,
// "Calculating PutEvents event entry size"): 14 bytes for Time if set, and the UTF-8 bytes
// of Source, DetailType, Detail and each of Resources. Written here independently of the
// adapter, so the fake does not share the adapter's mistakes.
func awsSize(e types.PutEventsRequestEntry) int {
	n := 0
	if e.Time != nil {
		n += 14
	}
	n += len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// fakeEventBridge answers PutEvents as EventBridge does about limits: a call with more than
// ten entries, or whose entries total more than 256 KB, fails as a whole (an error, nothing
// published). Otherwise every entry is published, in order.
type fakeEventBridge struct {
	calls     []int    // total entry size of each accepted call
	rejected  int      // calls refused for their size or count
	published []string // details, in publish order
}

func (f *fakeEventBridge) PutEvents(_ context.Context, in *sdk.PutEventsInput, _ ...func(*sdk.Options)) (*sdk.PutEventsOutput, error) {
	total := 0
	for _, e := range in.Entries {
		total += awsSize(e)
	}
	if len(in.Entries) > 10 || total > awsLimit {
		f.rejected++
		return nil, fmt.Errorf("api error ValidationException: Total size of the entries in the request is over the limit (%d entries, %d bytes)", len(in.Entries), total)
	}
	out := &sdk.PutEventsOutput{}
	for _, e := range in.Entries {
		f.published = append(f.published, aws.ToString(e.Detail))
		out.Entries = append(out.Entries, types.PutEventsResultEntry{EventId: aws.String("id")})
	}
	f.calls = append(f.calls, total)
	return out, nil
}

// event is operation op_<i>'s event, a notifier-like detail padded with a result of about
// size bytes.
func event(i, size int) notify.Event {
	id := fmt.Sprintf("op_%d", i)
	return notify.Event{OperationID: id,
		Detail: fmt.Appendf(nil, `{"operationId":"%s","version":4,"state":"succeeded","result":{"blob":"%s"}}`, id, strings.Repeat("x", size))}
}

// count is how many are true.
func count(published []bool) int {
	n := 0
	for _, p := range published {
		if p {
			n++
		}
	}
	return n
}

// Defect 4 (issue #12): ten events whose results are large (60 KiB each, under the API's
// 64 KiB) are one batch by count, but 600 KB for PutEvents, which refuses the whole call
// every time. Cut by bytes, every call stays within 256 KB and all ten are published in
// order.
func TestLargeResultsAreCutByBytesNotJustByCount(t *testing.T) {
	fake := &fakeEventBridge{}
	bus := &eventbridge.Bus{Client: fake, Name: "longrun-test"}
	var evs []notify.Event
	for i := range 10 {
		evs = append(evs, event(i, 60<<10))
	}
	published, err := bus.Publish(context.Background(), evs)
	if err != nil || count(published) != len(evs) {
		t.Fatalf("published %d of %d: %v (calls refused for their size: %d)", count(published), len(evs), err, fake.rejected)
	}
	if fake.rejected != 0 || len(fake.calls) < 3 {
		t.Fatalf("%d calls refused, %d accepted", fake.rejected, len(fake.calls))
	}
	for i, d := range fake.published {
		if d != string(evs[i].Detail) {
			t.Fatalf("entry %d out of order", i)
		}
	}
}

// Small events still go ten to a call.
func TestSmallEventsGoTenToACall(t *testing.T) {
	fake := &fakeEventBridge{}
	bus := &eventbridge.Bus{Client: fake, Name: "longrun-test"}
	var evs []notify.Event
	for i := range 25 {
		evs = append(evs, event(i, 10))
	}
	if published, err := bus.Publish(context.Background(), evs); err != nil || count(published) != 25 || len(fake.calls) != 3 {
		t.Fatalf("published %d in %d calls: %v", count(published), len(fake.calls), err)
	}
}

// projection is the stream record of a projection's change to version 4, succeeded with
// result, as the store writes it.
func projection(i int, result string) events.DynamoDBEventRecord {
	return record(fmt.Sprintf("op_01JDY3Q4W5E6R7T8Y9V0A1B2%02d", i), 100+i, 4, "succeeded",
		map[string]any{"terminal": true, "result": json.RawMessage(result)})
}

// record is the stream record of operation id's change from running to state at version,
// its representation carrying more as well.
func record(id string, seq, version int, state string, more map[string]any) events.DynamoDBEventRecord {
	fields := map[string]any{"operationId": id, "type": "demo.task", "target": "demo:x", "state": state,
		"version": version, "updatedAt": "2026-11-30T10:00:04.000Z"}
	maps.Copy(fields, more)
	rep, _ := json.Marshal(fields)
	var r events.DynamoDBEventRecord
	r.EventName = "MODIFY"
	r.Change.SequenceNumber = fmt.Sprint(seq)
	r.Change.NewImage = map[string]events.DynamoDBAttributeValue{
		"pk": events.NewStringAttribute("OP#" + id), "sk": events.NewStringAttribute("META"),
		"tenant": events.NewStringAttribute("acme"), "state": events.NewStringAttribute(state),
		"version": events.NewNumberAttribute(fmt.Sprint(version)), "rep": events.NewStringAttribute(string(rep)),
	}
	r.Change.OldImage = map[string]events.DynamoDBAttributeValue{
		"sk": events.NewStringAttribute("META"), "state": events.NewStringAttribute("running"), "version": events.NewNumberAttribute(fmt.Sprint(version - 1)),
	}
	return r
}

// Defect 4 end to end in process: the notifier's stream batch with large results (ten of
// 60 KiB, one of 300 KiB, which no PutEvents call can carry) is published in full, in
// stream order, without a call over 256 KB; the over-size one carries a reference
// (resultOmitted) instead of its result.
func TestNotifierBatchWithLargeResults(t *testing.T) {
	fake := &fakeEventBridge{}
	n := &notify.Notifier{Bus: &eventbridge.Bus{Client: fake, Name: "longrun-test"}, Changes: dynamo.ProjectionChange,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	var ev events.DynamoDBEvent
	for i := range 12 {
		size := 60 << 10
		switch i {
		case 5:
			size = 300 << 10
		case 11:
			size = 10
		}
		ev.Records = append(ev.Records, projection(i, fmt.Sprintf(`{"blob":%q}`, strings.Repeat("y", size))))
	}
	resp, err := n.HandleStream(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%d records failed (%d calls refused for their size): %v", len(resp.BatchItemFailures), fake.rejected, err)
	}
	if len(fake.published) != 12 || fake.rejected != 0 {
		t.Fatalf("published %d, %d calls refused", len(fake.published), fake.rejected)
	}
	for i, raw := range fake.published {
		var d map[string]any
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("op_01JDY3Q4W5E6R7T8Y9V0A1B2%02d", i); d["operationId"] != want {
			t.Fatalf("entry %d is %v, want %s", i, d["operationId"], want)
		}
		_, hasResult := d["result"]
		if i == 5 {
			if hasResult || d["resultOmitted"] != true || len(raw) > notify.MaxDetailBytes {
				t.Fatalf("the over-size result went out as %d bytes, resultOmitted %v", len(raw), d["resultOmitted"])
			}
			continue
		}
		if !hasResult || d["resultOmitted"] != nil {
			t.Fatalf("entry %d lost its result", i)
		}
	}
	for _, total := range fake.calls {
		if total > awsLimit {
			t.Fatalf("a call of %d bytes", total)
		}
	}
}

// The adapter never counts an entry smaller than EventBridge does.
func TestEntrySizeIsNeverBelowAWSCount(t *testing.T) {
	e := types.PutEventsRequestEntry{EventBusName: aws.String("longrun-dev"), Source: aws.String(notify.Source),
		DetailType: aws.String(notify.DetailType), Detail: aws.String(`{"target":"café ☕"}`), Resources: []string{"arn:x"}}
	if got, aws := eventbridge.EntrySize(e), awsSize(e); got < aws {
		t.Fatalf("EntrySize %d < EventBridge's %d", got, aws)
	}
}

// An entry no call can carry is an error, after what precedes it was published and before
// anything after it is sent (so the order holds). The notifier never makes one.
func TestAnEntryNoCallCanCarryStopsThere(t *testing.T) {
	fake := &fakeEventBridge{}
	bus := &eventbridge.Bus{Client: fake, Name: "longrun-test"}
	published, err := bus.Publish(context.Background(), []notify.Event{event(0, 10), event(1, 300<<10), event(2, 10)})
	if fmt.Sprint(published) != "[true false false]" || err == nil || !strings.Contains(err.Error(), "over PutEvents'") || fake.rejected != 0 || len(fake.published) != 1 {
		t.Fatalf("published %v (%d at the fake, %d refused): %v", published, len(fake.published), fake.rejected, err)
	}
}

// flakyEventBridge publishes what a PutEvents call carries, entry by entry, except the
// entries fail says to fail: those get an error code, as EventBridge reports a partial
// failure, while the others in the same call are on the bus.
type flakyEventBridge struct {
	fail     func(d notify.Detail, attempt int) bool // attempt: 1 the first time the entry is sent
	attempts map[string]int
	calls    [][]string // operationId@version of each call's entries
	bus      []notify.Detail
	pauses   []time.Duration // the adapter's, before it sends failed entries again
}

func (f *flakyEventBridge) PutEvents(_ context.Context, in *sdk.PutEventsInput, _ ...func(*sdk.Options)) (*sdk.PutEventsOutput, error) {
	if f.attempts == nil {
		f.attempts = map[string]int{}
	}
	out := &sdk.PutEventsOutput{}
	var call []string
	for _, e := range in.Entries {
		var d notify.Detail
		if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
			return nil, err
		}
		key := fmt.Sprintf("%s@%d", d.OperationID, d.Version)
		call = append(call, key)
		f.attempts[key]++
		if f.fail != nil && f.fail(d, f.attempts[key]) {
			out.FailedEntryCount++
			out.Entries = append(out.Entries, types.PutEventsResultEntry{ErrorCode: aws.String("InternalFailure"), ErrorMessage: aws.String("try again")})
			continue
		}
		f.bus = append(f.bus, d)
		out.Entries = append(out.Entries, types.PutEventsResultEntry{EventId: aws.String("id-" + key)})
	}
	f.calls = append(f.calls, call)
	return out, nil
}

// interleaved is a stream batch in which three operations' versions interleave, as the
// changes of concurrent operations do: a, b, c at versions 2 to 5.
func interleaved() events.DynamoDBEvent {
	var ev events.DynamoDBEvent
	for v := 2; v <= 5; v++ {
		for _, id := range []string{"op_a", "op_b", "op_c"} {
			ev.Records = append(ev.Records, record(id, 1000+len(ev.Records), v, "running", nil)) // every version a change
		}
	}
	return ev
}

// versionsOnTheBus is each operation's versions in the order the bus got them.
func versionsOnTheBus(bus []notify.Detail) map[string][]int {
	out := map[string][]int{}
	for _, d := range bus {
		out[d.OperationID] = append(out[d.OperationID], d.Version)
	}
	return out
}

func newNotifier(fake *flakyEventBridge) *notify.Notifier {
	pause := func(_ context.Context, d time.Duration) error { fake.pauses = append(fake.pauses, d); return nil }
	return &notify.Notifier{Bus: &eventbridge.Bus{Client: fake, Name: "longrun-test", Pause: pause}, Changes: dynamo.ProjectionChange,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
}

// Issue #20, 10: PutEvents failed some entries of a call and published the others. Only the
// failed entries are sent again, before anything after them, and one call never carries two
// versions of one operation, so no version reaches the bus before an earlier one of its
// operation, and none reaches it twice.
func TestAPartialFailureSendsOnlyWhatFailedInOrder(t *testing.T) {
	fake := &flakyEventBridge{fail: func(d notify.Detail, attempt int) bool {
		return d.OperationID == "op_a" && d.Version == 2 && attempt == 1 || // the first entry of the first call
			d.OperationID == "op_b" && d.Version == 3 && attempt <= 2 // in the middle, twice
	}}
	resp, err := newNotifier(fake).HandleStream(context.Background(), interleaved())
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v, %v: the failed entries were not sent again", resp.BatchItemFailures, err)
	}
	want := map[string][]int{"op_a": {2, 3, 4, 5}, "op_b": {2, 3, 4, 5}, "op_c": {2, 3, 4, 5}}
	if got := versionsOnTheBus(fake.bus); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the bus got %v, want each version once, in order: %v (calls %v)", got, want, fake.calls)
	}
	sent := 0
	for _, call := range fake.calls {
		sent += len(call)
		seen := map[string]bool{}
		for _, key := range call {
			id, _, _ := strings.Cut(key, "@")
			if seen[id] {
				t.Errorf("a call with two versions of %s: %v", id, call)
			}
			seen[id] = true
		}
	}
	if sent != 12+3 {
		t.Fatalf("%d entries sent for 12 events and 3 failures: more than what failed was sent again (calls %v)", sent, fake.calls)
	}
	if fmt.Sprint(fake.pauses) != "[100ms 100ms 200ms]" {
		t.Fatalf("pauses %v before sending failed entries again", fake.pauses)
	}
}

// Issue #20, 10: an entry that keeps failing. The notifier reports exactly the records not
// on the bus, and the event source mapping delivers the batch again from the earliest of
// them (as a mapping does with partial batch responses), so some versions go out twice. Each
// operation's versions still reach the bus in order: a version again is its operation's
// latest on the bus, never an older one after a newer.
func TestAnEntryThatKeepsFailingLeavesEachOperationInOrder(t *testing.T) {
	down := true
	fake := &flakyEventBridge{fail: func(d notify.Detail, _ int) bool {
		return down && d.OperationID == "op_b" && d.Version == 3
	}}
	n := newNotifier(fake)
	ev := interleaved()
	resp, err := n.HandleStream(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) == 0 {
		t.Fatalf("%v %v", resp, err)
	}
	if fake.attempts["op_b@3"] != eventbridge.MaxAttempts || fmt.Sprint(fake.pauses) != "[100ms 200ms 400ms]" {
		t.Fatalf("op_b@3 sent %d times, pauses %v", fake.attempts["op_b@3"], fake.pauses)
	}
	onBus := map[string]bool{}
	for _, d := range fake.bus {
		onBus[fmt.Sprintf("%d", d.Version)+d.OperationID] = true
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	first := len(ev.Records)
	for i, r := range ev.Records {
		c, _, _ := dynamo.ProjectionChange(r)
		published := onBus[fmt.Sprintf("%d", c.Version)+c.OperationID]
		if failed[r.Change.SequenceNumber] == published {
			t.Errorf("%s@%d: on the bus %v, reported failed %v", c.OperationID, c.Version, published, failed[r.Change.SequenceNumber])
		}
		if !published {
			first = min(first, i)
		}
	}
	down = false
	again := events.DynamoDBEvent{Records: ev.Records[first:]}
	if resp, err := n.HandleStream(context.Background(), again); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the retry: %v %v", resp, err)
	}
	for id, versions := range versionsOnTheBus(fake.bus) {
		for i := 1; i < len(versions); i++ {
			if versions[i] < versions[i-1] {
				t.Errorf("%s: version %d after %d on the bus (%v)", id, versions[i], versions[i-1], versions)
			}
		}
		if last := versions[len(versions)-1]; last != 5 {
			t.Errorf("%s ends at version %d", id, last)
		}
	}
}

// The adapter as NewBus builds it, with the SDK's own client, against a server that answers
// PutEvents as EventBridge does when it fails some entries (HTTP 200, FailedEntryCount and
// an ErrorCode on each failed entry): the SDK hands the partial failure over, and the
// adapter sends only the failed entry again.
func TestThePartialFailureAsEventBridgeAnswersIt(t *testing.T) {
	var mu sync.Mutex
	var sent []string // operationId@version of every entry received, in order
	tries := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
			http.Error(w, "not PutEvents", http.StatusBadRequest)
			return
		}
		var in struct {
			Entries []struct{ Detail, EventBusName string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type result struct {
			EventID      string `json:"EventId,omitempty"`
			ErrorCode    string `json:"ErrorCode,omitempty"`
			ErrorMessage string `json:"ErrorMessage,omitempty"`
		}
		var out struct {
			FailedEntryCount int
			Entries          []result
		}
		mu.Lock()
		for _, e := range in.Entries {
			var d notify.Detail
			_ = json.Unmarshal([]byte(e.Detail), &d)
			key := fmt.Sprintf("%s@%d", d.OperationID, d.Version)
			sent = append(sent, key)
			tries[key]++
			if key == "op_a@3" && tries[key] == 1 || e.EventBusName != "longrun-test" {
				out.FailedEntryCount++
				out.Entries = append(out.Entries, result{ErrorCode: "InternalFailure", ErrorMessage: "Internal Failure"})
				continue
			}
			out.Entries = append(out.Entries, result{EventID: "id-" + key})
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()

	bus := eventbridge.NewBus(aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}, BaseEndpoint: aws.String(srv.URL)}, "longrun-test")
	bus.Pause = func(context.Context, time.Duration) error { return nil }
	var evs []notify.Event
	for v := 2; v <= 4; v++ {
		for _, id := range []string{"op_a", "op_b"} {
			evs = append(evs, notify.Event{OperationID: id, Detail: fmt.Appendf(nil, `{"operationId":%q,"version":%d}`, id, v)})
		}
	}
	published, err := bus.Publish(context.Background(), evs)
	if err != nil || count(published) != len(evs) {
		t.Fatalf("published %v: %v", published, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(sent, " "); got != "op_a@2 op_b@2 op_a@3 op_b@3 op_a@3 op_a@4 op_b@4" {
		t.Fatalf("sent %s", got)
	}
}

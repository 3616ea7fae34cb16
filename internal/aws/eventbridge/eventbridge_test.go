package eventbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

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

// detail is a notifier-like detail padded with a result of about size bytes.
func detail(i, size int) []byte {
	return fmt.Appendf(nil, `{"operationId":"op_%d","version":4,"state":"succeeded","result":{"blob":"%s"}}`, i, strings.Repeat("x", size))
}

// Defect 4 (issue #12): ten events whose results are large (60 KiB each, under the API's
// 64 KiB) are one batch by count, but 600 KB for PutEvents, which refuses the whole call
// every time. Cut by bytes, every call stays within 256 KB and all ten are published in
// order.
func TestLargeResultsAreCutByBytesNotJustByCount(t *testing.T) {
	fake := &fakeEventBridge{}
	bus := &eventbridge.Bus{Client: fake, Name: "longrun-test"}
	var details [][]byte
	for i := range 10 {
		details = append(details, detail(i, 60<<10))
	}
	published, err := bus.Publish(context.Background(), details)
	if err != nil || published != len(details) {
		t.Fatalf("published %d of %d: %v (calls refused for their size: %d)", published, len(details), err, fake.rejected)
	}
	if fake.rejected != 0 || len(fake.calls) < 3 {
		t.Fatalf("%d calls refused, %d accepted", fake.rejected, len(fake.calls))
	}
	for i, d := range fake.published {
		if d != string(details[i]) {
			t.Fatalf("entry %d out of order", i)
		}
	}
}

// Small events still go ten to a call.
func TestSmallEventsGoTenToACall(t *testing.T) {
	fake := &fakeEventBridge{}
	bus := &eventbridge.Bus{Client: fake, Name: "longrun-test"}
	var details [][]byte
	for i := range 25 {
		details = append(details, detail(i, 10))
	}
	if n, err := bus.Publish(context.Background(), details); err != nil || n != 25 || len(fake.calls) != 3 {
		t.Fatalf("published %d in %d calls: %v", n, len(fake.calls), err)
	}
}

// projection is the stream record of a projection's change to version 4, succeeded with
// result, as the store writes it.
func projection(i int, result string) events.DynamoDBEventRecord {
	id := fmt.Sprintf("op_01JDY3Q4W5E6R7T8Y9V0A1B2%02d", i)
	rep, _ := json.Marshal(map[string]any{"operationId": id, "type": "demo.task", "target": "demo:x", "state": "succeeded",
		"terminal": true, "version": 4, "updatedAt": "2026-11-30T10:00:04.000Z", "result": json.RawMessage(result)})
	var r events.DynamoDBEventRecord
	r.EventName = "MODIFY"
	r.Change.SequenceNumber = fmt.Sprint(100 + i)
	r.Change.NewImage = map[string]events.DynamoDBAttributeValue{
		"pk": events.NewStringAttribute("OP#" + id), "sk": events.NewStringAttribute("META"),
		"tenant": events.NewStringAttribute("acme"), "state": events.NewStringAttribute("succeeded"),
		"version": events.NewNumberAttribute("4"), "rep": events.NewStringAttribute(string(rep)),
	}
	r.Change.OldImage = map[string]events.DynamoDBAttributeValue{
		"sk": events.NewStringAttribute("META"), "state": events.NewStringAttribute("running"), "version": events.NewNumberAttribute("3"),
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
	details := [][]byte{detail(0, 10), detail(1, 300<<10), detail(2, 10)}
	n, err := bus.Publish(context.Background(), details)
	if n != 1 || err == nil || !strings.Contains(err.Error(), "over PutEvents'") || fake.rejected != 0 || len(fake.published) != 1 {
		t.Fatalf("published %d (%d at the fake, %d refused): %v", n, len(fake.published), fake.rejected, err)
	}
}

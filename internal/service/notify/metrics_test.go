package notify_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/service/notify"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

// The stream path counts the events it published and those a failed publish left for the
// retry, and measures each published event's lag from the instant of its change; the
// retry publishes the rest, later, and its lag says so.
func TestPublishingIsMeasured(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 5, 0, time.UTC)
	enc, buf := emftest.Encoder(t, "longrun-notifier", func() time.Time { return now })
	b := &bus{failAt: 2}
	n := &notify.Notifier{Bus: b, Changes: dynamo.ProjectionChange, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Metrics: enc, Now: func() time.Time { return now }}
	// updatedAt of version v is 10:00:0v.
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		projection("op_1", "1", 0, 1, "", "accepted"),
		projection("op_1", "2", 1, 2, "accepted", "dispatched"),
		projection("op_1", "3", 2, 3, "dispatched", "running"),
	}}
	resp, err := n.HandleStream(context.Background(), batch)
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("%+v %v", resp, err)
	}
	// The mapping retries the failed record two seconds later; the bus is back.
	now = now.Add(2 * time.Second)
	b.failAt = -1
	if resp, err := n.HandleStream(context.Background(), events.DynamoDBEvent{Records: batch.Records[2:]}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	// A batch with nothing to publish reports nothing.
	if _, err := n.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		projection("op_1", "4", 3, 3, "running", "running")}}); err != nil {
		t.Fatal(err)
	}

	points, err := emftest.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range points {
		if p.Dims["Service"] != "longrun-notifier" || len(p.Dims) != 1 || p.Namespace != emf.DefaultNamespace {
			t.Errorf("dimensions %+v", p)
		}
		got = append(got, fmt.Sprint(p.Name, " ", p.Unit, " ", p.Value))
	}
	want := []string{
		"PublishFailures Count 1",
		"NotifyLag Milliseconds 4000", "NotifyLag Milliseconds 3000", "EventsPublished Count 2",
		"NotifyLag Milliseconds 4000", "EventsPublished Count 1",
	}
	if len(got) != len(want) {
		t.Fatalf("got %q\nwant %q\n%s", got, want, buf.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// Without a clock the notifier measures no lag, and without Metrics it counts nothing (and
// does not fail).
func TestNoClockNoLag(t *testing.T) {
	var buf bytes.Buffer
	enc, err := emf.New(&buf, "longrun-notifier")
	if err != nil {
		t.Fatal(err)
	}
	rec := []events.DynamoDBEventRecord{projection("op_1", "1", 0, 1, "", "accepted")}
	n := &notify.Notifier{Bus: &bus{failAt: -1}, Changes: dynamo.ProjectionChange, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: enc}
	if _, err := n.HandleStream(context.Background(), events.DynamoDBEvent{Records: rec}); err != nil {
		t.Fatal(err)
	}
	points, err := emftest.Parse(buf.Bytes())
	if err != nil || len(points) != 1 || points[0].Name != "EventsPublished" {
		t.Fatalf("%+v %v", points, err)
	}
	n.Metrics = nil
	if _, err := n.HandleStream(context.Background(), events.DynamoDBEvent{Records: rec}); err != nil {
		t.Fatal(err)
	}
}

package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/service/notify"
)

type bus struct {
	got     []notify.Detail
	failAt  int // publish fails at this index (-1: never)
	batches int
}

func (b *bus) Publish(_ context.Context, details [][]byte) (int, error) {
	b.batches++
	for i, d := range details {
		if i == b.failAt {
			return i, errors.New("throttled")
		}
		var det notify.Detail
		_ = json.Unmarshal(d, &det)
		b.got = append(b.got, det)
	}
	return len(details), nil
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

// A failure stops the batch there: that record and every later one are retried, so no
// subscriber gets a version after a later one from the same batch.
func TestFailureRetriesFromThere(t *testing.T) {
	b := &bus{failAt: 1}
	n := &notify.Notifier{Bus: b, Changes: dynamo.ProjectionChange, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		projection("op_1", "10", 0, 1, "", "accepted"),
		projection("op_2", "11", 0, 1, "", "accepted"),
		projection("op_1", "12", 1, 2, "accepted", "dispatched"),
	}}
	resp, _ := n.HandleStream(context.Background(), ev)
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if fmt.Sprint(failed) != "[11 12]" || len(b.got) != 1 {
		t.Fatalf("failed %v published %+v", failed, b.got)
	}
}

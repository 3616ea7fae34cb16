package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/notify"
)

// The event and the notifier's line about it carry the operation's correlation id, read
// from the projection; a rebuilt history carries it too.
func TestEventsCarryTheCorrelationID(t *testing.T) {
	b := &bus{failAt: -1}
	var out bytes.Buffer
	n := &notify.Notifier{Bus: b, Changes: dynamo.ProjectionChange, Log: slog.New(lambdalog.New(&out, "longrun-notifier", slog.LevelInfo))}
	rec := projection("op_1", "1", 0, 1, "", "accepted")
	rec.Change.NewImage["correlation_id"] = events.NewStringAttribute("corr-notify")
	if _, err := n.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}); err != nil {
		t.Fatal(err)
	}
	if len(b.got) != 1 || b.got[0].CorrelationID != "corr-notify" {
		t.Fatalf("%+v", b.got)
	}
	var perEvent map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if m["message"] == "event published" {
			perEvent = m
		}
	}
	if perEvent["operation_id"] != "op_1" || perEvent["correlation_id"] != "corr-notify" || perEvent["version"] != float64(1) {
		t.Errorf("the line about the event: %v\n%s", perEvent, out.String())
	}
	facts := writes("op_ok")
	facts[0][0].Admission.CorrelationID = "corr-history"
	var all []operation.Fact
	for _, w := range facts {
		for _, f := range w {
			f.Version = len(all) + 1
			all = append(all, f)
		}
	}
	changes, err := notify.History("op_ok", all)
	if err != nil || len(changes) == 0 {
		t.Fatal(err)
	}
	for _, c := range changes {
		if notify.DetailOf(c).CorrelationID != "corr-history" {
			t.Errorf("v%d: %+v", c.Version, notify.DetailOf(c))
		}
	}
}

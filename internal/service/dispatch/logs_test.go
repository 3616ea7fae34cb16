package dispatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// The execution's input and the dispatcher's line carry the operation's correlation id.
func TestDispatchCarriesTheCorrelationID(t *testing.T) {
	f := newFixture(t)
	var out bytes.Buffer
	d, err := dispatch.New(dispatch.Dispatcher{Store: f.store, Executor: f.exec, Registry: optype.Builtin(), DeadLetters: f.dlq,
		Now: time.Now, Log: slog.New(lambdalog.New(&out, "longrun-dispatcher", slog.LevelInfo)), Accepted: dynamo.OutboxOperation})
	if err != nil {
		t.Fatal(err)
	}
	id := f.admit.AdmitCorrelated(t, "", "corr-dispatch")
	resp, err := d.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{dynamotest.FactRecord(id, "accepted", "1")}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	var in dispatch.Input
	if err := json.Unmarshal(f.exec.Executions()[id].Input, &in); err != nil || in.OperationID != id || in.CorrelationID != "corr-dispatch" {
		t.Errorf("execution input %s (%v)", f.exec.Executions()[id].Input, err)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &line); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	if line["message"] != "dispatched" || line["operation_id"] != id || line["correlation_id"] != "corr-dispatch" || line["service"] != "longrun-dispatcher" {
		t.Errorf("line %v", line)
	}
}

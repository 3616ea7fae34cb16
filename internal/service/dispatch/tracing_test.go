package dispatch_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/tracelink"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// The dispatcher's span for an operation is a child of the invocation's and links to the
// admission's span (recorded with the operation); the execution's input carries the
// dispatcher span's own traceparent, for the recorder's spans to link to.
func TestExecutionInputCarriesTheDispatchSpan(t *testing.T) {
	f := newFixture(t)
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	d, err := dispatch.New(dispatch.Dispatcher{Store: f.store, Executor: f.exec, Registry: optype.Builtin(), DeadLetters: f.dlq,
		Now: time.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Accepted: dynamo.OutboxOperation, Tracer: tracer})
	if err != nil {
		t.Fatal(err)
	}
	const admitted = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	gen := &ids.Generator{Now: time.Now, Entropy: rand.Reader}
	svc := &admission.Service{Store: f.store, Registry: optype.Builtin(), Now: time.Now, NewID: gen.Operation}
	var opIDs []string
	for _, tp := range []string{admitted, ""} { // the second admitted with tracing off
		out, err := svc.Admit(context.Background(), admission.Request{Scope: admission.Scope{Tenant: "acme", Principal: "alice"},
			Key: "k-" + gen.Request(), MediaType: "application/json", Body: []byte(`{"type":"demo.task","input":{"target":"` + gen.Request() + `"}}`),
			Traceparent: tp})
		if err != nil {
			t.Fatal(err)
		}
		opIDs = append(opIDs, out.Record.OperationID)
	}

	ctx, invocation := tracer.Start(context.Background(), "longrun-dispatcher")
	resp, err := d.HandleStream(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		dynamotest.FactRecord(opIDs[0], "accepted", "1"), dynamotest.FactRecord(opIDs[1], "accepted", "2")}})
	invocation.End()
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v %v", resp, err)
	}

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == tracelink.AttrOperationID {
				spans[kv.Value.AsString()] = s
			}
		}
	}
	for i, id := range opIDs {
		span, ok := spans[id]
		if !ok || span.Name() != "dispatch" {
			t.Fatalf("no dispatch span for %s: %v", id, rec.Ended())
		}
		if span.Parent().SpanID() != invocation.SpanContext().SpanID() {
			t.Errorf("%s: the dispatch span is not the invocation's child", id)
		}
		var in dispatch.Input
		if err := json.Unmarshal(f.exec.Executions()[id].Input, &in); err != nil {
			t.Fatal(err)
		}
		sc, ok := tracelink.Parse(in.Traceparent)
		if !ok || sc.SpanID() != span.SpanContext().SpanID() || sc.TraceID() != span.SpanContext().TraceID() {
			t.Errorf("%s: the input's traceparent %q is not the dispatch span's (%s)", id, in.Traceparent, span.SpanContext().SpanID())
		}
		links := span.Links()
		switch {
		case i == 0 && (len(links) != 1 || links[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" ||
			links[0].SpanContext.SpanID().String() != "b7ad6b7169203331"):
			t.Errorf("the dispatch span links to %+v, not the admission's span", links)
		case i == 1 && len(links) != 0:
			t.Errorf("an operation admitted without a traceparent has links %+v", links)
		}
	}
}
